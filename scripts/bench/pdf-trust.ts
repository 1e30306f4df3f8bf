/**
 * PDF trust benchmark: sign and verify a 100-page PDF.
 *   node --import tsx scripts/bench/pdf-trust.ts [runs]
 * Sign: svc's pdfSign (parse, incremental update, CAdES signature) vs `openssl cms -sign` over the same
 * signed bytes (the CMS step alone, plus process start). Verify: svc's pdfVerify vs poppler's pdfsig
 * (trust through an NSS database, no OCSP). Interleaved runs, medians; table into BENCHMARKS.md.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { makePki } from '../../test/support/pki.ts';
import { makePdf } from '../../test/services/pdf/helpers.ts';
import { identityFromPem, parseCertificates } from '../../src/services/pdf/trust/identity.ts';
import { pdfSign } from '../../src/services/pdf/trust/pdf-sign.ts';
import { pdfVerify } from '../../src/services/pdf/trust/pdf-verify.ts';
import { trustNet } from '../../src/services/pdf/trust/net.ts';
import { readSignatures, signedBytes } from '../../src/services/pdf/trust/signatures.ts';
import { PDFDocument } from '@cantoo/pdf-lib';
import { machineNote, median, medianTime } from './helpers.ts';
import { writeSection } from './write-benchmarks.mjs';

const runs = Number(process.argv[2] ?? 7);
const pki = await makePki();
try {
  const doc = await makePdf(100, {
    lines: (p) => Array.from({ length: 20 }, (_, i) => `Page ${p} line ${i}: the quick brown fox jumps over the lazy dog`),
  });
  const net = trustNet([]);
  const id = await identityFromPem(pki.signerKeyPem, pki.signerCertPem + pki.caPem);
  const trusted = parseCertificates(pki.caPem, 'ca');
  const signed = (await pdfSign(doc, { identity: id, net })).pdf;
  const sig = readSignatures(await PDFDocument.load(signed, { updateMetadata: false }))[0]!;
  writeFileSync(pki.path('signed-bytes.bin'), signedBytes(signed, sig.byteRange));
  writeFileSync(pki.path('signed.pdf'), signed);
  execFileSync('mkdir', ['-p', pki.path('nss')]);
  execFileSync('certutil', ['-N', '-d', `sql:${pki.path('nss')}`, '--empty-password']);
  execFileSync('certutil', ['-A', '-d', `sql:${pki.path('nss')}`, '-n', 'ca', '-t', 'CT,C,C', '-i', pki.path('ca.pem')]);
  const v = await pdfVerify(signed, { trusted, net });
  if (v.verdict !== 'valid') throw new Error(`verify says ${v.verdict}`);
  const t = { sign: [] as number[], opensslSign: [] as number[], verify: [] as number[], pdfsig: [] as number[] };
  for (let i = 0; i < runs; i++) {
    t.sign.push(await medianTime(() => pdfSign(doc, { identity: id, net }), 1));
    t.opensslSign.push(
      await medianTime(() =>
        execFileSync('openssl', [
          'cms',
          '-sign',
          '-binary',
          '-in',
          pki.path('signed-bytes.bin'),
          '-signer',
          pki.path('signer.pem'),
          '-inkey',
          pki.path('signer.key'),
          '-certfile',
          pki.path('ca.pem'),
          '-outform',
          'DER',
          '-out',
          pki.path('out.p7s'),
          '-md',
          'sha256',
          '-nosmimecap',
        ]), 1),
    );
    t.verify.push(await medianTime(() => pdfVerify(signed, { trusted, net }), 1));
    t.pdfsig.push(
      await medianTime(() => execFileSync('pdfsig', ['-nssdir', `sql:${pki.path('nss')}`, '-no-ocsp', pki.path('signed.pdf')]), 1),
    );
  }
  const m = { sign: median(t.sign), opensslSign: median(t.opensslSign), verify: median(t.verify), pdfsig: median(t.pdfsig) };
  const r = (x: number) => x.toFixed(1);
  const body = `
\`node --import tsx scripts/bench/pdf-trust.ts ${runs}\`: a 100-page text PDF (${
    (doc.length / 1024).toFixed(0)
  } KiB), RSA-2048 signer, PAdES B-B, ${runs} interleaved runs, medians; ${machineNote()}.

| operation | svc (ms) | peer | peer (ms) | svc / peer |
| --- | ---: | --- | ---: | ---: |
| sign (parse + incremental update + CMS) | ${r(m.sign)} | \`openssl cms -sign\` over the same signed bytes (CMS only, one process) | ${
    r(m.opensslSign)
  } | ${(m.sign / m.opensslSign).toFixed(2)} |
| verify (integrity, chain, coverage) | ${r(m.verify)} | \`pdfsig -no-ocsp\` with the CA in an NSS database (one process) | ${
    r(m.pdfsig)
  } | ${(m.verify / m.pdfsig).toFixed(2)} |

The openssl row does not parse or write the PDF; it bounds what the CMS step costs in a native tool.
`;
  console.log(body);
  writeSection('PDF trust: sign and verify a 100-page PDF', body);
} finally {
  await pki.close();
}
