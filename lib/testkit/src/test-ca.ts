/**
 * A certificate authority made for one test run (openssl, Debian's package), and server
 * certificates it signs for real API names (api.openai.com): a client that trusts this CA,
 * and only a client that does, accepts the fake internet's servers under those names.
 */
import { execa } from 'execa';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface TestCa {
  /** PEM file of the CA certificate (what SSL_CERT_FILE / NODE_EXTRA_CA_CERTS / ca: take). */
  certFile: string;
  certPem: string;
  /** name -> PEM key and certificate of a server for that name. */
  servers: Record<string, { key: string; cert: string }>;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  await execa('openssl', args, { cwd, stdin: 'ignore' });
}

/** EC P-256 keys (fast to make); valid for two days; subjectAltName holds the name. */
export async function makeTestCa(dir: string, names: readonly string[]): Promise<TestCa> {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await openssl(
    ['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=agent-sandbox test CA (one run)',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
    dir,
  );
  const servers: TestCa['servers'] = {};
  for (const [i, name] of names.entries()) {
    const base = `server-${i}`;
    await writeFile(path.join(dir, `${base}.ext`), `subjectAltName=DNS:${name}\nextendedKeyUsage=serverAuth\nbasicConstraints=critical,CA:FALSE\n`);
    await openssl(['req', '-new', ...ec, '-keyout', `${base}.key`, '-out', `${base}.csr`, '-subj', `/CN=${name}`], dir);
    await openssl(
      ['x509', '-req', '-in', `${base}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', String(1000 + i), '-days', '2',
        '-extfile', `${base}.ext`, '-out', `${base}.crt`],
      dir,
    );
    servers[name] = { key: await readFile(path.join(dir, `${base}.key`), 'utf8'), cert: await readFile(path.join(dir, `${base}.crt`), 'utf8') };
  }
  const certFile = path.join(dir, 'ca.crt');
  return { certFile, certPem: await readFile(certFile, 'utf8'), servers };
}
