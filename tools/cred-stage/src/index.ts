export {
  credentialTable,
  findRow,
  describeTable,
  stagingPath,
  secretsRoot,
  defaultContainerHome,
  type CredentialRow,
} from './credential-table.js';
export { planCredentials, resolveCredential, defaultSessionSeconds, type PlanDeps } from './plan.js';
export { stageCredentials, unstageCredentials, agentUid, agentGid } from './stage.js';
export { installCredentials, type InstallOptions } from './install.js';
export { jwtExpiryMs, codexExpiry, claudeExpiry, cursorExpiry, ExpiryUnreadable } from './expiry.js';
export { accountsConfigPath } from './accounts.js';
export { tool } from './cli.js';
