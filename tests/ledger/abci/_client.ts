/** A minimal ABCI socket client for tests: sends `Request`s, flushes, and reads the `Response`s in order. */
import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";

/** What a request can carry. */
export type RequestValue = NonNullable<MessageInitShape<typeof RequestSchema>["value"]>;
import { encodeFrame, FrameReader } from "../../../ledger/abci/frames.ts";
import {
  RequestSchema,
  type Response,
  ResponseSchema,
} from "../../../ledger/abci/gen/tendermint/abci/types_pb.ts";

/** One connection to an ABCI server. */
export class AbciTestClient {
  readonly #conn: Deno.Conn;
  readonly #reader = new FrameReader(256 * 1024 * 1024);
  readonly #frames: Uint8Array[] = [];
  readonly #stream: ReadableStreamDefaultReader<Uint8Array>;

  private constructor(conn: Deno.Conn) {
    this.#conn = conn;
    this.#stream = conn.readable.getReader();
  }

  /** Connects to `tcp://host:port` or `unix://path`. */
  static async connect(proxyApp: string): Promise<AbciTestClient> {
    if (proxyApp.startsWith("unix://")) {
      return new AbciTestClient(await Deno.connect({ transport: "unix", path: proxyApp.slice(7) }));
    }
    const [hostname, port] = proxyApp.slice(6).split(":");
    return new AbciTestClient(await Deno.connect({ hostname: hostname!, port: Number(port) }));
  }

  /** Writes raw bytes (tests of framing). */
  async writeRaw(bytes: Uint8Array): Promise<void> {
    let at = 0;
    while (at < bytes.length) at += await this.#conn.write(bytes.subarray(at));
  }

  /** The frame of one request. */
  static frame(value: RequestValue): Uint8Array {
    return encodeFrame(toBinary(RequestSchema, create(RequestSchema, { value })));
  }

  /** Reads the next response; null when the server closed the connection. */
  async read(): Promise<Response | null> {
    while (this.#frames.length === 0) {
      const { value, done } = await this.#stream.read();
      if (done) return null;
      this.#frames.push(...this.#reader.push(value));
    }
    return fromBinary(ResponseSchema, this.#frames.shift()!);
  }

  /** Sends one request and a flush; returns the request's response (the flush answer is consumed). */
  async call(value: RequestValue): Promise<Response["value"]> {
    await this.writeRaw(AbciTestClient.frame(value));
    await this.writeRaw(AbciTestClient.frame({ case: "flush", value: {} }));
    const r = await this.read();
    const f = await this.read();
    if (!r || f?.value.case !== "flush") throw new Error("Cannot call: the server closed the connection");
    return r.value;
  }

  /** Closes the connection. */
  close(): void {
    try {
      this.#conn.close();
    } catch {
      // already closed
    }
  }
}
