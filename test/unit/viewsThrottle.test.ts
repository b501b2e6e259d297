import assert from 'node:assert/strict';
import { mock } from 'node:test';
import { throttled } from '../../src/views/throttle';

/** How often the views redraw while a library indexes file by file (src/views/throttle.ts). */
describe('views: redraws folded while files are indexed one after another', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 }));
  afterEach(() => mock.timers.reset());

  it('redraws at once after a quiet spell, then once more for a burst, after the last change', () => {
    let runs = 0;
    const redraw = throttled(() => runs++, 500);
    redraw();
    assert.equal(runs, 1, 'a single save is shown without delay');
    for (let i = 0; i < 40; i++) {
      mock.timers.tick(10);
      redraw();
    }
    assert.equal(runs, 1, 'forty files indexed within the window: no redraw each');
    mock.timers.tick(500);
    assert.equal(runs, 2, 'one redraw shows the state after the last of them');
    mock.timers.tick(5_000);
    assert.equal(runs, 2, 'nothing more when nothing changed');
    redraw();
    assert.equal(runs, 3, 'the next change after a quiet spell is shown at once again');
  });

  it('does not redraw after it is disposed', () => {
    let runs = 0;
    const redraw = throttled(() => runs++, 500);
    redraw();
    redraw();
    redraw.dispose();
    mock.timers.tick(1_000);
    redraw();
    assert.equal(runs, 1);
  });
});
