/**
 * A fleet node for the end-to-end tests: the same command line as `svc serve` (every option, parsed by the
 * same config loader, started by the same startServer), plus the test-only task route whose duration a
 * request sets (`ms`), so jobs can be kept processing while a node is killed or a cancel crosses nodes.
 */
import { loadConfig, parseArgs } from '../../src/config.ts';
import { startServer } from '../../src/server.ts';
import { TaskProbe, testTasks } from './test-tasks.ts';

const { flags } = parseArgs(process.argv.slice(2).filter((a) => a !== 'serve'));
const s = await startServer(loadConfig(flags, process.env), { extraRoutes: testTasks(new TaskProbe()) });
console.log(`READY ${s.url} ${s.nodeTag}`);
const stop = async () => {
  await s.stop();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
