/**
 * `deno task validator bond|unbond|withdraw`: an operator's validator transactions, signed with the home's
 * account key (the owner) and, for a bond, the possession proof of its consensus key. Each is submitted
 * through the journaled `Submitter` (`<home>/operator-journal.sqlite`): the exact signed bytes are recorded
 * before sending, a lost reply is resolved by looking the hash up, and running the same command again
 * returns the recorded outcome instead of signing anew. Only a rejected attempt (e.g. a withdrawal before
 * the evidence windows) is followed by a fresh one.
 */
import { id } from "../core/digest.ts";
import { canonicalBytes } from "../core/canonical.ts";
import { Journal } from "../actors/runtime/journal.ts";
import { type Submission, Submitter } from "../actors/runtime/submit.ts";
import { TransportClient } from "../actors/runtime/transport.ts";
import { loadConsensusKeyFile, possessionMessage, signEd25519 } from "../ledger/consensus_key.ts";
import { signBody, type TxBody } from "../ledger/envelope.ts";
import { loadKeyFile } from "../ledger/keys.ts";
import { LedgerClient } from "../ledger/rpc/client.ts";

/** The three operations. */
export type ValidatorOp = "bond" | "unbond" | "withdraw";

/** Signs and submits `op` for the validator of `home` through `rpc`; returns the settled submission. */
export async function runValidatorOp(
  op: ValidatorOp,
  home: string,
  rpc: string,
  amount: number | null,
): Promise<Submission> {
  const owner = await loadKeyFile(`${home}/account.key`);
  const consensus = await loadConsensusKeyFile(`${home}/consensus.key`);
  const client = new LedgerClient(rpc);
  const journal = Journal.open(`${home}/operator-journal.sqlite`);
  try {
    const submitter = new Submitter(journal, new TransportClient(rpc, null), { confirmMs: 60_000 });
    let attempt = 0;
    const intentOf = (n: number) => id({ op, consensus_key: consensus.publicKey, attempt: n });
    while (submitter.record(intentOf(attempt))?.status === "rejected") attempt++;
    return await submitter.submit(intentOf(attempt), async () => {
      const chainId = (await client.status()).chain_id;
      const nonce = (await client.account(owner.accountId)).nonce;
      const base = { chain_id: chainId, nonce, consensus_key: consensus.publicKey };
      const body: TxBody = op === "bond"
        ? {
          ...base,
          kind: "bond",
          amount: amount!,
          possession: signEd25519(
            consensus,
            possessionMessage({
              chain_id: chainId,
              owner: owner.accountId,
              consensus_key: consensus.publicKey,
              amount: amount!,
              nonce,
            }),
          ),
        }
        : { ...base, kind: op };
      return canonicalBytes(signBody(body, owner));
    });
  } finally {
    journal.close();
  }
}
