/**
 * A certificate authority made for one test run (openssl, Debian's package), and server
 * certificates it signs for real API names (api.openai.com): a client that trusts this CA,
 * and only a client that does, accepts the fake internet's servers under those names.
 */
import { execa } from 'execa';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface ServerCert {
  key: string;
  cert: string;
  /** The same two as files in the CA's directory (what a server started with paths takes). */
  keyFile: string;
  certFile: string;
}

export interface TestCa {
  /** PEM file of the CA certificate (what SSL_CERT_FILE / NODE_EXTRA_CA_CERTS / ca: take). */
  certFile: string;
  certPem: string;
  /** name -> PEM key and certificate of a server for that name. */
  servers: Record<string, ServerCert>;
  /** Signs one more server certificate, for all of `names` (its subjectAltName). */
  issue(names: readonly string[]): Promise<ServerCert>;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  await execa('openssl', args, { cwd, stdin: 'ignore' });
}

const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

async function signServer(dir: string, serial: number, names: readonly string[]): Promise<ServerCert> {
  const base = `server-${serial}`;
  const san = names.map((n) => `DNS:${n}`).join(',');
  await writeFile(
    path.join(dir, `${base}.ext`),
    `subjectAltName=${san}\nextendedKeyUsage=serverAuth\nbasicConstraints=critical,CA:FALSE\n`,
  );
  await openssl(['req', '-new', ...ec, '-keyout', `${base}.key`, '-out', `${base}.csr`, '-subj', `/CN=${names[0]}`], dir);
  await openssl(
    [
      'x509',
      '-req',
      '-in',
      `${base}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-set_serial',
      String(1000 + serial),
      '-days',
      '2',
      '-extfile',
      `${base}.ext`,
      '-out',
      `${base}.crt`,
    ],
    dir,
  );
  const keyFile = path.join(dir, `${base}.key`);
  const certFile = path.join(dir, `${base}.crt`);
  return { key: await readFile(keyFile, 'utf8'), cert: await readFile(certFile, 'utf8'), keyFile, certFile };
}

/** EC P-256 keys (fast to make); valid for two days; subjectAltName holds the name. */
export async function makeTestCa(dir: string, names: readonly string[]): Promise<TestCa> {
  await openssl(
    [
      'req',
      '-x509',
      ...ec,
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '2',
      '-subj',
      '/CN=agent-sandbox test CA (one run)',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  let serial = 0;
  const servers: TestCa['servers'] = {};
  for (const name of names) servers[name] = await signServer(dir, serial++, [name]);
  const certFile = path.join(dir, 'ca.crt');
  return { certFile, certPem: await readFile(certFile, 'utf8'), servers, issue: (more) => signServer(dir, serial++, more) };
}
