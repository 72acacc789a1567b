/** `deno task vote`: a validator operator votes on a data proposal with the validator owner's account key. */
import { decodeCanonical, type JsonObject } from "../core/canonical.ts";
import { id } from "../core/digest.ts";
import { type ErrorCode, isErrorCode, ProtocolError } from "../core/errors.ts";
import { isRoot } from "../core/hex.ts";
import { ChainClient } from "../actors/common/chain.ts";
import { Journal } from "../actors/runtime/journal.ts";
import { Submitter } from "../actors/runtime/submit.ts";
import { voteFields } from "../ledger/data/wire.ts";
import { loadKeyFile } from "../ledger/keys.ts";
import { parse, required, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task vote --home VALIDATOR_HOME --rpc URL --proposal ID (--approve | --reject) [--json]

Vote on a data proposal (PROTOCOL §6) as the owner of the validator whose home is VALIDATOR_HOME: signs
vote_data with VALIDATOR_HOME/account.key (the owner's account key, mode 0600), submits it to the validator at
URL and waits until it is committed. An owner votes once for all of its validators, with their summed power,
and cannot change its vote. The exact signed bytes and their hash are journaled in VALIDATOR_HOME/votes.sqlite
before they are sent, so after a lost reply a rerun looks the same transaction up instead of signing a second
vote; a rerun after the vote committed prints the recorded outcome again.

Options:
  --home DIR         the validator's home (holds account.key)
  --rpc URL          a validator's RPC (e.g. http://127.0.0.1:26657)
  --proposal ID      the proposal id (64 hex: the txid of its propose_data, shown by /data/proposal)
  --approve          vote yes
  --reject           vote no
  --json             print {"proposal_id","owner","approve","status","hash","height"} instead of a sentence
  -h, --help         show this help

Exit codes: 0 the vote is committed; 1 it was refused (the code is printed, e.g. already_voted,
not_in_electorate, unknown_proposal, invalid_transition) or its outcome is unknown; 2 a usage mistake.`;

/** The journal intent of a vote: one per chain, proposal and owner, whatever the answer. */
export function voteIntent(chainId: string, proposalId: string, owner: string): string {
  return id({ domain: "neuroshard/vote/v1", chain_id: chainId, proposal_id: proposalId, owner });
}

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    home: { type: "string" },
    rpc: { type: "string" },
    proposal: { type: "string" },
    approve: { type: "boolean" },
    reject: { type: "boolean" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const home = required(values.home, "home").replace(/\/$/, "");
  const rpc = required(values.rpc, "rpc");
  const proposal = required(values.proposal, "proposal");
  if (!isRoot(proposal)) throw new UsageError(`--proposal is ${proposal}, expected 64 lowercase hex`);
  if (values.approve === values.reject) throw new UsageError("give exactly one of --approve and --reject");
  const approve = values.approve === true;
  const key = await loadKeyFile(`${home}/account.key`);
  const chain = new ChainClient(rpc);
  const { chain_id } = await chain.status();
  const journal = Journal.open(`${home}/votes.sqlite`);
  try {
    const submitter = new Submitter(journal, chain.http);
    const intent = voteIntent(chain_id, proposal, key.accountId);
    const earlier = submitter.record(intent);
    if (earlier) {
      const body = (decodeCanonical(earlier.raw) as { body: JsonObject }).body;
      if (body.approve !== approve) {
        throw new ProtocolError(
          "conflicting_operation",
          `Cannot vote ${approve ? "approve" : "reject"} on proposal ${proposal}: this home already signed ${
            body.approve ? "approve" : "reject"
          } (a vote cannot change)`,
        );
      }
    }
    const sub = await submitter.submit(
      intent,
      () => chain.sign(key, "vote_data", voteFields(proposal, approve)),
    );
    if (sub.status !== "committed") {
      const unknown = sub.status === "unknown" || sub.code === null || !isErrorCode(sub.code);
      const message = sub.status === "unknown"
        ? `Cannot vote on proposal ${proposal}: its outcome is unknown after 30 s; run again to look it up`
        : sub.message ?? `Cannot vote on proposal ${proposal}: refused`;
      throw new ProtocolError(unknown ? "unavailable" : sub.code as ErrorCode, message);
    }
    const answer = {
      proposal_id: proposal,
      owner: key.accountId,
      approve,
      status: sub.status,
      hash: sub.hash,
      height: sub.height,
    };
    if (values.json) console.log(JSON.stringify(answer));
    else {console.log(
        `voted ${approve ? "approve" : "reject"} on proposal ${proposal} at height ${sub.height}`,
      );}
  } finally {
    journal.close();
  }
}

if (import.meta.main) await runTask("vote", main);
