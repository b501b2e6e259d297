/**
 * Typed arrays for what a search keeps across turns (stemmed passages, their shingles), cut from shared
 * 1 MB buffers. An array of its own is two objects on V8's heap (the array and its buffer) and a memory
 * allocation outside it; a view into a shared buffer is one object. Every object kept survives into V8's
 * old generation, and V8 widens its young generation for what survives (docs/benchmarks.md, issue 50).
 * A buffer is freed once no view into it is kept, so what the caches drop in the order they kept it
 * frees whole buffers.
 */

const BLOCK_BYTES = 1 << 20;
/** Larger arrays get a buffer of their own, so a block is not left mostly empty. */
const OWN_BUFFER_BYTES = BLOCK_BYTES / 8;

let block = new ArrayBuffer(0);
let used = 0;

/** `bytes` of zeros at a multiple of `align`, in the current block or a new one. */
function take(bytes: number, align: number): { buffer: ArrayBuffer; at: number } {
  if (bytes > OWN_BUFFER_BYTES) return { buffer: new ArrayBuffer(bytes), at: 0 };
  let at = Math.ceil(used / align) * align;
  if (at + bytes > block.byteLength) {
    block = new ArrayBuffer(BLOCK_BYTES);
    at = 0;
  }
  used = at + bytes;
  return { buffer: block, at };
}

/** Two Int32Arrays of `length` each, side by side in one kept buffer. */
export function keptInt32Pair(length: number): [Int32Array, Int32Array] {
  const { buffer, at } = take(length * 8, 4);
  return [new Int32Array(buffer, at, length), new Int32Array(buffer, at + length * 4, length)];
}

export function keptFloat64(length: number): Float64Array {
  const { buffer, at } = take(length * 8, 8);
  return new Float64Array(buffer, at, length);
}

export function keptUint32(length: number): Uint32Array {
  const { buffer, at } = take(length * 4, 4);
  return new Uint32Array(buffer, at, length);
}
