/**
 * Shared pieces of the ABCI adapter tests: an app served on a fresh loopback TCP port (the transport the
 * validator uses with CometBFT, and the one `deno task test`'s `--allow-net=127.0.0.1` permits), and request
 * builders.
 */
import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { canonicalBytes } from "../../../core/canonical.ts";
import { fromHex } from "../../../core/hex.ts";
import type { LedgerApp } from "../../../ledger/app.ts";
import { AbciApplication, cometAppState } from "../../../ledger/abci/application.ts";
import { type AbciServer, serveAbci } from "../../../ledger/abci/server.ts";
import { cometAddress } from "../../../ledger/abci/wire_values.ts";
import { BlockIDFlag } from "../../../ledger/abci/gen/tendermint/types/validator_pb.ts";
import type { RequestValue } from "./_client.ts";
import type { MisbehaviorType } from "../../../ledger/abci/gen/tendermint/abci/types_pb.ts";

/** A piece of misbehaviour as a FinalizeBlock request carries it. */
export interface MisbehaviorInit {
  type: MisbehaviorType;
  validator: { address: Uint8Array; power: bigint };
  height: bigint;
  time: ReturnType<typeof timestamp>;
  totalVotingPower: bigint;
}
import { CHAIN } from "../_fixture.ts";

/** An app served over ABCI on 127.0.0.1 at a port the system chose. */
export interface Served {
  readonly server: AbciServer;
  readonly abci: AbciApplication;
  readonly logs: string[];
  close(): Promise<void>;
}

/** Serves `app` (closed with the server). */
export function serve(app: LedgerApp, maxFrameBytes?: number): Promise<Served> {
  const logs: string[] = [];
  const abci = new AbciApplication(app, (l) => logs.push(l));
  const server = serveAbci({ transport: "tcp", hostname: "127.0.0.1", port: 0 }, (r) => abci.handle(r), {
    log: (l) => logs.push(l),
    ...(maxFrameBytes ? { maxFrameBytes } : {}),
  });
  return Promise.resolve({
    server,
    abci,
    logs,
    async close() {
      await server.close();
      app.close();
    },
  });
}

/** A protobuf timestamp of `ms` since the epoch. */
export function timestamp(ms: number) {
  return create(TimestampSchema, { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 });
}

/** The InitChain request CometBFT sends for `genesisId` on the test chain. */
export function initChain(genesisId: string, chainId = CHAIN): RequestValue {
  return {
    case: "initChain",
    value: {
      chainId,
      initialHeight: 1n,
      appStateBytes: canonicalBytes(cometAppState(genesisId)),
      validators: [],
      time: timestamp(0),
    },
  };
}

/** A FinalizeBlock request: `committers` voted COMMIT for the previous block, `absent` did not. */
export function finalizeBlock(
  height: number,
  time: number,
  txs: Uint8Array[],
  committers: string[],
  absent: string[] = [],
  misbehavior: MisbehaviorInit[] = [],
): RequestValue {
  const vote = (key: string, flag: BlockIDFlag) => ({
    validator: { address: fromHex(cometAddress(key).toLowerCase()), power: 1n },
    blockIdFlag: flag,
  });
  return {
    case: "finalizeBlock",
    value: {
      height: BigInt(height),
      time: timestamp(time),
      txs,
      decidedLastCommit: {
        round: 0,
        votes: [
          ...committers.map((k) => vote(k, BlockIDFlag.BLOCK_ID_FLAG_COMMIT)),
          ...absent.map((k) => vote(k, BlockIDFlag.BLOCK_ID_FLAG_ABSENT)),
        ],
      },
      misbehavior,
      hash: new Uint8Array(32),
      proposerAddress: new Uint8Array(20),
    },
  };
}
