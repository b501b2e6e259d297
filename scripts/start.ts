// `npm start`: the built extension in code-server with a copy of the example campaign, at http://127.0.0.1:8080.
// The extension is reinstalled on every start; settings and state persist in .cache/start between runs, and
// the campaign (notes added, turns played) in .cache/demo-campaign until that folder is deleted.
import path from 'node:path';
import { MissingPieceError, PROJECT_ROOT, installBuiltExtension, launchCodeServer } from './codeServer';
import { DEMO_WORKSPACE_SETTINGS, ensureDemoCampaign } from './demoCampaign';

const PORT = Number(process.env.PORT ?? 8080);
const START_DIR = path.join(PROJECT_ROOT, '.cache', 'start');
const DEMO_CAMPAIGN = path.join(PROJECT_ROOT, '.cache', 'demo-campaign');

async function main(): Promise<void> {
  const extensionsDir = path.join(START_DIR, 'extensions');
  const fresh = ensureDemoCampaign(path.join(PROJECT_ROOT, 'fixtures', 'example-campaign'), DEMO_CAMPAIGN);
  installBuiltExtension(extensionsDir);
  const server = await launchCodeServer({
    port: PORT,
    userDataDir: path.join(START_DIR, 'user-data'),
    extensionsDir,
    workspace: DEMO_CAMPAIGN,
    logFile: path.join(START_DIR, 'code-server.log'),
    // The demo's settings as user settings too: a campaign opened from File > Open Folder saves when the writer does.
    settings: DEMO_WORKSPACE_SETTINGS,
  });
  const campaign = fresh ? `a fresh copy of the example campaign in ${DEMO_CAMPAIGN}` : `your copy of the example campaign in ${DEMO_CAMPAIGN} (delete that folder to start over)`;
  console.log(`\nAdventure Storyteller is running with ${campaign}:\n\n  ${server.url}\n\nOpen it in a browser. Ctrl-C stops it.`);
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
