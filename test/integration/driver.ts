// How the integration driver acts in the workbench page and its webview frames, as a writer would. Every
// wait is bounded: a frame that is hidden never paints, a frame that is detaching or busy may never answer a
// query, and a step must not act after the suite has stopped waiting for it.
import type { Frame, Page } from 'playwright-core';
import type { DriverStep, Located } from './protocol';
import { within } from './within';

/** One frame's answer to one query; a frame that is detaching, or busy on a loaded machine, is asked again. */
export const PROBE_TIMEOUT_MS = 3_000;

/**
 * The first frame, in page order (the workbench, then webviews), holding `selector` now. Every frame is asked
 * at once; one that does not answer within a probe holds nothing, and delays only the frames after it.
 */
async function frameHolding(page: Page, selector: string): Promise<Frame | undefined> {
  const frames = page.frames();
  const answers = frames.map((frame) => within(frame.locator(selector).count(), PROBE_TIMEOUT_MS, selector).then((n) => n > 0, () => false));
  for (const [at, holds] of answers.entries()) if (await holds) return frames[at];
  return undefined;
}

/** Polls until some frame (workbench or webview) holds `selector`; past `deadline` fails naming the step. */
async function frameWith(page: Page, selector: string, deadline: number, step: string): Promise<Frame> {
  for (;;) {
    const frame = await frameHolding(page, selector);
    if (frame) return frame;
    if (Date.now() >= deadline) throw new Error(`${step}: no frame held ${selector} by the request's deadline`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** What is left of `deadline` for one call, never so little that a call that would succeed cannot. */
function remaining(deadline: number): number {
  return Math.max(deadline - Date.now(), 1_000);
}

/**
 * Types into the element key by key and returns, per key, the milliseconds from its keydown to the frame
 * painted after it: the lag a writer feels. The page measures it itself, so the driver's own latency
 * is not counted.
 */
async function typeTimed(frame: Frame, selector: string, text: string, deadline: number): Promise<number[]> {
  const field = frame.locator(selector).first();
  await field.focus({ timeout: remaining(deadline) });
  const installed = frame.evaluate(() => {
    const w = window as unknown as { typingLatencies: number[]; typingTimed?: boolean };
    w.typingLatencies = [];
    // One listener per page, however many times keys are timed in it.
    if (w.typingTimed) return;
    w.typingTimed = true;
    document.addEventListener(
      'keydown',
      () => {
        const start = performance.now();
        // The frame after the next animation frame is the one that shows the key's effect.
        requestAnimationFrame(() => setTimeout(() => w.typingLatencies.push(performance.now() - start), 0));
      },
      { capture: true },
    );
  });
  await within(installed, remaining(deadline), 'installing the keydown timer');
  const keys = [...text];
  for (let typed = 1; typed <= keys.length; typed++) {
    await field.press(keys[typed - 1]!, { timeout: remaining(deadline) });
    await frame.waitForFunction((n) => (window as unknown as { typingLatencies: number[] }).typingLatencies.length >= n, typed, { timeout: remaining(deadline) });
  }
  return within(
    frame.evaluate(() => (window as unknown as { typingLatencies: number[] }).typingLatencies),
    remaining(deadline),
    'reading the typing latencies',
  );
}

function describeStep(step: DriverStep): string {
  const detail = step.action === 'fill' || step.action === 'typeTimed' ? ` ${JSON.stringify(step.text)}` : step.action === 'press' ? ` ${step.key}` : '';
  return `${step.action}${detail} on ${step.selector}`;
}

/**
 * Does the steps as a writer would, each waiting for its element until `deadline`. A step never starts
 * after it: the suite has given up by then, and a late click (an Apply) would change what the next test sees.
 */
export async function runSteps(page: Page, steps: DriverStep[], deadline: number): Promise<number[]> {
  const typing: number[] = [];
  for (const [at, step] of steps.entries()) {
    const label = `step ${at + 1} of ${steps.length} (${describeStep(step)})`;
    if (Date.now() >= deadline) throw new Error(`${label}: not started, the request's deadline had passed`);
    const frame = await frameWith(page, step.selector, deadline, label);
    const target = frame.locator(step.selector).first();
    const timeout = remaining(deadline);
    try {
      if (step.action === 'fill') await target.fill(step.text, { timeout });
      else if (step.action === 'press') await target.press(step.key, { timeout });
      else if (step.action === 'scrollToTop') await target.evaluate((node) => node.scrollTo({ top: 0 }), undefined, { timeout });
      else if (step.action === 'scrollIntoView') await target.evaluate((node) => node.scrollIntoView({ block: 'center' }), undefined, { timeout });
      else if (step.action === 'typeTimed') typing.push(...(await typeTimed(frame, step.selector, step.text, deadline)));
      else await target.click({ timeout });
    } catch (error) {
      // Playwright's first line says what failed; its call log after it is noise in a test's failure.
      throw new Error(`${label}: ${(error as Error).message.split('\n')[0]}`, { cause: error });
    }
  }
  return typing;
}

/** Where each selector is now (no waiting: "not there" is an answer the suite asks for). */
export async function locate(page: Page, selectors: string[]): Promise<Record<string, Located | null>> {
  const located = await Promise.all(
    selectors.map(async (selector) => {
      const frame = await frameHolding(page, selector);
      const measured = frame?.locator(selector).first().evaluate(
        (node) => {
          const box = node.getBoundingClientRect();
          const field = node as Element & { value?: unknown; disabled?: unknown };
          return {
            top: box.top,
            bottom: box.bottom,
            viewportHeight: window.innerHeight,
            value: typeof field.value === 'string' ? field.value : null,
            disabled: field.disabled === true || node.hasAttribute('disabled'),
            focused: node === document.activeElement || node.contains(document.activeElement),
          };
        },
        undefined,
        { timeout: PROBE_TIMEOUT_MS },
      );
      // An element that went away between the probe and the measurement is not there.
      return [selector, (await measured?.catch(() => null)) ?? null] as const;
    }),
  );
  return Object.fromEntries(located);
}

/**
 * Waits until every frame has handled what is queued for it and painted it: a message posted to a webview
 * just before (by a step, or by the extension host) lands in the DOM, then two animation frames later it
 * is on screen. Without this the workbench capture raced the panel and often showed its previous render.
 */
export async function settleFrames(page: Page): Promise<void> {
  await Promise.all(
    page.frames().map((frame) =>
      within(
        frame.evaluate(() => new Promise<void>((resolve) => setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(() => resolve())), 0))),
        PROBE_TIMEOUT_MS,
        'a frame painting',
      )
        // a frame that navigated, closed or is hidden (no animation frames) has nothing left to paint
        .catch(() => undefined),
    ),
  );
}

