/**
 * Load generator of scripts/bench/isolation.ts, in a process of its own as a real client is: `concurrency`
 * loops each POST the JSON body in `bodyFile` to `url` back to back until SIGTERM, then print the tasks done.
 *   node scripts/bench/isolation-load.mjs <url> <bodyFile> <concurrency>
 */
import { readFileSync } from 'node:fs';

const [url, bodyFile, concurrency] = process.argv.slice(2);
const body = readFileSync(bodyFile, 'utf8');
let stop = false;
let tasks = 0;
process.on('SIGTERM', () => (stop = true));
const loops = Array.from({ length: Number(concurrency) }, async () => {
  while (!stop) {
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    if (r.status !== 200) throw new Error(`${url} ${r.status} ${await r.text()}`);
    await r.arrayBuffer();
    tasks++;
  }
});
process.stdout.write('started\n');
await Promise.all(loops);
process.stdout.write(`${tasks}\n`);
