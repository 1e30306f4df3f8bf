/** Entry point: read config, open the store, build the app, serve. Nothing else. */
import { ConfigError, helpText, loadConfig, parseArgs } from './config.ts';
import { keysCommand } from './cli-keys.ts';
import { CLIENT_HELP, isClientCommand, runClientCommand } from './cli/index.ts';
import { cliArgs, envVars, exit, onShutdownSignal, runtimeName, runtimeVersion } from './runtime/env.ts';
import { startServer } from './server.ts';
import { VERSION } from './version.ts';

if (isClientCommand(cliArgs()[0])) exit(await runClientCommand(cliArgs()));

const { flags, positional } = parseArgs(cliArgs());
const keyFlags = new Map([...flags].filter(([k]) => k === 'name' || k === 'role'));
for (const k of keyFlags.keys()) if (positional[0] === 'keys') flags.delete(k);

if (flags.has('help') || positional[0] === 'help') {
  console.log(`${helpText()}\n\n${CLIENT_HELP}`);
  exit(0);
}

let config;
try {
  config = loadConfig(flags, envVars());
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(`svc: ${e.message}`);
    exit(2);
  }
  throw e;
}

if (positional[0] === 'keys') {
  exit(await keysCommand(config!, positional.slice(1), keyFlags));
} else if (positional[0] && positional[0] !== 'serve') {
  console.error(`svc: unknown command '${positional[0]}' (see --help)`);
  exit(2);
}

const started = await startServer(config!);
// Always printed (whatever the log level): scripts and supervisors wait for this line.
if (config!.logLevel !== 'silent') {
  console.error(
    `svc ${VERSION} on ${runtimeVersion()} (${runtimeName}) node ${started.nodeTag} listening on ${started.url} data ${
      config!.dataDir
    } db ${started.store.driver}`,
  );
}
onShutdownSignal(async (sig) => {
  started.log.info(`${sig}: finishing in-flight requests`);
  await started.stop();
  exit(0);
});
