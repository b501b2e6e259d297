import zlib from 'node:zlib';

/**
 * Reads one file out of a zip held in memory (a CharX card's `card.json`). The only zip reader in node_modules
 * (yauzl) is there for @vscode/vsce, a development tool, and answers through callbacks; a card is a few
 * megabytes already in memory, so the central directory is read here and the entry inflated with zlib.
 * Sizes are bounded before inflating, so a small archive cannot expand into gigabytes.
 */

export class ZipError extends Error {}

const LOCAL_HEADER = 0x04034b50;
const CENTRAL_HEADER = 0x02014b50;
const END_OF_DIRECTORY = 0x06054b50;
/** The end record is 22 bytes plus a comment of at most 65535. */
const MAX_END_SEARCH = 22 + 0xffff;
const MAX_ENTRY_BYTES = 32 * 1024 * 1024;

export function isZip(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && Buffer.from(bytes.buffer, bytes.byteOffset, 4).readUInt32LE(0) === LOCAL_HEADER;
}

function findEndOfDirectory(buf: Buffer): number {
  const stop = Math.max(0, buf.length - MAX_END_SEARCH);
  for (let at = buf.length - 22; at >= stop; at--) if (buf.readUInt32LE(at) === END_OF_DIRECTORY) return at;
  throw new ZipError('corrupt zip: no end-of-directory record (the file is truncated or not a zip)');
}

/** The bytes of the entry named `name` at the zip's root, or undefined when there is none. */
export function readZipEntry(bytes: Uint8Array, name: string): Buffer | undefined {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = findEndOfDirectory(buf);
  const count = buf.readUInt16LE(end + 10);
  let at = buf.readUInt32LE(end + 16);
  for (let i = 0; i < count; i++) {
    if (at + 46 > buf.length || buf.readUInt32LE(at) !== CENTRAL_HEADER) throw new ZipError(`corrupt zip: central directory entry ${i + 1} is not where the directory says`);
    const flags = buf.readUInt16LE(at + 8);
    const method = buf.readUInt16LE(at + 10);
    const compressedSize = buf.readUInt32LE(at + 20);
    const size = buf.readUInt32LE(at + 24);
    const nameLength = buf.readUInt16LE(at + 28);
    const extraLength = buf.readUInt16LE(at + 30);
    const commentLength = buf.readUInt16LE(at + 32);
    const localAt = buf.readUInt32LE(at + 42);
    const entryName = buf.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    at += 46 + nameLength + extraLength + commentLength;
    if (entryName !== name) continue;
    if (flags & 1) throw new ZipError(`${name} in the zip is encrypted`);
    if (size > MAX_ENTRY_BYTES) throw new ZipError(`${name} in the zip is ${size} bytes, above the ${MAX_ENTRY_BYTES}-byte limit`);
    if (localAt + 30 > buf.length || buf.readUInt32LE(localAt) !== LOCAL_HEADER) throw new ZipError(`corrupt zip: the local header of ${name} is missing`);
    const dataAt = localAt + 30 + buf.readUInt16LE(localAt + 26) + buf.readUInt16LE(localAt + 28);
    if (dataAt + compressedSize > buf.length) throw new ZipError(`truncated zip: ${name} runs past the end of the file`);
    const data = buf.subarray(dataAt, dataAt + compressedSize);
    if (method === 0) return Buffer.from(data);
    if (method !== 8) throw new ZipError(`${name} in the zip uses compression method ${method}; only stored and deflate are read`);
    try {
      return zlib.inflateRawSync(data, { maxOutputLength: MAX_ENTRY_BYTES });
    } catch (error) {
      throw new ZipError(`corrupt zip: ${name} does not decompress (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  return undefined;
}
