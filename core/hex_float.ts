/**
 * Exact hex-float strings for float64 values committed in canonical JSON (PROTOCOL §1).
 *
 * The one canonical spelling is Python's `float.hex()`: `[-]0x1.<13 hex digits>p<sign><exponent>` for normal
 * numbers, `[-]0x0.<13 hex digits>p-1022` for subnormals and `[-]0x0.0p+0` for zero. Lowercase, every mantissa
 * digit written, the exponent always signed. Decoding accepts only that spelling of a finite value.
 *
 * @example
 * ```ts
 * import { fromHexFloat, toHexFloat } from "./hex_float.ts";
 * toHexFloat(1); // "0x1.0000000000000p+0"
 * fromHexFloat("0x1.8000000000000p+1"); // 3
 * ```
 */
import { ProtocolError } from "./errors.ts";

const view = new DataView(new ArrayBuffer(8));

/** The canonical hex-float spelling of a finite float64. */
export function toHexFloat(x: number): string {
  if (!Number.isFinite(x)) {
    throw new ProtocolError("invalid_hex_float", `Cannot write hex float: ${x} is not finite`);
  }
  view.setFloat64(0, x);
  const hi = view.getUint32(0);
  const lo = view.getUint32(4);
  const sign = hi >>> 31 ? "-" : "";
  const biased = (hi >>> 20) & 0x7ff;
  const mantHi = hi & 0xfffff;
  if (biased === 0 && mantHi === 0 && lo === 0) return `${sign}0x0.0p+0`;
  const digits = mantHi.toString(16).padStart(5, "0") + lo.toString(16).padStart(8, "0");
  const lead = biased === 0 ? "0" : "1";
  const exponent = biased === 0 ? -1022 : biased - 1023;
  return `${sign}0x${lead}.${digits}p${exponent < 0 ? "-" : "+"}${Math.abs(exponent)}`;
}

const PATTERN = /^(-?)0x([01])\.([0-9a-f]{13}|0)p([+-])([0-9]{1,4})$/;

/** Parses a canonical hex-float string; `invalid_hex_float` for any other spelling. */
export function fromHexFloat(text: string): number {
  const m = typeof text === "string" ? PATTERN.exec(text) : null;
  if (!m) throw bad(text);
  const [, sign, lead, digits, expSign, expDigits] = m as unknown as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const exponent = (expSign === "-" ? -1 : 1) * Number(expDigits);
  let value: number;
  if (digits === "0") {
    value = 0;
  } else {
    let biased: number;
    if (lead === "1") {
      if (exponent < -1022 || exponent > 1023) throw bad(text);
      biased = exponent + 1023;
    } else {
      if (exponent !== -1022) throw bad(text);
      biased = 0;
    }
    view.setUint32(0, (biased << 20) | parseInt(digits.slice(0, 5), 16));
    view.setUint32(4, parseInt(digits.slice(5), 16));
    value = view.getFloat64(0);
  }
  if (sign === "-") value = -value;
  if (toHexFloat(value) !== text) throw bad(text);
  return value;
}

function bad(text: unknown): ProtocolError {
  return new ProtocolError(
    "invalid_hex_float",
    `Cannot read hex float: ${JSON.stringify(text)} is not canonical`,
  );
}
