import type { SourceIssue } from './types';

/** Default cap on a source file: larger files are refused, not truncated. */
export const DEFAULT_SIZE_CAP_BYTES = 1024 * 1024;

export type DecodeResult = { ok: true; text: string; issues: SourceIssue[] } | { ok: false; issue: SourceIssue };

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

function formatBytes(n: number): string {
  return n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} bytes`;
}

/** Where invalid UTF-8 starts, so the message can point at the line. */
function firstInvalidUtf8Line(bytes: Uint8Array): number {
  let line = 1;
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    const length = b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : 0;
    if (length === 0) return line;
    try {
      utf8.decode(bytes.subarray(i, i + length));
    } catch {
      return line;
    }
    if (b === 0x0a) line++;
    i += length;
  }
  return line;
}

export function oversizeIssue(size: number, sizeCapBytes: number): SourceIssue {
  return {
    severity: 'error',
    code: 'oversize',
    message: `file is ${formatBytes(size)}, over the campaign's ${formatBytes(sizeCapBytes)} cap (size_cap_bytes in campaign.yaml); split it or raise the cap`,
  };
}

/**
 * Turns a file's bytes into text, or says precisely why it cannot: over the size cap, binary (a NUL byte),
 * or not UTF-8. Never guesses an encoding and never substitutes characters. A byte-order mark is
 * dropped (TextDecoder removes it); the returned text is otherwise exactly the file's.
 */
export function decodeSource(bytes: Uint8Array, sizeCapBytes: number): DecodeResult {
  if (bytes.length > sizeCapBytes) return { ok: false, issue: oversizeIssue(bytes.length, sizeCapBytes) };
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
    return { ok: false, issue: { severity: 'error', code: 'encoding', line: 1, message: 'file is UTF-16, not UTF-8; re-save it as UTF-8' } };
  }
  const nul = bytes.indexOf(0);
  if (nul !== -1) {
    const line = 1 + bytes.subarray(0, nul).filter((b) => b === 0x0a).length;
    return { ok: false, issue: { severity: 'error', code: 'binary', line, message: `file contains a NUL byte (line ${line}): it looks binary, not text` } };
  }
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    const line = firstInvalidUtf8Line(bytes);
    return {
      ok: false,
      issue: { severity: 'error', code: 'encoding', line, message: `file is not valid UTF-8 (first bad byte on line ${line}); re-save it as UTF-8` },
    };
  }
  const issues: SourceIssue[] = [];
  if (text.trim() === '') issues.push({ severity: 'warning', code: 'empty', message: 'file is empty: nothing to index' });
  return { ok: true, text, issues };
}
