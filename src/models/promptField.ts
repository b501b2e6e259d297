/**
 * Data that reaches a prompt outside a passage's own text — a file name, title, heading trail, entry name,
 * persona, world-state label — as one line that cannot close or forge a frame: the ⟦ ⟧ markers are ours
 * alone, and without line breaks it cannot start a section of its own (`## Narrator`).
 */
export function promptField(text: string): string {
  return neutralizeMarkers(text)
    .replace(/[\r\n\u0085\u2028\u2029]+/g, ' ')
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '');
}

/** The prompt's frame markers ⟦ ⟧ as the plain brackets they look like. */
const bracketMarkers = (text: string) => text.replace(/[⟦⟧]/g, (c) => (c === '⟦' ? '[' : ']'));

/**
 * Keeps a passage from closing its own frame early or opening a section of the prompt: its line breaks are
 * its own, but a line of it that starts like a heading (`## Narrator`) is escaped into plain text.
 */
export function neutralizeMarkers(text: string): string {
  return bracketMarkers(text).replace(/^#/gm, '\\#');
}

/**
 * A value written into a line of a campaign file (`- **Mood:** calm`): one line of plain text. Line breaks and
 * tabs become single spaces, so it cannot start a heading, a `---` fence or any other block of its own; frame
 * markers become brackets; other control characters go. Mid-line, a `#` needs no escape.
 */
export function plainLine(text: string): string {
  return (
    bracketMarkers(text)
      // eslint-disable-next-line no-control-regex -- removing control characters is the point
      .replace(/[\u0000-\u0008\u000e-\u001f\u007f-\u0084\u0086-\u009f]/g, '')
      .replace(/[\s\u0085]+/g, ' ')
      .trim()
  );
}

/** Where `^` of a multiline pattern matches after: the line terminators of JavaScript's regular expressions. */
const LINE_START_BEFORE = new Set([10, 13, 0x2028, 0x2029]);

/** `neutralizeMarkers(text).length`, without building it: each line that starts with `#` gains its escape. */
export function neutralizedLength(text: string): number {
  let escapes = 0;
  for (let i = text.indexOf('#'); i >= 0; i = text.indexOf('#', i + 1)) if (i === 0 || LINE_START_BEFORE.has(text.charCodeAt(i - 1))) escapes++;
  return text.length + escapes;
}
