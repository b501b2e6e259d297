// What the harness (outside, Node) and the suite (inside the extension host) tell each other, through files.

/** The extension host's environment variable naming the harness config file. */
export const HARNESS_CONFIG_ENV = 'STORYTELLER_HARNESS_CONFIG';

/**
 * How long a screenshot request's steps may wait for their elements (a step never starts after it), and how
 * long the driver then has to look and take pictures. The suite waits for the reply that long and a little
 * more, so every wait on either side ends, with a reason, before a test's own timeout.
 */
export const STEPS_BUDGET_MS = 20_000;
export const AFTER_STEPS_BUDGET_MS = 15_000;

export interface HarnessConfig {
  resultsFile: string;
  suiteFiles: string[];
  mochaPath: string;
  testTimeoutMs: number;
  grep?: string;
  /** The suite drops a request here; the driver answers with a `.done` file beside it. */
  requestDir: string;
  artifactsDir: string;
  /** The copied fixture workspace (the tests may change it freely). */
  workspace: string;
  /** The `.code-workspace` file the workbench opened, whose only folder is `workspace` at the start. */
  workspaceFile: string;
  /** Loopback server that counts requests: any hit means imported content reached out. */
  trackerPort: number;
}

export interface TestResult {
  title: string;
  state: 'passed' | 'failed' | 'pending';
  durationMs: number;
  error?: string;
}

export interface SuiteResults {
  tests: TestResult[];
  passed: number;
  failed: number;
  pending: number;
  /** The runner itself failed before or while running the suite. */
  crash?: string;
}

/** Something the driver does in the page before its screenshot, like a writer would (inside webviews too). */
export type DriverStep =
  | { action: 'fill'; selector: string; text: string }
  | { action: 'click'; selector: string }
  /** Focuses the element and presses `key` there ('Control+Enter'; 'Shift' just arrives by keyboard, so :focus-visible shows). */
  | { action: 'press'; selector: string; key: string }
  /** Scrolls the element (a scrolling region) to its top, as a writer rereading the story would. */
  | { action: 'scrollToTop'; selector: string }
  /** Scrolls the element into view, as a writer scrolling a long report down to it would. */
  | { action: 'scrollIntoView'; selector: string }
  /**
   * Types `text` into the element one key at a time, as a writer does, and records for each key the time
   * from the keydown to the next frame painted after it (the reply's `typing`).
   */
  | { action: 'typeTimed'; selector: string; text: string };

export interface ScreenshotRequest {
  name: string;
  steps?: DriverStep[];
  /** Selectors (in any frame) whose place on screen the reply reports, to tell what is in view. */
  locate?: string[];
  /** Epoch ms after which no step starts: the suite has given up on the reply by then. */
  stepsDeadline: number;
}

/** Where an element is inside its frame's viewport, in CSS pixels. */
export interface Located {
  top: number;
  bottom: number;
  viewportHeight: number;
  /** A form field's current value (what the writer typed), else null. */
  value: string | null;
  disabled: boolean;
  /** It, or something inside it, has the keyboard focus. */
  focused: boolean;
}

/** The driver's answer: the files it wrote, and the text and markup of every webview frame it saw. */
export interface ScreenshotReply {
  files: string[];
  /** The workbench's visible text (the main page, without webviews). */
  workbenchText: string;
  frames: { url: string; text: string; html: string }[];
  /** Dialogs (alert/confirm/prompt) the page raised since the run began. */
  dialogs: string[];
  trackerHits: number;
  /** A step that could not be done (which step, and why), or a capture the driver could not finish. */
  driverError?: string;
  /** Each requested selector's place (null: no frame holds it). */
  located: Record<string, Located | null>;
  /** Keydown-to-paint milliseconds of each key typed by a typeTimed step. */
  typing: number[];
}
