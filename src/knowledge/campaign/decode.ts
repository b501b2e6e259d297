import type { SourceIssue } from './types';

/** Default cap on a source file: larger files are refused, not truncated. */
export const DEFAULT_SIZE_CAP_BYTES = 1024 * 1024;

export type DecodeResult = { ok: true; text: string; issues: SourceIssue[] } | { ok: false; issue: SourceIssue };

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

function formatBytes(n: number): string {
  return n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} bytes`;
}

/** Where invalid UTF-8 starts, so the message can point at the line and the byte. */
function firstInvalidUtf8(bytes: Uint8Array): { line: number; offset: number } {
  let line = 1;
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    const length = b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : 0;
    if (length === 0) return { line, offset: i };
    try {
      utf8.decode(bytes.subarray(i, i + length));
    } catch {
      return { line, offset: i };
    }
    if (b === 0x0a) line++;
    i += length;
  }
  return { line, offset: i };
}

const windows1252 = new TextDecoder('windows-1252');

/**
 * Most invalid UTF-8 a writer meets is Windows-1252 (Word, Notepad, older Mac and Windows editors): the bad
 * byte is shown with the words before it and the letter it is in that encoding, so the writer can tell.
 */
function singleByteHint(bytes: Uint8Array, offset: number): string {
  const byte = bytes[offset];
  if (byte === undefined || byte < 0x80) return '';
  const lineStart = bytes.lastIndexOf(0x0a, offset - 1) + 1;
  // Lenient: the 24 bytes before it may begin inside a character.
  const before = new TextDecoder('utf-8').decode(bytes.subarray(Math.max(lineStart, offset - 24), offset)).replace(/^\uFFFD+/, '').trimStart();
  const hex = `0x${byte.toString(16).toUpperCase()}`;
  const letter = windows1252.decode(bytes.subarray(offset, offset + 1));
  return `: byte ${hex}${before ? ` after '${before}'` : ''}, which Windows-1252 reads as '${letter}', so the file is probably Windows-1252 or Latin-1`;
}

/**
 * UTF-16 saved without a byte-order mark: mostly-ASCII text has a NUL in every other byte, on the odd
 * offsets (little-endian) or the even ones (big-endian), and almost none on the other side.
 */
function utf16WithoutMark(bytes: Uint8Array): string | undefined {
  const sample = bytes.subarray(0, Math.min(bytes.length, 4096) & ~1);
  if (sample.length < 4) return undefined;
  let evenNuls = 0;
  let oddNuls = 0;
  for (let i = 0; i < sample.length; i++) {
    if (sample[i] !== 0) continue;
    if (i % 2 === 0) evenNuls++;
    else oddNuls++;
  }
  const half = sample.length / 2;
  if (oddNuls >= half * 0.6 && evenNuls <= half * 0.05) return 'little-endian';
  if (evenNuls >= half * 0.6 && oddNuls <= half * 0.05) return 'big-endian';
  return undefined;
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
 * or not UTF-8 (naming UTF-16 without a byte-order mark, and hinting at Windows-1252). Never guesses an
 * encoding and never substitutes characters. A byte-order mark is dropped (TextDecoder removes it); the
 * returned text is otherwise exactly the file's.
 */
export function decodeSource(bytes: Uint8Array, sizeCapBytes: number): DecodeResult {
  if (bytes.length > sizeCapBytes) return { ok: false, issue: oversizeIssue(bytes.length, sizeCapBytes) };
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
    return { ok: false, issue: { severity: 'error', code: 'encoding', line: 1, message: 'file is UTF-16, not UTF-8; re-save it as UTF-8' } };
  }
  const nul = bytes.indexOf(0);
  const utf16 = nul === -1 ? undefined : utf16WithoutMark(bytes);
  if (utf16) {
    return { ok: false, issue: { severity: 'error', code: 'encoding', line: 1, message: `file is UTF-16 (${utf16}, without a byte-order mark), not UTF-8; re-save it as UTF-8` } };
  }
  if (nul !== -1) {
    const line = 1 + bytes.subarray(0, nul).filter((b) => b === 0x0a).length;
    return { ok: false, issue: { severity: 'error', code: 'binary', line, message: `file contains a NUL byte (line ${line}): it looks binary, not text` } };
  }
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    const { line, offset } = firstInvalidUtf8(bytes);
    return {
      ok: false,
      issue: { severity: 'error', code: 'encoding', line, message: `file is not valid UTF-8 (first bad byte on line ${line})${singleByteHint(bytes, offset)}; re-save it as UTF-8` },
    };
  }
  const issues: SourceIssue[] = [];
  if (text.trim() === '') issues.push({ severity: 'warning', code: 'empty', message: 'file is empty: nothing to index' });
  return { ok: true, text, issues };
}
