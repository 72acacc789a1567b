/**
 * A minimal writer of ONNX `ModelProto` bytes (protobuf, the fields of `onnx.proto` that a graph of tensors,
 * nodes and attributes needs), so that the non-consensus onnxruntime path can run a graph built here from our
 * own weights with no converter or Python. Messages are kept as lists of byte parts and joined once, so a
 * graph whose initializers hold a hundred megabytes is never copied piece by piece.
 *
 * @example
 * ```ts
 * import { onnxModel, OnnxGraph } from "./onnx_proto.ts";
 * const g = new OnnxGraph("add");
 * g.input("a", "float", [2]); g.input("b", "float", [2]); g.output("c", "float", [2]);
 * g.node("Add", ["a", "b"], ["c"]);
 * const bytes = onnxModel(g, { "": 17 }); // ready for InferenceSession.create(bytes)
 * ```
 * @module
 */

/** Element types used here, with their `TensorProto.DataType` numbers. */
export const ONNX_TYPES = { float: 1, uint8: 2, int64: 7 } as const;
/** An element type name of `ONNX_TYPES`. */
export type OnnxType = keyof typeof ONNX_TYPES;

/** One protobuf message under construction: its parts in order and their total length. */
class Message {
  readonly parts: Uint8Array[] = [];
  length = 0;

  #push(bytes: Uint8Array): void {
    this.parts.push(bytes);
    this.length += bytes.length;
  }

  #varint(n: number | bigint): void {
    let v = BigInt.asUintN(64, BigInt(n));
    const out: number[] = [];
    while (v >= 0x80n) {
      out.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    out.push(Number(v));
    this.#push(Uint8Array.from(out));
  }

  /** A varint field (int32, int64, enum): negative values as their 64-bit two's complement, as protobuf does. */
  int(field: number, v: number): this {
    this.#varint(field << 3);
    this.#varint(v);
    return this;
  }

  /** A 32-bit float field (wire type 5). */
  float(field: number, v: number): this {
    this.#varint((field << 3) | 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    this.#push(b);
    return this;
  }

  /** A length-delimited field: a string, raw bytes (kept, not copied) or a nested message. */
  bytes(field: number, body: string | Uint8Array | Message): this {
    const b = typeof body === "string" ? new TextEncoder().encode(body) : body;
    this.#varint((field << 3) | 2);
    this.#varint(b.length);
    if (b instanceof Message) { for (const p of b.parts) this.#push(p); }
    else this.#push(b);
    return this;
  }

  /** The message's bytes, joined once. */
  join(): Uint8Array<ArrayBuffer> {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

/** An attribute value: a number is an int unless `float` wraps it; an array is ints. */
export type OnnxAttribute = number | { readonly float: number } | readonly number[];

/** A dimension: a fixed size or a named, dynamic one. */
export type OnnxDim = number | string;

function valueInfo(name: string, type: OnnxType, dims: readonly OnnxDim[]): Message {
  const shape = new Message();
  for (const d of dims) {
    shape.bytes(1, typeof d === "number" ? new Message().int(1, d) : new Message().bytes(2, d));
  }
  const tensor = new Message().int(1, ONNX_TYPES[type]).bytes(2, shape);
  return new Message().bytes(1, name).bytes(2, new Message().bytes(1, tensor));
}

/** A graph under construction: inputs, outputs, initializers and nodes, in the order they are added. */
export class OnnxGraph {
  readonly #nodes = new Message();
  readonly #initializers = new Message();
  readonly #inputs = new Message();
  readonly #outputs = new Message();
  readonly #name: string;
  #count = 0;

  constructor(name: string) {
    this.#name = name;
  }

  /** Declares a graph input. */
  input(name: string, type: OnnxType, dims: readonly OnnxDim[]): string {
    this.#inputs.bytes(11, valueInfo(name, type, dims));
    return name;
  }

  /** Declares a graph output. */
  output(name: string, type: OnnxType, dims: readonly OnnxDim[]): string {
    this.#outputs.bytes(12, valueInfo(name, type, dims));
    return name;
  }

  /** Adds a constant tensor (its bytes are kept, not copied, until the model is joined). */
  initializer(name: string, type: OnnxType, dims: readonly number[], data: ArrayBufferView): string {
    const t = new Message();
    for (const d of dims) t.int(1, d);
    t.int(2, ONNX_TYPES[type]).bytes(8, name);
    t.bytes(9, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    this.#initializers.bytes(5, t);
    return name;
  }

  /** A fresh value name with `prefix`. */
  fresh(prefix: string): string {
    return `${prefix}_${this.#count++}`;
  }

  /**
   * Adds a node; `outputs` may be a count, in which case fresh names are made. Returns the output names.
   */
  node(
    op: string,
    inputs: readonly string[],
    outputs: readonly string[] | number = 1,
    attributes: Readonly<Record<string, OnnxAttribute>> = {},
    domain = "",
  ): string[] {
    const names = typeof outputs === "number"
      ? Array.from({ length: outputs }, () => this.fresh(op.toLowerCase()))
      : [...outputs];
    const n = new Message();
    for (const i of inputs) n.bytes(1, i);
    for (const o of names) n.bytes(2, o);
    n.bytes(3, this.fresh(`n_${op}`)).bytes(4, op);
    for (const [key, v] of Object.entries(attributes)) {
      const a = new Message().bytes(1, key);
      if (typeof v === "number") a.int(3, v).int(20, 2); // INT
      else if (Array.isArray(v)) {
        for (const x of v) a.int(8, x);
        a.int(20, 7); // INTS
      } else a.float(2, (v as { float: number }).float).int(20, 1); // FLOAT
      n.bytes(5, a);
    }
    if (domain !== "") n.bytes(7, domain);
    this.#nodes.bytes(1, n);
    return names;
  }

  /** The `GraphProto` message. */
  message(): Message {
    const g = new Message();
    for (const p of this.#nodes.parts) g.parts.push(p);
    g.length += this.#nodes.length;
    g.bytes(2, this.#name);
    for (const part of [this.#initializers, this.#inputs, this.#outputs]) {
      for (const p of part.parts) g.parts.push(p);
      g.length += part.length;
    }
    return g;
  }
}

/**
 * `ModelProto` bytes of `graph` (IR version 8) importing the operator sets `opsets` (domain → version, "" the
 * default domain).
 */
export function onnxModel(
  graph: OnnxGraph,
  opsets: Readonly<Record<string, number>>,
): Uint8Array<ArrayBuffer> {
  const m = new Message().int(1, 8).bytes(2, "neuroshard");
  m.bytes(7, graph.message());
  for (const [domain, version] of Object.entries(opsets)) {
    m.bytes(8, new Message().bytes(1, domain).int(2, version));
  }
  return m.join();
}
