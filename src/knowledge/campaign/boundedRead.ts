import fs from 'node:fs';

/** Why a file was not read, in a writer's words; the caller names the file. */
export class ReadRefusedError extends Error {
  constructor(
    reason: string,
    /** Set when the file was refused for its size: at least this many bytes. */
    readonly size?: number,
  ) {
    super(reason);
  }
}

function megabytes(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${+(bytes / 1024 / 1024).toFixed(1)} MB` : `${+(bytes / 1024).toFixed(1)} KB`;
}

/** Why a file or folder could not be read, in a writer's words (the caller names it). */
export function readFailureReason(error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case 'ENOENT':
      return 'the file does not exist';
    case 'ELOOP':
      return 'it is a symbolic link that loops back on itself';
    case 'EACCES':
    case 'EPERM':
      return 'permission to read it was refused';
    case 'EISDIR':
      return 'it is a folder, not a file';
    default:
      return `it cannot be read (${error.code ?? error.message})`;
  }
}

/**
 * Reads a regular file of at most `maxBytes`, never reading past that: a device (`/dev/zero`), a pipe, a
 * folder or a larger file is refused with `ReadRefusedError` before its contents fill memory. The file is
 * opened without blocking, so a pipe nobody writes to cannot hang the reader.
 */
export function readFileBounded(file: string, maxBytes: number): Buffer {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (error) {
    throw new ReadRefusedError(readFailureReason(error as NodeJS.ErrnoException));
  }
  try {
    const stat = fs.fstatSync(fd);
    if (stat.isDirectory()) throw new ReadRefusedError('it is a folder, not a file');
    if (!stat.isFile()) throw new ReadRefusedError('it is not a regular file (a device, pipe or socket), so it was not read');
    if (stat.size > maxBytes) throw new ReadRefusedError(`it is ${megabytes(stat.size)}, over the ${megabytes(maxBytes)} limit`, stat.size);
    // The size can be wrong (a file still growing, /proc): read one byte past the limit to know.
    const buffer = Buffer.alloc(Math.min(maxBytes + 1, Math.max(stat.size + 1, 64 * 1024)));
    let length = 0;
    let chunk = buffer;
    for (;;) {
      if (length === chunk.length) {
        if (length > maxBytes) throw new ReadRefusedError(`it is over the ${megabytes(maxBytes)} limit`, length);
        const grown = Buffer.alloc(Math.min(maxBytes + 1, chunk.length * 2));
        chunk.copy(grown, 0, 0, length);
        chunk = grown;
      }
      const read = fs.readSync(fd, chunk, length, chunk.length - length, null);
      if (read === 0) break;
      length += read;
    }
    if (length > maxBytes) throw new ReadRefusedError(`it is over the ${megabytes(maxBytes)} limit`, length);
    return chunk.subarray(0, length);
  } catch (error) {
    if (error instanceof ReadRefusedError) throw error;
    throw new ReadRefusedError(readFailureReason(error as NodeJS.ErrnoException));
  } finally {
    fs.closeSync(fd);
  }
}
