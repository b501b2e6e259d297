import { Writable } from 'node:stream';

/**
 * Characters a terminal obeys instead of showing: C0 controls except tab and newline (escape, bell, carriage
 * return…), DEL and the C1 controls. A file or entry name holding them could retitle the window, clear the
 * screen or hide lines.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const TERMINAL_CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** Every control character, line breaks and tabs included: a name printed inside a line must stay on it. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const LINE_CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g;

const escaped = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * Text as the CLI prints it: each control character shown as its `\u001b` escape, which reads the same in
 * a terminal and stays valid inside JSON strings.
 */
export function terminalSafe(text: string): string {
  return text.replace(TERMINAL_CONTROLS, escaped);
}

/** A file name inside a line of output: a line break in it is shown escaped, so it cannot start a forged line. */
export function oneLine(text: string): string {
  return text.replace(LINE_CONTROLS, escaped);
}

/** A stream that passes everything written to it through `terminalSafe` on its way to `target`. */
export function terminalSafeStream(target: NodeJS.WritableStream): NodeJS.WritableStream {
  return new Writable({
    decodeStrings: false,
    write(chunk: string | Buffer, _encoding, done) {
      target.write(terminalSafe(typeof chunk === 'string' ? chunk : chunk.toString('utf8')));
      done();
    },
  });
}
