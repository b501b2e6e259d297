import zlib from 'node:zlib';

/** The eight bytes every PNG starts with. */
export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Text chunks are inflated with a ceiling, so a tiny compressed chunk cannot expand into gigabytes. */
const MAX_TEXT_CHUNK_BYTES = 32 * 1024 * 1024;

export class PngError extends Error {}

export function isPng(bytes: Uint8Array): boolean {
  return bytes.length >= PNG_SIGNATURE.length && PNG_SIGNATURE.equals(bytes.subarray(0, PNG_SIGNATURE.length));
}

/**
 * Reads the textual chunks (tEXt, zTXt, iTXt) of a PNG as keyword → text, after checking the file's
 * structure: the signature, IHDR first, every chunk inside the file with a valid CRC, and an IEND.
 * Image data is never decoded. Throws `PngError` naming what is wrong.
 */
export function readPngTextChunks(bytes: Uint8Array): Map<string, string> {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (!isPng(buf)) throw new PngError('not a PNG file (bad signature)');
  const texts = new Map<string, string>();
  let offset = PNG_SIGNATURE.length;
  let first = true;
  for (;;) {
    if (offset + 12 > buf.length) throw new PngError(`truncated PNG: chunk header at byte ${offset} runs past the end (no IEND)`);
    const length = buf.readUInt32BE(offset);
    const typeBytes = buf.subarray(offset + 4, offset + 8);
    const type = typeBytes.toString('latin1');
    if (!/^[A-Za-z]{4}$/.test(type)) throw new PngError(`corrupt PNG: invalid chunk type at byte ${offset}`);
    const dataStart = offset + 8;
    const dataEnd = dataStart + length;
    if (length > 0x7fffffff || dataEnd + 4 > buf.length) throw new PngError(`truncated PNG: chunk ${type} at byte ${offset} runs past the end`);
    const expected = buf.readUInt32BE(dataEnd);
    if (zlib.crc32(buf.subarray(offset + 4, dataEnd)) !== expected) throw new PngError(`corrupt PNG: CRC mismatch in chunk ${type} at byte ${offset}`);
    if (first && type !== 'IHDR') throw new PngError('corrupt PNG: first chunk is not IHDR');
    first = false;
    const data = buf.subarray(dataStart, dataEnd);
    if (type === 'IEND') return texts;
    const text = decodeTextChunk(type, data);
    // The first chunk with a keyword wins, as in PNG readers generally.
    if (text && !texts.has(text.keyword)) texts.set(text.keyword, text.value);
    offset = dataEnd + 4;
  }
}

function decodeTextChunk(type: string, data: Buffer): { keyword: string; value: string } | undefined {
  if (type !== 'tEXt' && type !== 'zTXt' && type !== 'iTXt') return undefined;
  const nul = data.indexOf(0);
  if (nul < 1 || nul > 79) throw new PngError(`corrupt PNG: ${type} chunk has no valid keyword`);
  const keyword = data.subarray(0, nul).toString('latin1');
  const rest = data.subarray(nul + 1);
  if (type === 'tEXt') return { keyword, value: rest.toString('latin1') };
  if (type === 'zTXt') {
    if (rest[0] !== 0) throw new PngError(`corrupt PNG: zTXt chunk '${keyword}' uses an unknown compression method`);
    return { keyword, value: inflate(rest.subarray(1), keyword).toString('latin1') };
  }
  // iTXt: compression flag, method, language tag\0, translated keyword\0, UTF-8 text.
  const compressed = rest[0] === 1;
  const languageEnd = rest.indexOf(0, 2);
  const translatedEnd = languageEnd === -1 ? -1 : rest.indexOf(0, languageEnd + 1);
  if (rest.length < 2 || translatedEnd === -1) throw new PngError(`corrupt PNG: iTXt chunk '${keyword}' is malformed`);
  const payload = rest.subarray(translatedEnd + 1);
  return { keyword, value: (compressed ? inflate(payload, keyword) : payload).toString('utf8') };
}

function inflate(data: Buffer, keyword: string): Buffer {
  try {
    return zlib.inflateSync(data, { maxOutputLength: MAX_TEXT_CHUNK_BYTES });
  } catch (error) {
    throw new PngError(`corrupt PNG: text chunk '${keyword}' does not decompress (${error instanceof Error ? error.message : String(error)})`);
  }
}
