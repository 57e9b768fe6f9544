export { startSessionBroker } from './broker/start-session-broker.js';
export { systemResolver, resolverEnvironment, type SessionBroker } from './broker/session-broker.js';
export { startBroker, systemInterfaces, defaultMaxConnections, type Broker, type BrokerDeps } from './broker/broker.js';
export { openAttemptLog, AttemptLog, defaultLogLimits, type AttemptWriter, type AttemptLogLimits } from './broker/attempt-log.js';
export { SummaryCounter, defaultSummaryLimits, type SummaryLimits } from './broker/summary-counter.js';
export { TokenBucket, defaultRateLimit, type RateLimit } from './broker/rate-limit.js';
export { makeAdmission, type Admission, type AdmissionOptions } from './broker/admission.js';
export {
  parsePolicy,
  parseEntry,
  parseTarget,
  parseHost,
  decideTarget,
  hostText,
  defaultPort,
  type Policy,
  type Target,
  type Host,
  type NameDecision,
} from './rules/allowlist.js';
export { refuseAddress, type AddressRule, type HostInterfaceAddress } from './rules/address-policy.js';
export { decide, type Resolver, type Decision } from './rules/decide.js';
export { parseHead, maxHeadBytes, type ParsedHead } from './rules/request-head.js';
export { parseIp, type IpLiteral } from './rules/ip.js';
export { runtimeEgressTable, egressAllowlist, type RuntimeEgress } from './rules/runtime-allowlists.js';
export { startRelay, type Relay, type RelayOptions } from './relay/relay.js';
export { socatRelayPrefix, socatRelayScript } from './relay/socat-relay.js';
export { parseRelayArgs, proxyEnvironment, defaultRelayPort, relayUsage } from './relay/relay-cli.js';
export { tool } from './cli.js';
export { publishRelayPath } from './publish-relay-location.js';
