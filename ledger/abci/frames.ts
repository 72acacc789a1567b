/**
 * ABCI socket framing: every message is its protobuf bytes preceded by their length as an unsigned varint
 * (protobuf's base-128 encoding, as CometBFT 0.38 writes it). `FrameReader` takes bytes as they arrive (a frame
 * may be split across reads, or several may come in one) and yields whole frames; a length above the bound or a
 * varint longer than needed for it is an error, after which the connection must be closed.
 *
 * @example
 * ```ts
 * import { encodeFrame, FrameReader } from "./frames.ts";
 * const reader = new FrameReader(1024);
 * const frames = reader.push(encodeFrame(new Uint8Array([1, 2, 3]))); // [Uint8Array [1, 2, 3]]
 * ```
 */

/** Thrown when the bytes on a connection are not a well-formed, bounded frame sequence. */
export class FrameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FrameError";
  }
}

/** The unsigned varint encoding of `n` (0 ≤ n ≤ 2^53−1). */
export function encodeUvarint(n: number): Uint8Array {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return new Uint8Array(out);
}

/** `bytes` with its length prefix. */
export function encodeFrame(bytes: Uint8Array): Uint8Array {
  const prefix = encodeUvarint(bytes.length);
  const out = new Uint8Array(prefix.length + bytes.length);
  out.set(prefix);
  out.set(bytes, prefix.length);
  return out;
}

/** Splits a byte stream into frames of at most `maxFrameBytes`. */
export class FrameReader {
  readonly #max: number;
  readonly #maxPrefix: number;
  #buf = new Uint8Array(0);

  constructor(maxFrameBytes: number) {
    this.#max = maxFrameBytes;
    this.#maxPrefix = encodeUvarint(maxFrameBytes).length;
  }

  /** Bytes received but not yet part of a whole frame. */
  get buffered(): number {
    return this.#buf.length;
  }

  /** Appends `chunk` and returns every frame now complete, in order; throws `FrameError` on bad input. */
  push(chunk: Uint8Array): Uint8Array[] {
    const joined = new Uint8Array(this.#buf.length + chunk.length);
    joined.set(this.#buf);
    joined.set(chunk, this.#buf.length);
    const frames: Uint8Array[] = [];
    let at = 0;
    while (at < joined.length) {
      let length = 0;
      let scale = 1;
      let i = at;
      let complete = false;
      while (i < joined.length) {
        const b = joined[i]!;
        i++;
        length += (b & 0x7f) * scale;
        scale *= 0x80;
        if ((b & 0x80) === 0) {
          complete = true;
          break;
        }
        if (i - at >= this.#maxPrefix) {
          throw new FrameError(`Cannot read frame: length prefix is longer than ${this.#maxPrefix} bytes`);
        }
      }
      if (!complete) break;
      if (length > this.#max) {
        throw new FrameError(`Cannot read frame: length is ${length} bytes, bound is ${this.#max}`);
      }
      if (joined.length - i < length) break;
      frames.push(joined.slice(i, i + length));
      at = i + length;
    }
    this.#buf = joined.slice(at);
    return frames;
  }
}
