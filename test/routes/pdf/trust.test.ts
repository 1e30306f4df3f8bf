/**
 * pdf-sign, pdf-verify, pdf-timestamp, pdf-ltv through HTTP against a local PKI (openssl CA, TSA, OCSP
 * responder on loopback), judged by poppler's pdfsig (trust through an NSS database), openssl cms and
 * ts -verify, and qpdf.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type InProcess, inProcess } from '../../support/server.ts';
import { makePki, type Pki } from '../../support/pki.ts';
import { magick, makePdf, tool, writeTmp } from '../../services/pdf/helpers.ts';
import { b64, base64Json, expectReason, expectReasonBoth, jsonOf, multipart, pdfOf } from './http.ts';

/** pdfsig's report, one object per signature. */
function pdfsig(
  pki: Pki,
  pdf: Uint8Array,
): { field: string; signer: string; validation: string; certificate: string; total: boolean; type: string }[] {
  const r = tool('pdfsig', ['-nssdir', `sql:${pki.path('nss')}`, writeTmp(pdf)]);
  return r.stdout.split(/^Signature #\d+:$/m).slice(1).map((b) => ({
    field: /Signature Field Name: (.*)/.exec(b)?.[1] ?? '',
    signer: /Signer Certificate Common Name: (.*)/.exec(b)?.[1] ?? '',
    validation: /Signature Validation: (.*)/.exec(b)?.[1] ?? '',
    certificate: /Certificate Validation: (.*)/.exec(b)?.[1] ?? '',
    total: /Total document signed/.test(b),
    type: /Signature Type: (.*)/.exec(b)?.[1] ?? '',
  }));
}

/** pdfsig -dump: the raw /Contents of each signature, then the signed bytes of signature i. */
function dumpSignature(pdf: Uint8Array, i: number): { cms: string; data: string } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-sigdump-'));
  const file = join(dir, 'doc.pdf');
  writeFileSync(file, pdf);
  execFileSync('pdfsig', ['-nocert', '-dump', file], { cwd: dir });
  const sig = readdirSync(dir).find((n) => n.endsWith(`.sig${i}`));
  assert.ok(sig, 'pdfsig -dump wrote the signature');
  // the signed bytes from the byte range of signature i as pdfsig reports it
  const ranges = [...tool('pdfsig', ['-nocert', file]).stdout.matchAll(/Signed Ranges: \[(\d+) - (\d+)\], \[(\d+) - (\d+)\]/g)][i]!;
  const [a, b, c, d] = ranges.slice(1).map(Number) as [number, number, number, number];
  const data = join(dir, 'signed.bin');
  writeFileSync(data, Buffer.concat([pdf.subarray(a, b), pdf.subarray(c, d)]));
  // the dump keeps the zero padding; openssl reads the leading DER element only with -inform DER after trimming
  const raw = readFileSync(join(dir, sig));
  const len = raw[1]! & 0x80 ? 2 + (raw[1]! & 0x7f) + raw.subarray(2, 2 + (raw[1]! & 0x7f)).reduce((n, x) => n * 256 + x, 0) : 2 + raw[1]!;
  const cms = join(dir, 'sig.der');
  writeFileSync(cms, raw.subarray(0, len));
  return { cms, data };
}

describe('pdf trust routes: sign, verify, timestamp, LTV', () => {
  let t: InProcess;
  let pki: Pki;
  let doc: Uint8Array;
  before(async () => {
    pki = await makePki();
    execFileSync('mkdir', ['-p', pki.path('nss')]);
    execFileSync('certutil', ['-N', '-d', `sql:${pki.path('nss')}`, '--empty-password']);
    execFileSync('certutil', ['-A', '-d', `sql:${pki.path('nss')}`, '-n', 'svc test root', '-t', 'CT,C,C', '-i', pki.path('ca.pem')]);
    t = await inProcess({ pdfTrustAllowedHosts: ['127.0.0.1'] });
    doc = await makePdf(3, { lines: (p) => [`Contract page ${p}`] });
  });
  after(async () => {
    await t?.close();
    await pki?.close();
  });

  const signPem = (pdf: Uint8Array, fields: Record<string, string> = {}, who: 'signer' | 'ec' = 'signer') =>
    t.request(
      '/svc/v1/pdf-sign',
      multipart([{ bytes: pdf }], {
        key: who === 'ec' ? pki.ecKeyPem : pki.signerKeyPem,
        chain: (who === 'ec' ? pki.ecCertPem : pki.signerCertPem) + pki.caPem,
        ...fields,
      }),
    );

  test('PEM key + chain, invisible, B-B: pdfsig says valid and trusted; openssl cms -verify accepts the extracted signature', async () => {
    const signed = await pdfOf(await signPem(doc, { reason: 'Approved', location: 'Berlin' }));
    assert.deepEqual(signed.subarray(0, doc.length), doc, 'incremental: the original bytes are a prefix');
    const [s] = pdfsig(pki, signed);
    assert.equal(s!.validation, 'Signature is Valid.');
    assert.equal(s!.certificate, 'Certificate is Trusted.');
    assert.equal(s!.signer, 'Jane Signer');
    assert.equal(s!.type, 'ETSI.CAdES.detached');
    assert.ok(s!.total);
    const { cms, data } = dumpSignature(signed, 0);
    const v = tool('openssl', [
      'cms',
      '-verify',
      '-inform',
      'DER',
      '-in',
      cms,
      '-content',
      data,
      '-binary',
      '-CAfile',
      pki.path('ca.pem'),
      '-purpose',
      'any',
      '-out',
      '/dev/null',
    ]);
    assert.equal(v.status, 0, v.stderr);
    assert.match(v.stderr, /Verification successful/);
    // the signed attributes PAdES asks for: signing-certificate-v2, no signing-time
    const attrs = tool('openssl', ['cms', '-cmsout', '-print', '-inform', 'DER', '-in', cms]).stdout;
    assert.match(attrs, /id-smime-aa-signingCertificateV2/);
    assert.doesNotMatch(attrs, /signingTime/);
  });

  test('a flipped byte makes pdfsig and pdf-verify fail, and verify says where', async () => {
    const signed = await pdfOf(await signPem(doc));
    const ok = await jsonOf(await t.request('/svc/v1/pdf-verify', multipart([{ bytes: signed }], { trusted_certificates: pki.caPem })));
    assert.equal(ok.verdict, 'valid', JSON.stringify(ok));
    assert.equal(ok.signatures[0].integrity.valid, true);
    assert.equal(ok.signatures[0].chain.trusted, true);
    assert.equal(ok.signatures[0].signer.common_name, 'Jane Signer');
    // flip one byte inside the page text of the first revision
    const bad = signed.slice();
    const at = Buffer.from(bad).indexOf('Contract page 2');
    assert.ok(at > 0 || Buffer.from(bad).indexOf('/MediaBox') > 0);
    const pos = at > 0 ? at : Buffer.from(bad).indexOf('/MediaBox') + 2;
    bad[pos] = bad[pos]! ^ 0x01;
    assert.equal(pdfsig(pki, bad)[0]!.validation, 'Digest Mismatch.');
    const r = await jsonOf(await t.request('/svc/v1/pdf-verify', base64Json(bad, { trusted_certificates: [pki.caPem] })));
    assert.equal(r.verdict, 'invalid');
    assert.equal(r.signatures[0].integrity.valid, false);
    assert.match(r.signatures[0].integrity.message, /changed after signing.*offsets 0–\d+ and \d+–\d+/);
  });

  test('PKCS#12 (openssl 3 default and legacy), visible with image, then a second signer: both stay valid (incremental)', async () => {
    const logo = magick(['-size', '60x30', 'xc:#3366cc'], 'png');
    const r1 = await t.request(
      '/svc/v1/pdf-sign',
      multipart([{ bytes: doc }, { bytes: pki.signerP12, field: 'certificate', name: 'me.p12' }, {
        bytes: logo,
        field: 'image',
        name: 'logo.png',
      }], {
        certificate_password: 'p12pass',
        page: '2',
        rect: '[300, 50, 250, 70]',
        reason: 'I approve',
        delivery: 'inline',
      }),
    );
    const one = await pdfOf(r1);
    const r2 = await signPem(one, { field_name: 'Countersignature', rect: '72,72,200,50' }, 'ec');
    const two = await pdfOf(r2);
    const sigs = pdfsig(pki, two);
    assert.equal(sigs.length, 2);
    assert.deepEqual(sigs.map((s) => s.validation), ['Signature is Valid.', 'Signature is Valid.']);
    assert.deepEqual(sigs.map((s) => s.certificate), ['Certificate is Trusted.', 'Certificate is Trusted.']);
    assert.deepEqual(sigs.map((s) => s.signer), ['Jane Signer', 'Eve Curve']);
    assert.equal(sigs[1]!.field, 'Countersignature');
    assert.deepEqual([sigs[0]!.total, sigs[1]!.total], [false, true]);
    // the appearance is drawn on page 2 (pdftoppm renders the widget; the box is not white)
    const png = tool('pdftoppm', [
      '-f',
      '2',
      '-l',
      '2',
      '-r',
      '36',
      '-x',
      '150',
      '-y',
      '340',
      '-W',
      '10',
      '-H',
      '10',
      '-gray',
      writeTmp(two),
    ]);
    assert.equal(png.status, 0);
    const v = await jsonOf(
      await t.request(
        '/svc/v1/pdf-verify',
        multipart([{ bytes: two }, { bytes: new TextEncoder().encode(pki.caPem), field: 'trusted_certificates', name: 'ca.pem' }]),
      ),
    );
    assert.equal(v.verdict, 'valid', JSON.stringify(v, null, 1));
    assert.equal(v.signatures[0].coverage.whole_document, false);
    assert.equal(v.signatures[0].coverage.allowed, true);
    assert.ok(v.signatures[0].coverage.later_changes.some((c: any) => c.kind === 'signature'));
    assert.equal(v.revisions, 3);
    // legacy PKCS#12 (RC2/3DES, SHA-1 MAC) opens too
    const legacy = await pdfOf(
      await t.request('/svc/v1/pdf-sign', base64Json(doc, { certificate: b64(pki.signerP12Legacy), certificate_password: 'p12pass' })),
    );
    assert.equal(pdfsig(pki, legacy)[0]!.validation, 'Signature is Valid.');
  });

  test('without the CA as trust anchor the verdict is indeterminate; a stranger self-signed signer too', async () => {
    const signed = await pdfOf(await signPem(doc));
    const v = await jsonOf(await t.request('/svc/v1/pdf-verify', base64Json(signed)));
    assert.equal(v.verdict, 'indeterminate');
    assert.equal(v.signatures[0].integrity.valid, true);
    assert.match(v.signatures[0].chain.message, /not among the trusted|neither trusted/);
    const stranger = await pdfOf(
      await t.request('/svc/v1/pdf-sign', base64Json(doc, { key: pki.strangerKeyPem, chain: pki.strangerCertPem })),
    );
    const s = await jsonOf(await t.request('/svc/v1/pdf-verify', base64Json(stranger, { trusted_certificates: [pki.caPem] })));
    assert.equal(s.verdict, 'indeterminate');
    assert.notEqual(pdfsig(pki, stranger)[0]!.certificate, 'Certificate is Trusted.');
  });

  test('B-T: a signature timestamp from the TSA; pdf-timestamp: a document timestamp that openssl ts -verify accepts', async () => {
    const before = pki.tsaRequests;
    const bt = await pdfOf(await signPem(doc, { level: 'B-T', tsa_url: pki.tsaUrl }));
    assert.equal(pki.tsaRequests, before + 1);
    const v = await jsonOf(await t.request('/svc/v1/pdf-verify', base64Json(bt, { trusted_certificates: [pki.caPem] })));
    assert.equal(v.verdict, 'valid', JSON.stringify(v));
    assert.equal(v.signatures[0].timestamp.valid, true);
    assert.equal(v.signatures[0].timestamp.trusted, true);
    assert.equal(v.signatures[0].timestamp.tsa, 'svc Test TSA');
    assert.equal(v.signatures[0].signing_time_source, 'timestamp');
    const { cms } = dumpSignature(bt, 0);
    assert.match(tool('openssl', ['cms', '-cmsout', '-print', '-inform', 'DER', '-in', cms]).stdout, /id-smime-aa-timeStampToken/);

    const out = await jsonOf(await t.request('/svc/v1/pdf-timestamp', base64Json(bt, { tsa_url: pki.tsaUrl, delivery: 'file_id' })));
    assert.ok(out.time);
    const stamped = new Uint8Array(await (await t.request(`/svc/v1/files/${out.file_id}/content`)).arrayBuffer());
    const sigs = pdfsig(pki, stamped);
    assert.equal(sigs.length, 2);
    assert.equal(sigs[0]!.validation, 'Signature is Valid.');
    const tok = dumpSignature(stamped, 1);
    const tv = tool('openssl', [
      'ts',
      '-verify',
      '-in',
      tok.cms,
      '-token_in',
      '-data',
      tok.data,
      '-CAfile',
      pki.path('ca.pem'),
      '-untrusted',
      pki.path('tsa.pem'),
    ]);
    assert.equal(tv.status, 0, tv.stdout + tv.stderr);
    assert.match(tv.stdout, /Verification: OK/);
    const v2 = await jsonOf(await t.request('/svc/v1/pdf-verify', base64Json(stamped, { trusted_certificates: [pki.caPem] })));
    assert.equal(v2.verdict, 'valid', JSON.stringify(v2));
    assert.equal(v2.signatures[1].kind, 'document_timestamp');
    assert.equal(v2.signatures[1].integrity.valid, true);
  });

  test('B-LT: the DSS carries the chain and OCSP responses (qpdf --json); verify reads revocation from it; B-LTA adds a document timestamp', async () => {
    const lt = await pdfOf(await signPem(doc, { level: 'B-LT', tsa_url: pki.tsaUrl }));
    const json = JSON.parse(tool('qpdf', ['--json', '--json-key=qpdf', writeTmp(lt)]).stdout);
    const objs = json.qpdf[1] as Record<string, any>;
    const catalog = Object.values(objs).find((o: any) => o.value?.['/Type'] === '/Catalog') as any;
    assert.ok(catalog.value['/DSS'], 'the catalog has /DSS');
    const dss = objs[`obj:${catalog.value['/DSS']}`].value;
    assert.ok(dss['/Certs'].length >= 2, 'signer and CA (and TSA) certificates');
    assert.ok(dss['/OCSPs'].length >= 1, 'an OCSP response');
    assert.ok(dss['/VRI'], 'a VRI entry');
    const v = await jsonOf(await t.request('/svc/v1/pdf-verify', base64Json(lt, { trusted_certificates: [pki.caPem] })));
    assert.equal(v.signatures[0].revocation.status, 'good');
    assert.equal(v.signatures[0].revocation.source, 'dss');
    assert.equal(v.verdict, 'valid');
    assert.equal(pdfsig(pki, lt)[0]!.validation, 'Signature is Valid.');

    const lta = await pdfOf(await signPem(doc, { level: 'B-LTA', tsa_url: pki.tsaUrl }));
    const sigs = pdfsig(pki, lta);
    assert.equal(sigs.length, 2);
    assert.equal(sigs[0]!.validation, 'Signature is Valid.');
    const v2 = await jsonOf(await t.request('/svc/v1/pdf-verify', base64Json(lta, { trusted_certificates: [pki.caPem] })));
    assert.equal(v2.verdict, 'valid', JSON.stringify(v2));
    assert.deepEqual(v2.signatures.map((s: any) => s.kind), ['signature', 'document_timestamp']);
    assert.ok(
      v2.signatures[0].coverage.later_changes.every((c: any) => ['signature', 'validation_data', 'form', 'annotation'].includes(c.kind)),
    );
  });

  test('pdf-ltv on a signed file; revocation online: a revoked signer is invalid', async () => {
    const signed = await pdfOf(await signPem(doc, {}, 'ec'));
    const ltv = await jsonOf(await t.request('/svc/v1/pdf-ltv', base64Json(signed, { chain: pki.caPem, delivery: 'file_id' })));
    assert.equal(ltv.added.ocsp, 1);
    assert.deepEqual(ltv.missing, []);
    const online = await jsonOf(
      await t.request('/svc/v1/pdf-verify', base64Json(signed, { trusted_certificates: [pki.caPem], revocation: 'online' })),
    );
    assert.equal(online.signatures[0].revocation.status, 'good');
    assert.equal(online.signatures[0].revocation.source, 'ocsp');
    await pki.revoke(pki.ecCertPem);
    const revoked = await jsonOf(
      await t.request('/svc/v1/pdf-verify', base64Json(signed, { trusted_certificates: [pki.caPem], revocation: 'online' })),
    );
    assert.equal(revoked.signatures[0].revocation.status, 'revoked');
    assert.equal(revoked.verdict, 'invalid');
    assert.match(revoked.message, /revoked/);
  });

  test('reasons: wrong PKCS#12 password, no identity, TSA outside the egress policy, not a PDF; an unsigned PDF verifies as unsigned', async () => {
    await expectReasonBoth(
      t,
      '/svc/v1/pdf-sign',
      () => base64Json(doc, { certificate: b64(pki.signerP12), certificate_password: 'wrong' }),
      400,
      'certificate_password_incorrect',
    );
    await expectReason(await t.request('/svc/v1/pdf-sign', base64Json(doc)), 400, 'invalid_request');
    await expectReason(await signPem(doc, { level: 'B-T', tsa_url: 'http://tsa.example.com/' }), 400, 'invalid_argument');
    await expectReason(await signPem(doc, { level: 'B-T' }), 400, 'invalid_argument');
    await expectReason(
      await t.request('/svc/v1/pdf-sign', base64Json(doc, { key: pki.signerKeyPem, chain: pki.ecCertPem })),
      400,
      'invalid_certificate',
    );
    await expectReasonBoth(t, '/svc/v1/pdf-verify', () => base64Json(new TextEncoder().encode('hello')), 415, 'unsupported_file_type');
    const u = await jsonOf(await t.request('/svc/v1/pdf-verify', base64Json(doc)));
    assert.equal(u.verdict, 'unsigned');
    await expectReason(await t.request('/svc/v1/pdf-ltv', base64Json(doc)), 422, 'not_signed');
  });

  test('certification (DocMDP no changes): pdfsig valid; a later signature is refused with certified_no_changes', async () => {
    const cert = await pdfOf(await signPem(doc, { certify: 'no_changes' }));
    assert.equal(pdfsig(pki, cert)[0]!.validation, 'Signature is Valid.');
    const v = await jsonOf(await t.request('/svc/v1/pdf-verify', base64Json(cert, { trusted_certificates: [pki.caPem] })));
    assert.equal(v.signatures[0].certification.level, 1);
    await expectReason(await signPem(cert, {}, 'ec'), 422, 'certified_no_changes');
  });
});

describe('signed documents: watermark, edit and redact refuse them unless drop_signatures', () => {
  let t: InProcess;
  let pki: Pki;
  before(async () => {
    pki = await makePki();
    t = await inProcess();
  });
  after(async () => {
    await t?.close();
    await pki?.close();
  });

  test('422 signed_document; with drop_signatures the output has no signature (pdfsig) and redact says how many were dropped', async () => {
    const doc = await makePdf(2, { lines: () => ['Secret 4711'] });
    const signed = await pdfOf(await t.request('/svc/v1/pdf-sign', base64Json(doc, { key: pki.signerKeyPem, chain: pki.signerCertPem })));
    await expectReasonBoth(t, '/svc/v1/pdf-watermark', () => base64Json(signed, { text: 'DRAFT' }), 422, 'signed_document');
    await expectReason(
      await t.request('/svc/v1/pdf-edit', base64Json(signed, { operations: [{ op: 'rotate', degrees: 90 }] })),
      422,
      'signed_document',
    );
    await expectReason(await t.request('/svc/v1/pdf-redact', base64Json(signed, { texts: ['4711'] })), 422, 'signed_document');
    await expectReason(await t.request('/svc/v1/pdf-to-pdfa', base64Json(signed)), 422, 'signed_document');
    await expectReason(await t.request('/svc/v1/pdf-ocr', base64Json(signed)), 422, 'signed_document');
    const noSig = (pdf: Uint8Array) =>
      assert.match(
        tool('pdfsig', ['-nocert', writeTmp(pdf)]).stdout + tool('pdfsig', ['-nocert', writeTmp(pdf)]).stderr,
        /does not contain any signatures/,
      );
    noSig(await pdfOf(await t.request('/svc/v1/pdf-watermark', base64Json(signed, { text: 'DRAFT', drop_signatures: true }))));
    noSig(
      await pdfOf(
        await t.request('/svc/v1/pdf-edit', base64Json(signed, { operations: [{ op: 'rotate', degrees: 90 }], drop_signatures: true })),
      ),
    );
    const r = await jsonOf(
      await t.request('/svc/v1/pdf-redact', base64Json(signed, { texts: ['4711'], drop_signatures: true, delivery: 'file_id' })),
    );
    assert.equal(r.signatures_dropped, 1);
  });
});
