// The integration driver's waits, in real headless Chromium: a webview that is hidden never paints, one whose
// page is blocked never answers, and an element the workbench shows a moment late (the rename box on a loaded
// machine) must still be found. Before these were bounded, one such frame could hang the driver forever.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CHROMIUM_ARGS, requireChromium } from '../../scripts/codeServer';
import { locate, runSteps, settleFrames } from '../integration/driver';

describe('the integration driver waits for what a step needs, never forever', function () {
  this.timeout(60_000);
  let server: http.Server;
  let browser: Browser;
  let page: Page;

  before(async () => {
    server = http.createServer((request, response) => {
      // A request held open: the blocked frame's synchronous fetch of it never returns.
      if (request.url === '/never') return;
      response.setHeader('content-type', 'text/html');
      if (request.url === '/blocked') {
        response.end(`<p>blocked</p><script>setTimeout(() => { const x = new XMLHttpRequest(); x.open('GET', '/never', false); x.send(); }, 300)</script>`);
      } else if (request.url === '/hidden') {
        response.end('<p>hidden</p>');
      } else {
        // Each frame from another site, so Chromium gives it its own process, as VS Code's webviews get.
        const { port } = server.address() as AddressInfo;
        response.end(`<iframe src="http://localhost:${port}/blocked"></iframe>
          <iframe style="display:none" src="http://127.0.0.2:${port}/hidden"></iframe>
          <p id="clicked">not clicked</p>
          <script>setTimeout(() => {
            const late = document.createElement('button');
            late.id = 'late';
            late.textContent = 'Apply';
            late.onclick = () => { document.getElementById('clicked').textContent = 'clicked'; };
            document.body.append(late);
          }, 2000)</script>`);
      }
    });
    await new Promise<void>((resolve) => server.listen(0, resolve));
    browser = await chromium.launch({ executablePath: requireChromium(), args: CHROMIUM_ARGS, headless: true });
  });

  beforeEach(async () => {
    page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    await page.waitForFunction(() => document.querySelectorAll('iframe').length === 2);
  });

  afterEach(async () => {
    await page.close();
  });

  after(async () => {
    // Undefined when Chromium is missing: the before hook already said so, and this must not bury it.
    if (browser) await browser.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('clicks an element that appears after the request, past a blocked and a hidden frame', async () => {
    await runSteps(page, [{ action: 'click', selector: '#late' }], Date.now() + 20_000);
    assert.equal(await page.textContent('#clicked'), 'clicked');
    await settleFrames(page);
    const located = await locate(page, ['#late', '#absent']);
    assert.equal(located['#late']?.disabled, false);
    assert.equal(located['#absent'], null, 'an element nowhere is reported absent, not waited for');
  });

  it('fails a step whose element never appears by the deadline, naming the step and the selector', async () => {
    const started = Date.now();
    await assert.rejects(
      runSteps(page, [{ action: 'fill', selector: '.rename-box input', text: 'Marra' }], started + 3_000),
      /^Error: step 1 of 1 \(fill "Marra" on \.rename-box input\): no frame held \.rename-box input by the request's deadline$/,
    );
    assert.ok(Date.now() - started < 15_000, `gave up after ${Date.now() - started} ms`);
  });

  it('starts no step once the deadline has passed: the suite stopped waiting, and a late click would change the next test', async () => {
    await page.waitForSelector('#late');
    await assert.rejects(runSteps(page, [{ action: 'click', selector: '#late' }], Date.now() - 1), /step 1 of 1 \(click on #late\): not started/);
    assert.equal(await page.textContent('#clicked'), 'not clicked');
  });
});
