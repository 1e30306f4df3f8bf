// Builds svc's optional native kernels (native/kernels, src/runtime/kernels.ts) with the node-gyp that npm
// ships, against the headers the running Node installed beside itself where it has them (nothing is
// downloaded). With `--optional` (npm's postinstall) a failed build prints one line and the install goes on:
// svc then keeps ONNX Runtime's own kernels.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const optional = process.argv.includes('--optional');
const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'native', 'kernels');
const nodeDir = resolve(process.execPath, '..', '..');
const args = ['rebuild', '-C', dir, ...(existsSync(join(nodeDir, 'include', 'node', 'node_api.h')) ? [`--nodedir=${nodeDir}`] : [])];
// npm names its node-gyp to the scripts it runs; run by hand, npm's own copy beside this Node, else PATH's
const bundled = join(nodeDir, 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
const gyp = [process.env.npm_config_node_gyp, bundled].find((p) => p && existsSync(p));
const [cmd, pre] = gyp ? [process.execPath, [gyp]] : ['node-gyp', []];
const r = spawnSync(cmd, [...pre, ...args], { stdio: optional ? 'ignore' : 'inherit', shell: !gyp && process.platform === 'win32' });
if (r.status !== 0) {
  if (!optional) process.exit(r.status ?? 1);
  console.log('svc: native kernels (native/kernels) were not built; svc uses ONNX Runtime kernels (npm run build:native shows why)');
}
