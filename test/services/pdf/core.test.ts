import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PDFDocument, PDFString } from '@cantoo/pdf-lib';
import { pdfInfo } from '../../../src/services/pdf/pdf-info.ts';
import { pdfMerge } from '../../../src/services/pdf/pdf-merge.ts';
import { pdfSplit } from '../../../src/services/pdf/pdf-split.ts';
import { pdfEdit } from '../../../src/services/pdf/pdf-edit.ts';
import { pdfUnlock } from '../../../src/services/pdf/pdf-unlock.ts';
import { zipFiles } from '../../../src/services/pdf/zip.ts';
import { unzipSync } from 'fflate';
import { assertQpdfCheck, encrypt, makePdf, pageCount, pdfinfo, pdftotext, rejects, showEncryption, tool, writeTmp } from './helpers.ts';

test('pdfInfo agrees with pdfinfo', async () => {
  const src = await makePdf(3, { title: 'Quarterly', size: [595, 842], lines: (p) => [`line on ${p}`] });
  const info = await pdfInfo(src);
  const ref = pdfinfo(src);
  assert.equal(info.pageCount, Number(ref['Pages']));
  assert.equal(info.metadata.title, ref['Title']);
  assert.equal(info.pdfVersion, ref['PDF version']);
  assert.equal(info.fileSize, Number(ref['File size']!.split(' ')[0]));
  assert.match(ref['Page size']!, new RegExp(`^${info.pages[0]!.width} x ${info.pages[0]!.height} pts`));
  assert.equal(info.encrypted, false);
  assert.equal(info.pages[0]!.content, 'text');
  assert.ok(info.fonts.some((f) => f.name === 'Helvetica' && !f.embedded));
  assert.equal(info.signatures.present, false);
  assert.equal(info.pdfa.claimed, false);
});

test('pdfInfo reports a scan page, rotation and encryption permissions', async () => {
  const doc = await PDFDocument.create();
  const png = Uint8Array.from(
    Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==', 'base64'),
  );
  const img = await doc.embedPng(png);
  const p = doc.addPage([200, 300]);
  p.drawImage(img, { x: 0, y: 0, width: 200, height: 300 });
  p.setRotation({ type: 'degrees', angle: 90 } as never);
  const plain = await doc.save();
  const locked = encrypt(plain, 'u', 'o', 256, ['--print=none', '--extract=n']);
  const info = await pdfInfo(locked, { password: 'u' });
  assert.equal(info.pages[0]!.content, 'scan');
  assert.equal(info.pages[0]!.rotation, 90);
  assert.equal(pdfinfo(locked, ['-upw', 'u'])['Page rot'], '90');
  assert.equal(info.encrypted, true);
  assert.equal(info.encryption!.algorithm, 'AES-256');
  assert.equal(info.encryption!.permissions.print, false);
  assert.equal(info.encryption!.permissions.copy, false);
  assert.equal(info.encryption!.permissions.modify, true);
});

test('every operation answers the same password reasons and sniffs non-PDF bytes', async () => {
  const locked = encrypt(await makePdf(2), 'secret', 'owner', 256);
  for (
    const call of [
      () => pdfInfo(locked),
      () => pdfMerge([{ bytes: locked }]),
      () => pdfSplit(locked, { single: true }),
      () => pdfEdit(locked, [{ op: 'delete', pages: [1] }]),
      () => pdfUnlock(locked),
    ]
  ) await rejects(call(), 400, 'password_required');
  await rejects(pdfInfo(locked, { password: 'nope' }), 400, 'password_incorrect');
  await rejects(pdfUnlock(locked, { password: 'nope' }), 400, 'password_incorrect');
  await rejects(pdfInfo(new TextEncoder().encode('GIF89a not a pdf')), 415, 'unsupported_file_type');
  await rejects(pdfInfo(new TextEncoder().encode('%PDF-1.7\n garbage garbage')), 422, 'pdf_corrupt');
});

for (const kind of [256, 128, 'rc4', 40] as const) {
  test(`pdfUnlock removes ${kind} encryption (qpdf --show-encryption judges)`, async () => {
    const src = await makePdf(2, { lines: () => ['unlock me'] });
    const locked = encrypt(src, 'user1', 'owner1', kind);
    const before = new Uint8Array(locked);
    assert.doesNotMatch(showEncryption(locked, 'user1'), /File is not encrypted/);
    const { pdf, wasEncrypted } = await pdfUnlock(locked, { password: 'user1' });
    assert.equal(wasEncrypted, true);
    assert.match(showEncryption(pdf), /File is not encrypted/);
    assertQpdfCheck(pdf);
    assert.match(pdftotext(pdf), /unlock me/);
    assert.ok(Buffer.from(locked).equals(before), 'input not modified');
    // the owner password opens it too
    assert.match(showEncryption((await pdfUnlock(locked, { password: 'owner1' })).pdf), /File is not encrypted/);
  });
}

test('pdfUnlock removes owner-only restrictions without a password', async () => {
  const locked = encrypt(await makePdf(1), '', 'owner', 256, ['--print=none', '--modify=none']);
  const { pdf } = await pdfUnlock(locked);
  assert.match(showEncryption(pdf), /File is not encrypted/);
  assertQpdfCheck(pdf);
});

test('pdfMerge joins selections in order and keeps bookmarks', async () => {
  const a = await makePdf(3, { lines: (p) => [`alpha ${p}`] });
  // b gets a bookmark on its page 2 via qpdf-independent pdf-lib outline
  const bDoc = await PDFDocument.load(await makePdf(2, { lines: (p) => [`beta ${p}`] }));
  const ctx = bDoc.context;
  const outlinesRef = ctx.nextRef();
  const itemRef = ctx.nextRef();
  ctx.assign(itemRef, ctx.obj({ Title: PDFString.of('Beta two'), Parent: outlinesRef, Dest: [bDoc.getPage(1).ref, 'Fit'] }));
  ctx.assign(outlinesRef, ctx.obj({ Type: 'Outlines', First: itemRef, Last: itemRef, Count: 1 }));
  bDoc.catalog.set((await import('@cantoo/pdf-lib')).PDFName.of('Outlines'), outlinesRef);
  const b = await bDoc.save();
  const merged = await pdfMerge([{ bytes: a, pages: '3,1' }, { bytes: b }]);
  assertQpdfCheck(merged);
  assert.equal(pageCount(merged), 4);
  const text = pdftotext(merged);
  assert.ok(text.indexOf('alpha 3') < text.indexOf('alpha 1') && text.indexOf('alpha 1') < text.indexOf('beta 1'));
  // the bookmark now points at output page 4
  const outline = tool('qpdf', ['--json', '--json-key=outlines', writeTmp(merged)]).stdout;
  const json = JSON.parse(outline);
  assert.equal(json.outlines[0].title, 'Beta two');
  assert.equal(json.outlines[0].destpageposfrom1, 4);
  await rejects(pdfMerge([{ bytes: a, pages: '2-9' }]), 400, 'invalid_argument');
  await rejects(pdfMerge([{ bytes: new Uint8Array([1, 2, 3]) }]), 415, 'unsupported_file_type');
});

test('pdfSplit by ranges, every N and single pages; zip helper', async () => {
  const src = await makePdf(5, { lines: (p) => [`body ${p}`] });
  const byRanges = await pdfSplit(src, { ranges: ['1-2', '5', [3, 4]] });
  assert.deepEqual(byRanges.map(pageCount), [2, 1, 2]);
  assert.match(pdftotext(byRanges[1]!), /body 5/);
  assert.deepEqual((await pdfSplit(src, { every: 2 })).map(pageCount), [2, 2, 1]);
  const singles = await pdfSplit(src, { single: true });
  assert.equal(singles.length, 5);
  singles.forEach(assertQpdfCheck);
  assert.match(pdftotext(singles[3]!), /Page 4/);
  const zip = zipFiles(singles.map((bytes, i) => ({ name: `page-${i + 1}.pdf`, bytes })));
  assert.deepEqual(Object.keys(unzipSync(zip)).length, 5);
  await rejects(pdfSplit(src, { ranges: ['6'] }), 400, 'invalid_argument');
});

test('pdfEdit applies operations in order', async () => {
  const src = await makePdf(4, { lines: (p) => [`content ${p}`] });
  const out = await pdfEdit(src, [
    { op: 'delete', pages: [2] }, // 1,3,4
    { op: 'reorder', order: [3, 1, 2] }, // 4,1,3
    { op: 'rotate', pages: '1', degrees: 90 },
    { op: 'insert_blank', after: 3 },
    { op: 'crop', pages: [2], box: { x: 0, y: 0, width: 300, height: 200 } },
    { op: 'set_metadata', title: 'Edited', author: 'svc' },
  ]);
  assertQpdfCheck(out);
  const info = await pdfInfo(out);
  assert.equal(info.pageCount, 4);
  assert.equal(info.metadata.title, 'Edited');
  assert.equal(info.pages[0]!.rotation, 90);
  assert.equal(info.pages[3]!.content, 'empty');
  assert.deepEqual([info.pages[1]!.width, info.pages[1]!.height], [300, 200]);
  const pages = [1, 2, 3].map((f) => pdftotext(out, ['-f', String(f), '-l', String(f)]));
  assert.match(pages[0]!, /content 4/);
  assert.match(pages[1]!, /content 1/);
  assert.match(pages[2]!, /content 3/);
  // top-left 300x200 crop of a 612x792 page keeps the top of the page: pdfinfo box says so
  assert.match(pdfinfo(out, ['-f', '2', '-l', '2', '-box'])['Page    2 CropBox']!, /0\.00\s+592\.00\s+300\.00\s+792\.00/);
  await rejects(pdfEdit(src, [{ op: 'rotate', pages: [5], degrees: 90 }]), 400, 'invalid_argument');
  await rejects(pdfEdit(src, [{ op: 'crop', box: { x: 500, y: 0, width: 200, height: 100 } }]), 400, 'invalid_argument');
  await rejects(pdfEdit(src, [{ op: 'reorder', order: [1, 2] }]), 400, 'invalid_argument');
});
