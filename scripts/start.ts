// `npm start`: the built extension in code-server with the example campaign, at http://127.0.0.1:8080.
// The extension is reinstalled on every start; settings and state persist in .cache/start between runs.
import path from 'node:path';
import { MissingPieceError, PROJECT_ROOT, installBuiltExtension, launchCodeServer } from './codeServer';

const PORT = Number(process.env.PORT ?? 8080);
const START_DIR = path.join(PROJECT_ROOT, '.cache', 'start');

async function main(): Promise<void> {
  const extensionsDir = path.join(START_DIR, 'extensions');
  installBuiltExtension(extensionsDir);
  const server = await launchCodeServer({
    port: PORT,
    userDataDir: path.join(START_DIR, 'user-data'),
    extensionsDir,
    workspace: path.join(PROJECT_ROOT, 'fixtures', 'example-campaign'),
    logFile: path.join(START_DIR, 'code-server.log'),
  });
  console.log(`\nAdventure Storyteller is running with the example campaign:\n\n  ${server.url}\n\nOpen it in a browser. Ctrl-C stops it.`);
  const stop = (): void => {
    void server.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  server.process.once('exit', (code) => {
    console.error(`code-server exited (code ${code}); see ${path.join(START_DIR, 'code-server.log')}`);
    process.exit(1);
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof MissingPieceError ? `cannot start: ${error.message}` : error);
  process.exit(1);
});
