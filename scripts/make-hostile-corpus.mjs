// Generates the hostile-input corpus into test/fixtures/hostile/ (committed; about 1.5 MB in all):
// inputs an attacker would send to a default server. Deterministic: running it again gives the same files.
//   node scripts/make-hostile-corpus.mjs
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';

const dir = 'test/fixtures/hostile';
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const files = {};
const put = (name, bytes, note) => {
  files[name] = note;
  writeFileSync(`${dir}/${name}`, bytes);
};
const enc = (s) => Buffer.from(s, 'latin1');

/** A PDF from object bodies (index = number - 1), with a correct xref table. */
function pdf(objects, { trailer = '/Root 1 0 R', tail = Buffer.alloc(0) } = {}) {
  const parts = [enc('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n')];
  let len = parts[0].length;
  const offsets = [];
  objects.forEach((body, i) => {
    offsets.push(len);
    const b = Buffer.concat([enc(`${i + 1} 0 obj\n`), typeof body === 'string' ? enc(body) : body, enc('\nendobj\n')]);
    parts.push(b);
    len += b.length;
  });
  const xref = [`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`, ...offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`)]
    .join('');
  parts.push(enc(`${xref}trailer\n<< /Size ${objects.length + 1} ${trailer} >>\nstartxref\n${len}\n%%EOF\n`), tail);
  return Buffer.concat(parts);
}
const stream = (dict, data) => Buffer.concat([enc(`<< ${dict} /Length ${data.length} >>\nstream\n`), data, enc('\nendstream')]);
const page = (contents) => `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] ${contents} >>`;
const catalog = '<< /Type /Catalog /Pages 2 0 R >>';
const text = enc('BT /F1 24 Tf 72 700 Td (Hello hostile world) Tj ET');
const font = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>';

// A valid one-page PDF, the base of several others.
const valid = pdf([
  catalog,
  '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
  page('/Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >>'),
  stream('', text),
  font,
]);

// Flate bomb: one content stream of 320 MB of zeros, about 310 KB compressed (over the per-stream limit).
const bomb = deflateSync(Buffer.alloc(320 * 1024 * 1024), { level: 9 });
put(
  'flate-bomb.pdf',
  pdf([catalog, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>', page('/Contents 4 0 R'), stream('/Filter /FlateDecode', bomb)]),
  'content stream inflating to 320 MB',
);

// Image XObject declaring 30000×30000 pixels (the data is tiny and wrong).
put(
  'huge-image.pdf',
  pdf([
    catalog,
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    page('/Contents 4 0 R /Resources << /XObject << /Im1 5 0 R >> >>'),
    stream('', enc('q 612 0 0 792 0 0 cm /Im1 Do Q')),
    stream(
      '/Type /XObject /Subtype /Image /Width 30000 /Height 30000 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode',
      deflateSync(Buffer.alloc(30000)),
    ),
  ]),
  'image declaring 30000x30000 pixels',
);

// 20000 objects in one file.
const many = [
  catalog,
  '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
  page('/Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >>'),
  stream('', text),
  font,
];
for (let i = 0; i < 8000; i++) many.push(`<< /N ${i} /Next ${many.length + 2} 0 R >>`);
put('many-objects.pdf', pdf(many), '8000 indirect objects in a chain');

// A page tree whose Kids point back at itself.
put(
  'recursive-pages.pdf',
  pdf([catalog, '<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>', '<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>']),
  'page tree cycle',
);

// Trailing junk: a valid PDF followed by 600 KB of pseudo-random bytes.
let seed = 12345;
const junk = Buffer.alloc(600 * 1024);
for (let i = 0; i < junk.length; i++) junk[i] = (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
put('trailing-junk.pdf', Buffer.concat([valid, junk]), 'valid PDF + 600 KB of junk');
put('truncated.pdf', valid.subarray(0, Math.floor(valid.length / 2)), 'first half of a valid PDF');
put('header-only.pdf', enc('%PDF-1.7\n'), 'a PDF header and nothing else');

// Pixel bombs: headers declaring far more pixels than the limit, with almost no data.
const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc = (b) => {
  let c = 0xffffffff;
  for (const x of b) c = crcTable[(c ^ x) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};
const chunk = (type, data) => {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([enc(type), data]);
  const c = Buffer.alloc(4);
  c.writeUInt32BE(crc(td));
  return Buffer.concat([len, td, c]);
};
const ihdr = Buffer.alloc(13);
ihdr.writeUInt32BE(50000, 0);
ihdr.writeUInt32BE(50000, 4);
ihdr[8] = 8; // bit depth
ihdr[9] = 2; // RGB
put(
  'pixel-bomb.png',
  Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.alloc(16))),
    chunk('IEND', Buffer.alloc(0)),
  ]),
  'PNG declaring 50000x50000',
);

const sof = Buffer.from([0xff, 0xc0, 0x00, 0x0b, 0x08, 0xfd, 0xe8, 0xfd, 0xe8, 0x01, 0x01, 0x11, 0x00]); // 65000x65000, 1 component
put('pixel-bomb.jpg', Buffer.concat([Buffer.from([0xff, 0xd8]), sof, Buffer.from([0xff, 0xd9])]), 'JPEG declaring 65000x65000');

const vp8x = Buffer.alloc(10);
vp8x[0] = 0;
vp8x.writeUIntLE(29999, 4, 3);
vp8x.writeUIntLE(29999, 7, 3);
const riffBody = Buffer.concat([enc('WEBP'), enc('VP8X'), Buffer.from([10, 0, 0, 0]), vp8x]);
const riffLen = Buffer.alloc(4);
riffLen.writeUInt32LE(riffBody.length);
put('pixel-bomb.webp', Buffer.concat([enc('RIFF'), riffLen, riffBody]), 'WebP declaring 30000x30000');

const tiff = Buffer.alloc(8 + 2 + 5 * 12 + 4);
tiff.write('II*\0', 0, 'latin1');
tiff.writeUInt32LE(8, 4);
tiff.writeUInt16LE(5, 8);
[[256, 4, 60000], [257, 4, 60000], [258, 3, 8], [259, 3, 1], [262, 3, 1]].forEach(([tag, type, value], i) => {
  const o = 10 + i * 12;
  tiff.writeUInt16LE(tag, o);
  tiff.writeUInt16LE(type, o + 2);
  tiff.writeUInt32LE(1, o + 4);
  if (type === 3) tiff.writeUInt16LE(value, o + 8);
  else tiff.writeUInt32LE(value, o + 8);
});
put('pixel-bomb.tiff', tiff, 'TIFF declaring 60000x60000');

// Polyglot: a PNG signature followed by a PDF.
put(
  'polyglot-png-pdf.png',
  Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), valid]),
  'PNG signature then a PDF',
);
put(
  'postscript.ps',
  enc('%!PS-Adobe-3.0\n/Helvetica findfont 24 scalefont setfont\n72 700 moveto (Hello) show\nshowpage\n'),
  'PostScript program',
);
put('empty.bin', Buffer.alloc(0), 'zero bytes');
put('random.bin', junk.subarray(0, 4096), '4 KB of pseudo-random bytes');

// WAV headers: a format tag no decoder knows (a media file without a usable audio stream), and a header cut short.
function wav(formatTag, channels, dataBytes) {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'latin1');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVEfmt ', 8, 'latin1');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(formatTag, 20);
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(16000, 24);
  h.writeUInt32LE(16000 * channels * 2, 28);
  h.writeUInt16LE(channels * 2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'latin1');
  h.writeUInt32LE(dataBytes, 40);
  return Buffer.concat([h, junk.subarray(0, dataBytes)]);
}
put('unknown-codec.wav', wav(0x9999, 1, 1000), 'WAV whose format tag no decoder knows');
put('header-only.wav', wav(1, 1, 1000).subarray(0, 30), 'a WAV header cut short');

// Deep JSON: a schema nested 2000 levels (as response_format / format / tool parameters).
let schema = { type: 'string' };
for (let i = 0; i < 2000; i++) schema = { type: 'object', properties: { a: schema } };
put('deep-schema.json', enc(JSON.stringify(schema)), 'JSON schema nested 2000 levels');

writeFileSync(
  `${dir}/README.md`,
  [
    '# Hostile-input corpus',
    '',
    'Generated by `node scripts/make-hostile-corpus.mjs`; sent to every input-taking route by',
    '`test/hostile/corpus.test.ts`. Do not edit by hand.',
    '',
    ...Object.entries(files).map(([n, d]) => `- \`${n}\`: ${d}`),
    '',
  ].join('\n'),
);
console.log(`wrote ${Object.keys(files).length} files to ${dir}`);
