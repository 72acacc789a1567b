/**
 * Writes a copy of a GGUF file with every tensor dequantised to F32 (same metadata bytes, same names and
 * layout, llama.cpp's permuted Q/K rows kept). Running llama.cpp on it removes the quantisation of activations
 * that its Q4_1 kernels do, so its logits can be compared with ours closely. Test tooling only.
 */
import type { GgufFile } from "../../../kernels/gguf.ts";
import { dequantize } from "../../../kernels/gguf_dequant.ts";

function u32(x: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, x, true);
  return b;
}

function u64(x: number): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(x), true);
  return b;
}

/** Streams the F32 copy of `file` to `path` (written to `path.partial`, then renamed). */
export async function writeF32Gguf(file: GgufFile, path: string): Promise<void> {
  const align = (n: number) => Math.ceil(n / file.alignment) * file.alignment;
  const head: Uint8Array[] = [file.bytes.slice(0, 8), u64(file.tensors.length), u64(file.metadata.size)];
  head.push(file.bytes.slice(24, file.metadataEnd));
  let rel = 0;
  for (const t of file.tensors) {
    head.push(
      u64(new TextEncoder().encode(t.name).length),
      new TextEncoder().encode(t.name),
      u32(t.dims.length),
    );
    for (const d of t.dims) head.push(u64(d));
    head.push(u32(0), u64(rel));
    rel = align(rel + 4 * t.dims.reduce((a, b) => a * b, 1));
  }
  const out = await Deno.open(`${path}.partial`, { write: true, create: true, truncate: true });
  try {
    let written = 0;
    const write = async (b: Uint8Array) => {
      let at = 0;
      while (at < b.length) at += await out.write(b.subarray(at));
      written += b.length;
    };
    for (const b of head) await write(b);
    await write(new Uint8Array(align(written) - written));
    for (const t of file.tensors) {
      const data = dequantize(file, t);
      await write(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      await write(new Uint8Array(align(data.byteLength) - data.byteLength));
    }
  } finally {
    out.close();
  }
  await Deno.rename(`${path}.partial`, path);
}
