// Fails fast, before the suite, when a Debian tool the tests use as a judge is missing.
import { spawnSync } from 'node:child_process';

const tools = {
  qpdf: 'qpdf',
  pdfinfo: 'poppler-utils',
  pdftotext: 'poppler-utils',
  pdftoppm: 'poppler-utils',
  gs: 'ghostscript',
  convert: 'imagemagick',
  tesseract: 'tesseract-ocr',
  chromium: 'chromium',
  ffmpeg: 'ffmpeg',
  ffprobe: 'ffmpeg',
  'espeak-ng': 'espeak-ng',
  sox: 'sox',
  soxi: 'sox',
  pdfsig: 'poppler-utils',
  certutil: 'libnss3-tools',
  openssl: 'openssl',
  exiftool: 'libimage-exiftool-perl',
  compare: 'imagemagick',
  nginx: 'nginx',
  pg_ctlcluster: 'postgresql',
};
const missing = Object.entries(tools).filter(([bin]) => spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0);
// Mesa's lavapipe (a Vulkan driver, not a command): the software WebGPU adapter of the WebGPU test
if (spawnSync('sh', ['-c', 'ls /usr/share/vulkan/icd.d/lvp_icd*.json']).status !== 0) {
  missing.push(['lavapipe (Vulkan ICD)', 'mesa-vulkan-drivers']);
} else if (spawnSync('sh', ['-c', "dpkg-query -W -f='${Version}' mesa-vulkan-drivers | grep -q '^2[5-9]\\.'"]).status !== 0) {
  // onnxruntime-node's WebGPU provider (Dawn) finds no adapter on Mesa 22's lavapipe
  missing.push(['lavapipe from Mesa 25 or later (for Dawn)', 'mesa-vulkan-drivers from bookworm-backports']);
}
// The tests run PostgreSQL's own initdb and pg_ctl, which Debian keeps off PATH.
if (spawnSync('sh', ['-c', 'ls /usr/lib/postgresql/*/bin/initdb']).status !== 0) missing.push(['initdb', 'postgresql']);
// A PDF/A test draws its scan with Python's PIL.
if (spawnSync('/usr/bin/python3', ['-c', 'import PIL']).status !== 0) missing.push(['/usr/bin/python3 with PIL', 'python3-pil']);
// External-data model fixtures are written by the onnx package itself (test/support/external-data-model.ts).
if (spawnSync('/usr/bin/python3', ['-c', 'import onnx']).status !== 0) missing.push(['/usr/bin/python3 with onnx', 'python3-onnx']);
if (missing.length) {
  const pkgs = [...new Set(missing.map(([, p]) => p))].join(' ');
  console.error(
    `The tests need Debian tools that are missing: ${
      missing.map(([b]) => b).join(', ')
    }.\nInstall them with: sudo apt-get install -y ${pkgs}   (or run bash .ci/run, which does it)`,
  );
  process.exit(1);
}
