/**
 * Decodes the base64 that `deno task build:wasm` embeds for each module (kept apart from `assemble.ts`, which
 * imports the assembler, so that loading the kernels never loads wabt).
 * @module
 */

/** The bytes of a base64 string. */
export function decodeBase64(b64: string): Uint8Array<ArrayBuffer> {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}
