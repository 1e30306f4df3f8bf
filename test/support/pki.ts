/**
 * A local PKI made with the openssl CLI for the PDF trust tests: a root CA (`openssl ca` with its own
 * index, so `openssl ocsp -index` can answer for it), a signer, a TSA and an OCSP responder certificate;
 * a TSA served over loopback HTTP that pipes each request through `openssl ts -reply`, and an OCSP
 * responder (`openssl ocsp -port`). Everything lives in one temporary folder.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';

export interface Pki {
  dir: string;
  caPem: string;
  signerKeyPem: string;
  signerCertPem: string;
  /** PKCS#12 of the signer (key, certificate, CA), password "p12pass", openssl 3 defaults (AES-256, PBKDF2) */
  signerP12: Uint8Array;
  /** the same with the legacy algorithms (RC2/3DES, SHA-1 MAC) that older tools write */
  signerP12Legacy: Uint8Array;
  /** an EC (P-256) signer */
  ecKeyPem: string;
  ecCertPem: string;
  /** a self-signed certificate nobody trusts */
  strangerCertPem: string;
  strangerKeyPem: string;
  path(name: string): string;
  ocspUrl: string;
  tsaUrl: string;
  /** revoke a certificate in the CA's index (the OCSP responder reads the index at start: restart it) */
  revoke(certPem: string): Promise<void>;
  tsaRequests: number;
  ocspRequests(): number;
  close(): Promise<void>;
}

const ssl = (cwd: string, args: string[], input?: Uint8Array) =>
  execFileSync('openssl', args, { cwd, input, stdio: ['pipe', 'pipe', 'pipe'], maxBuffer: 64 << 20 });

const caConf = (dir: string, ocspUrl: string) => `
[ ca ]
default_ca = testca
[ testca ]
dir = ${dir}
database = ${dir}/index.txt
new_certs_dir = ${dir}/newcerts
serial = ${dir}/serial
certificate = ${dir}/ca.pem
private_key = ${dir}/ca.key
default_md = sha256
default_days = 365
policy = anything
copy_extensions = none
unique_subject = no
[ anything ]
commonName = supplied
organizationName = optional
countryName = optional
[ signer ]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature, nonRepudiation
authorityInfoAccess = OCSP;URI:${ocspUrl}
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[ tsa ]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature
extendedKeyUsage = critical, timeStamping
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[ ocsp ]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature
extendedKeyUsage = critical, OCSPSigning
[ v3_ca ]
basicConstraints = critical, CA:true
keyUsage = critical, keyCertSign, cRLSign, digitalSignature
subjectKeyIdentifier = hash
[ tsa_config ]
default_tsa = tsa_section
[ tsa_section ]
dir = ${dir}
serial = ${dir}/tsaserial
signer_cert = ${dir}/tsa.pem
certs = ${dir}/ca.pem
signer_key = ${dir}/tsa.key
signer_digest = sha256
default_policy = 1.2.3.4.1
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
`;

export async function makePki(): Promise<Pki> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-pki-'));
  const ocspPort = await freePort();
  const ocspUrl = `http://127.0.0.1:${ocspPort}`;
  execFileSync('mkdir', ['-p', join(dir, 'newcerts')]);
  writeFileSync(join(dir, 'index.txt'), '');
  writeFileSync(join(dir, 'serial'), '1000\n');
  writeFileSync(join(dir, 'tsaserial'), '01\n');
  writeFileSync(join(dir, 'ca.cnf'), caConf(dir, ocspUrl));
  const run = (args: string[], input?: Uint8Array) => ssl(dir, args, input);
  /** A self-signed RSA certificate `name`.pem with its key `name`.key. */
  const selfSigned = (name: string, days: number, subj: string, extra: string[]) =>
    run([
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
      '-days',
      String(days),
      '-subj',
      subj,
      ...extra,
    ]);
  selfSigned('ca', 3650, '/CN=svc Test Root CA/O=svc tests', ['-config', 'ca.cnf', '-extensions', 'v3_ca']);
  const issue = (name: string, subj: string, ext: string, keyArgs = ['-newkey', 'rsa:2048']) => {
    run(['req', ...keyArgs, '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subj]);
    run(['ca', '-batch', '-config', 'ca.cnf', '-extensions', ext, '-in', `${name}.csr`, '-out', `${name}.pem`, '-notext']);
  };
  issue('signer', '/CN=Jane Signer/O=svc tests', 'signer');
  issue('ec', '/CN=Eve Curve/O=svc tests', 'signer', ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256']);
  issue('tsa', '/CN=svc Test TSA/O=svc tests', 'tsa');
  issue('ocsp', '/CN=svc Test OCSP/O=svc tests', 'ocsp');
  selfSigned('stranger', 30, '/CN=Stranger/O=nobody', ['-addext', 'keyUsage=critical,digitalSignature']);
  // the signer as PKCS#12, once with today's ciphers and once with the legacy ones (RC2/3DES) older tools write
  const p12 = (out: string, extra: string[]) =>
    run([
      'pkcs12',
      '-export',
      ...extra,
      '-inkey',
      'signer.key',
      '-in',
      'signer.pem',
      '-certfile',
      'ca.pem',
      '-passout',
      'pass:p12pass',
      '-out',
      out,
    ]);
  p12('signer.p12', []);
  p12('signer-legacy.p12', ['-legacy']);
  const rd = (n: string) => readFileSync(join(dir, n), 'utf8');

  let ocsp: ChildProcess | undefined;
  let ocspCount = 0;
  const startOcsp = async () => {
    ocsp = spawn('openssl', [
      'ocsp',
      '-index',
      'index.txt',
      '-port',
      String(ocspPort),
      '-rsigner',
      'ocsp.pem',
      '-rkey',
      'ocsp.key',
      '-CA',
      'ca.pem',
      '-ignore_err',
      '-nmin',
      '5',
    ], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    ocsp.stderr!.on('data', (d: Buffer) => {
      ocspCount += (d.toString().match(/Received OCSP request|ocsp: waiting/gi) ?? []).length;
    });
    // wait until it accepts connections
    for (let i = 0; i < 100; i++) {
      const ok = await fetch(`${ocspUrl}/`, { method: 'GET' }).then(() => true, () => false);
      if (ok) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('openssl ocsp did not start');
  };
  const stopOcsp = async () => {
    if (!ocsp || ocsp.exitCode !== null) return;
    const p = new Promise((r) => ocsp!.once('exit', r));
    ocsp.kill();
    await p;
  };
  await startOcsp();

  const pki: Pki = {
    dir,
    caPem: rd('ca.pem'),
    signerKeyPem: rd('signer.key'),
    signerCertPem: rd('signer.pem'),
    signerP12: readFileSync(join(dir, 'signer.p12')),
    signerP12Legacy: readFileSync(join(dir, 'signer-legacy.p12')),
    ecKeyPem: rd('ec.key'),
    ecCertPem: rd('ec.pem'),
    strangerCertPem: rd('stranger.pem'),
    strangerKeyPem: rd('stranger.key'),
    path: (n) => join(dir, n),
    ocspUrl,
    tsaUrl: '',
    tsaRequests: 0,
    ocspRequests: () => ocspCount,
    async revoke(certPem) {
      writeFileSync(join(dir, 'revoke.pem'), certPem);
      run(['ca', '-config', 'ca.cnf', '-revoke', 'revoke.pem']);
      await stopOcsp();
      await startOcsp();
    },
    async close() {
      await stopOcsp();
      await new Promise((r) => tsa.close(r));
    },
  };

  // the TSA: POST application/timestamp-query → application/timestamp-reply from `openssl ts -reply`
  const tsa: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        pki.tsaRequests++;
        const q = join(dir, `tsq-${pki.tsaRequests}.tsq`);
        writeFileSync(q, Buffer.concat(chunks));
        const reply = run(['ts', '-reply', '-config', 'ca.cnf', '-section', 'tsa_section', '-queryfile', q]);
        res.writeHead(200, { 'content-type': 'application/timestamp-reply' }).end(reply);
      } catch (e) {
        res.writeHead(500).end(String(e));
      }
    });
  });
  await new Promise<void>((r) => tsa.listen(0, '127.0.0.1', r));
  pki.tsaUrl = `http://127.0.0.1:${(tsa.address() as { port: number }).port}/tsa`;
  return pki;
}
