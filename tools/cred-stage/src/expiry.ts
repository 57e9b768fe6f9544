/**
 * Expiry metadata, and nothing else, from a parsed credential document. Readers
 * return an epoch in ms, or null when the credential has no expiry (an API key).
 * They never return or throw anything derived from a token's value: a failure is
 * an ExpiryUnreadable naming the field that was missing or malformed.
 */

/** A credential whose expiry cannot be read; `reason` names a field, never a value. */
export class ExpiryUnreadable extends Error {}

export type ExpiryReader = (doc: Record<string, unknown>) => number | null;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The `exp` claim (seconds) of a JWT's payload, as ms; undefined when the value
 * is not a JWT with a numeric exp. Only the payload's exp is looked at.
 */
export function jwtExpiryMs(token: unknown): number | undefined {
  if (typeof token !== 'string') return undefined;
  const parts = token.split('.');
  if (parts.length !== 3 || !parts[1]) return undefined;
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  const exp = isRecord(payload) ? payload['exp'] : undefined;
  return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
}

/** codex auth.json: API-key form has no expiry; ChatGPT form: the access token's JWT exp. */
export const codexExpiry: ExpiryReader = (doc) => {
  const tokens = doc['tokens'];
  if (!isRecord(tokens)) {
    if (doc['auth_mode'] === 'apikey' || typeof doc['OPENAI_API_KEY'] === 'string') return null;
    throw new ExpiryUnreadable('neither "tokens" (ChatGPT login) nor "OPENAI_API_KEY" (API key) is present');
  }
  const exp = jwtExpiryMs(tokens['access_token']);
  if (exp === undefined) throw new ExpiryUnreadable('"tokens.access_token" is not a JWT with an "exp" claim');
  return exp;
};

/** claude .credentials.json: claudeAiOauth.expiresAt, ms since the epoch. */
export const claudeExpiry: ExpiryReader = (doc) => {
  const oauth = doc['claudeAiOauth'];
  if (!isRecord(oauth)) throw new ExpiryUnreadable('"claudeAiOauth" is missing');
  const at = oauth['expiresAt'];
  if (typeof at !== 'number' || !Number.isFinite(at)) throw new ExpiryUnreadable('"claudeAiOauth.expiresAt" is not a number');
  return at;
};

const cursorExpiryFields = ['expiresAt', 'expires_at', 'expiry'];
const cursorTokenFields = ['accessToken', 'access_token', 'token'];

/**
 * cursor auth.json: an explicit expiry field (ms, or s when it looks like seconds,
 * or an ISO string), else the exp of an access-token JWT, else no expiry check.
 */
export const cursorExpiry: ExpiryReader = (doc) => {
  for (const field of cursorExpiryFields) {
    const value = doc[field];
    if (typeof value === 'number' && Number.isFinite(value)) return value < 1e12 ? value * 1000 : value;
    if (typeof value === 'string' && !Number.isNaN(Date.parse(value))) return Date.parse(value);
  }
  for (const field of cursorTokenFields) {
    const exp = jwtExpiryMs(doc[field]);
    if (exp !== undefined) return exp;
  }
  return null;
};
