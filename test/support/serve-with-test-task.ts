/** A real server process with the test-only task route, for restart tests. Args: <data-dir> <port>. */
import { startServer } from '../../src/server.ts';
import { testConfig } from './server.ts';
import { TaskProbe, testTasks } from './test-tasks.ts';

const [dataDir, port] = process.argv.slice(2);
const s = await startServer(testConfig({ dataDir, port: Number(port) }), { extraRoutes: testTasks(new TaskProbe()) });
console.log(`READY ${s.url}`);
