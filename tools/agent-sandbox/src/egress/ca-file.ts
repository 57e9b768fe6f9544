/**
 * --ca-file: certificates the session's agent trusts besides the image's own roots, for a TLS
 * proxy that re-signs (a corporate one) or a test CA. The file is read once, before anything is
 * staged, and must hold PEM certificates and nothing secret (a private key is refused); those
 * checked bytes, and only the certificate blocks, are copied under the session's stage dir and
 * mounted read-only at /run/sandbox-ca/ca.pem. The agent gets, by name:
 *
 * - NODE_EXTRA_CA_CERTS (Claude Code, and any node program): added to the built-in roots;
 * - CODEX_CA_CERTIFICATE (Codex CLI): added to the system roots.
 *
 * Not SSL_CERT_FILE: measured with the pinned CLIs, it REPLACES the system bundle for both (and
 * for OpenSSL programs such as git and curl), so a session given only a proxy's CA could no
 * longer verify anything else. Both variables above were measured additive (tools/agent-sandbox/README.md).
 */
import { X509Certificate } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, realpath, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';

/** Inside the container. */
export const caMount = '/run/sandbox-ca/ca.pem';
/** More than any system bundle (Debian's is about 220 KB). */
export const caFileMaxBytes = 1024 * 1024;

export interface CaCertificate {
  subject: string;
  sha256: string;
  notAfter: string;
}

export interface CaTrust {
  /** The file given, after realpath. */
  file: string;
  certificates: CaCertificate[];
  /** The certificate blocks as read, one PEM text (what the container gets). */
  pem: string;
  /** Where the copy is staged on the host (under the session's stage dir, removed with it). */
  staged: string;
}

const block = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([\s\S]*?)-----END \1-----/g;

function errno(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? 'error';
}

/** Reads at most caFileMaxBytes of a regular file (O_NONBLOCK: a FIFO never blocks the launch). */
async function readRegular(file: string): Promise<{ real: string; text: string }> {
  let real: string;
  try {
    real = await realpath(file);
  } catch (err) {
    throw new ToolError('unsafePath', 'ca-file-missing', `--ca-file ${file}: cannot be resolved (${errno(err)})`);
  }
  let handle;
  try {
    handle = await open(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (err) {
    throw new ToolError('unsafePath', 'ca-file-missing', `--ca-file ${file}: cannot be opened (${errno(err)})`);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new ToolError('unsafePath', 'ca-file-not-regular', `--ca-file ${file}: expected a regular file`);
    if (info.size > caFileMaxBytes)
      throw new ToolError('usage', 'bad-flag', `--ca-file ${file}: ${info.size} bytes, more than ${caFileMaxBytes}`);
    return { real, text: (await handle.readFile()).toString('utf8') };
  } finally {
    await handle.close();
  }
}

/** The certificates of a PEM text; refuses anything that is not only certificates (80). */
export function parseCertificates(text: string, label: string): { certificates: CaCertificate[]; pem: string } {
  const certificates: CaCertificate[] = [];
  const blocks: string[] = [];
  for (const m of text.matchAll(block)) {
    if (m[1] !== 'CERTIFICATE') {
      // Never copy a key (or anything else) into the container under the name of a CA.
      throw new ToolError('usage', 'bad-flag', `${label}: holds a ${m[1]} block; expected PEM certificates only`);
    }
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(m[0]);
    } catch {
      throw new ToolError('usage', 'bad-flag', `${label}: certificate ${certificates.length + 1} does not parse`);
    }
    certificates.push({
      subject: cert.subject.replace(/\n/g, ', '),
      sha256: cert.fingerprint256,
      notAfter: new Date(cert.validTo).toISOString(),
    });
    blocks.push(`${m[0]}\n`);
  }
  if (/PRIVATE KEY/.test(text)) throw new ToolError('usage', 'bad-flag', `${label}: holds a private key; expected PEM certificates only`);
  if (certificates.length === 0)
    throw new ToolError('usage', 'bad-flag', `${label}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it`);
  return { certificates, pem: blocks.join('') };
}

/** Reads and checks --ca-file: 86 when it is missing or not a regular file, 80 when it is not PEM certificates. */
export async function readCaFile(file: string, stageDir: string): Promise<CaTrust> {
  const { real, text } = await readRegular(file);
  return { file: real, ...parseCertificates(text, `--ca-file ${file}`), staged: path.join(stageDir, 'ca', 'ca.pem') };
}

/** Writes the checked certificates to the staged copy: a fresh file (never through a planted link), renamed over. */
export async function stageCaFile(trust: CaTrust): Promise<void> {
  await mkdir(path.dirname(trust.staged), { recursive: true, mode: 0o700 });
  const temp = `${trust.staged}.tmp-${process.pid}-${Date.now()}`;
  const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o444);
  try {
    await handle.writeFile(trust.pem);
    await handle.chmod(0o444);
  } catch (err) {
    await handle.close();
    await rm(temp, { force: true });
    throw err;
  }
  await handle.close();
  await rename(temp, trust.staged);
}

/** The variables that point the agent's CLIs at the mounted copy (added to their roots, see above). */
export function caEnv(trust: CaTrust | undefined): Record<string, string> {
  return trust ? { NODE_EXTRA_CA_CERTS: caMount, CODEX_CA_CERTIFICATE: caMount } : {};
}

/** What the plan and the ledger say about it (no PEM text). */
export function caRecord(trust: CaTrust): { file: string; certificates: CaCertificate[] } {
  return { file: trust.file, certificates: trust.certificates };
}
