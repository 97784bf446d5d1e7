/**
 * `npm start`: runs the local stack in the foreground on PORT (default 8000)
 * with its data in DATA_DIR (default ./.data), until Ctrl-C.
 */
import path from 'node:path';
import { ConfigError, loadConfig, redact } from '@baseplane/contracts';
import { stopWhenParentGoes } from './follow-parent';
import { startStack, type Stack } from './stack';

async function main(): Promise<number> {
  const config = loadConfig(process.env);
  let stack: Stack | undefined;
  let stopRequested = false;
  const cancelStart = new AbortController();
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve));

  // Ctrl-C reaches the whole process group; a second one while stopping changes nothing.
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopRequested) return;
    stopRequested = true;
    console.log(`\n${signal} received; stopping Baseplane…`);
    if (stack === undefined) cancelStart.abort();
    else void stack.stop().then(resolveStopped);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // A closed terminal: the services run in their own process groups and would outlive us.
  process.on('SIGHUP', onSignal);
  stopWhenParentGoes();

  try {
    stack = await startStack({
      dataDir: path.resolve(config.dataDir),
      port: config.port,
      host: '0.0.0.0',
      env: process.env,
      signal: cancelStart.signal,
    });
  } catch (error) {
    // Cancelled by Ctrl-C: startStack has already stopped what it had started.
    if (stopRequested) return 0;
    throw error;
  }
  if (stopRequested) {
    // The signal came after the last cancellation point: stop the finished stack.
    await stack.stop();
    return 0;
  }

  console.log('');
  console.log(`Baseplane is up at ${stack.publicUrl}`);
  if (stack.temporalUiUrl !== null) console.log(`Temporal UI: ${stack.temporalUiUrl}`);
  console.log(`Data directory: ${stack.dataDir}`);
  console.log('Press Ctrl-C to stop.');

  await stopped;
  console.log('Baseplane stopped.');
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    // Configuration mistakes are the user's to fix: one line, no stack trace.
    if (error instanceof ConfigError) console.error(error.message);
    else console.error(`Baseplane failed to start: ${redact(error instanceof Error ? error.message : String(error))}`);
    process.exit(1);
  },
);
