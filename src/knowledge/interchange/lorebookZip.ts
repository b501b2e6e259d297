import zlib from 'node:zlib';

/**
 * Reads one file out of a zip held in memory (a CharX card's `card.json`): the central directory is read here
 * and the entry inflated with zlib. fflate's reader was weighed and not used: it checks no CRC, keeps the last of
 * two entries of one name without a word, and does not expose the CRCs a caller would need to check them.
 * Sizes are bounded before inflating, so a small archive cannot expand into gigabytes, and the entry's bytes
 * must match the size and CRC the directory states.
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

interface CentralEntry {
  name: string;
  flags: number;
  method: number;
  crc: number;
  compressedSize: number;
  size: number;
  localAt: number;
}

/**
 * Every entry the central directory lists. Two entries of one name are refused: zip readers disagree on which
 * one counts (the first, the last), so the card one tool shows could differ from the card imported.
 */
function centralDirectory(buf: Buffer): CentralEntry[] {
  const end = findEndOfDirectory(buf);
  const count = buf.readUInt16LE(end + 10);
  const entries: CentralEntry[] = [];
  const seen = new Set<string>();
  let at = buf.readUInt32LE(end + 16);
  for (let i = 0; i < count; i++) {
    if (at + 46 > buf.length || buf.readUInt32LE(at) !== CENTRAL_HEADER) throw new ZipError(`corrupt zip: central directory entry ${i + 1} is not where the directory says`);
    const nameLength = buf.readUInt16LE(at + 28);
    const name = buf.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    if (seen.has(name)) throw new ZipError(`the zip holds two entries named ${name}; which one is meant cannot be told`);
    seen.add(name);
    entries.push({
      name,
      flags: buf.readUInt16LE(at + 8),
      method: buf.readUInt16LE(at + 10),
      crc: buf.readUInt32LE(at + 16),
      compressedSize: buf.readUInt32LE(at + 20),
      size: buf.readUInt32LE(at + 24),
      localAt: buf.readUInt32LE(at + 42),
    });
    at += 46 + nameLength + buf.readUInt16LE(at + 30) + buf.readUInt16LE(at + 32);
  }
  return entries;
}

/** The bytes of the entry named `name` at the zip's root, or undefined when there is none. */
export function readZipEntry(bytes: Uint8Array, name: string): Buffer | undefined {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const entry = centralDirectory(buf).find((e) => e.name === name);
  if (!entry) return undefined;
  const { flags, method, crc, compressedSize, size, localAt } = entry;
  if (flags & 1) throw new ZipError(`${name} in the zip is encrypted`);
  if (size > MAX_ENTRY_BYTES) throw new ZipError(`${name} in the zip is ${size} bytes, above the ${MAX_ENTRY_BYTES}-byte limit`);
  if (localAt + 30 > buf.length || buf.readUInt32LE(localAt) !== LOCAL_HEADER) throw new ZipError(`corrupt zip: the local header of ${name} is missing`);
  const localNameLength = buf.readUInt16LE(localAt + 26);
  // The directory and the entry's own header must agree on what it is, or two readers would see two files.
  if (buf.subarray(localAt + 30, localAt + 30 + localNameLength).toString('utf8') !== name) throw new ZipError(`corrupt zip: the local header of ${name} names another file`);
  const dataAt = localAt + 30 + localNameLength + buf.readUInt16LE(localAt + 28);
  if (dataAt + compressedSize > buf.length) throw new ZipError(`truncated zip: ${name} runs past the end of the file`);
  const data = buf.subarray(dataAt, dataAt + compressedSize);
  let content: Buffer;
  if (method === 0) content = Buffer.from(data);
  else if (method !== 8) throw new ZipError(`${name} in the zip uses compression method ${method}; only stored and deflate are read`);
  else {
    try {
      // Bounded by the size the directory states, so a small archive cannot expand past it.
      content = zlib.inflateRawSync(data, { maxOutputLength: Math.max(1, size) });
    } catch (error) {
      throw new ZipError(`corrupt zip: ${name} does not decompress to the ${size} bytes the zip states (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  if (content.length !== size) throw new ZipError(`corrupt zip: ${name} holds ${content.length} bytes, not the ${size} the zip states`);
  if (zlib.crc32(content) !== crc) throw new ZipError(`corrupt zip: ${name} fails its CRC check (the archive is damaged or was altered)`);
  return content;
}
