/**
 * What the Curator e2e tests read and forge: a curator home's journaled corpus, copying a home's collected
 * corpus to another home, and a proposal built from a home's corpus with one window substituted (a valid
 * batch whose token ids no longer match the raw row), signed and committed.
 */
import { decodeCanonical, type JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ObjectStore } from "../../core/object_store.ts";
import type { Batch } from "../../kernels/batch.ts";
import { buildCohortDocument, type CohortDocument, cohortMetadata } from "../../ledger/data/document.ts";
import { txid } from "../../ledger/envelope.ts";
import { loadKeyFile } from "../../ledger/keys.ts";
import { loadCodec } from "../../text/codec.ts";
import type { ChatMessage } from "../../text/template_render.ts";
import { ChainClient, envelopeOf } from "../../actors/common/chain.ts";
import { buildCohort } from "../../actors/curator/build.ts";
import { RpcCuratorChain } from "../../actors/curator/chain_data.ts";
import { loadSourcesFile } from "../../actors/curator/config.ts";
import { consumedIndex } from "../../actors/curator/consumed.ts";
import { readCorpus, type Tranche } from "../../actors/curator/corpus.ts";
import { Journal } from "../../actors/runtime/journal.ts";
import { Submitter } from "../../actors/runtime/submit.ts";
import { tempDir } from "../actors/runtime/_temp.ts";

/** The tranches a home's journal recorded, sorted by source and start (the order of collection aside). */
export function tranches(home: string): Tranche[] {
  const j = Journal.open(`${home}/journal.sqlite`, { readOnly: true });
  try {
    return [...readCorpus(j).tranches].sort((a, b) =>
      a.source < b.source ? -1 : a.source > b.source ? 1 : a.start - b.start
    );
  } finally {
    j.close();
  }
}

/** Every submission a home's journal holds. */
export function submissions(home: string): { intent: string; hash: string; status: string }[] {
  const j = Journal.open(`${home}/journal.sqlite`, { readOnly: true });
  try {
    return j.db.prepare("SELECT intent, hash, status FROM submissions ORDER BY seq").all() as never;
  } finally {
    j.close();
  }
}

/** Copies `from`'s journal and objects into `to` (whose account key stays its own). */
export async function copyCorpus(from: string, to: string): Promise<void> {
  for (const f of ["journal.sqlite", "journal.sqlite-wal", "journal.sqlite-shm"]) {
    await Deno.copyFile(`${from}/${f}`, `${to}/${f}`).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
  }
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(`${from}/${dir}`)) {
      if (e.isDirectory) {
        await Deno.mkdir(`${to}/${dir}/${e.name}`, { recursive: true });
        await walk(`${dir}/${e.name}`);
      } else await Deno.copyFile(`${from}/${dir}/${e.name}`, `${to}/${dir}/${e.name}`);
    }
  };
  await walk("objects");
}

/**
 * Builds `home`'s cohort, replaces the first window of its first train document with a batch of the same
 * shape whose first target token differs, signs `propose_data` with the home's key and commits it. Returns
 * the proposal id and the forged document's entry.
 */
export async function proposeForged(home: string, rpc: string, sourcesPath: string): Promise<{
  proposal: string;
  victim: { id: string; source: string; row: number };
  document: CohortDocument;
}> {
  const config = await loadSourcesFile(sourcesPath);
  const chain = new RpcCuratorChain(new ChainClient(rpc));
  const facts = await chain.facts();
  const store = new ObjectStore(`${home}/objects`);
  const codec = await loadCodec(store, facts.tokenizer_root);
  const j = Journal.open(`${home}/journal.sqlite`, { readOnly: true });
  const corpus = readCorpus(j);
  j.close();
  const messages = new Map<string, ChatMessage[]>();
  for (const d of corpus.documents) {
    messages.set(
      d.object,
      (decodeCanonical(await store.get(d.object)) as unknown as { messages: ChatMessage[] }).messages,
    );
  }
  const built = buildCohort({
    corpus,
    sources: config.sources,
    facts: { ...facts, consumed: consumedIndex({ documents: [], batches: [] }) },
    codec,
    windows: config.windows,
    train: 12,
    messages: (d) => messages.get(d.object)!,
  });
  const entries = structuredClone(built.document.documents);
  const victim = entries.find((e) => e.role === "train")!;
  const original = built.batches.find((b) => id(b as unknown as JsonValue) === victim.batches[0])!;
  const ids = [...original.input_ids[0]!];
  const t = original.labels[0]!.findIndex((l) => l !== -100) + 1;
  ids[t] = (ids[t]! + 1) % codec.manifest.vocabulary;
  const forged: Batch = { input_ids: [ids], labels: [[...ids.slice(1), -100]] };
  victim.batches = [id(forged as unknown as JsonValue), ...victim.batches.slice(1)];
  const document = buildCohortDocument({ ...built.document, documents: entries });
  const metadata = cohortMetadata(document, [...built.batches.filter((b) => b !== original), forged]);
  const key = await loadKeyFile(`${home}/account.key`);
  const journal = Journal.open(`${tempDir("forger-")}/journal.sqlite`);
  const sub = await new Submitter(journal, chain.client.http).submit(
    "forged",
    () => chain.client.sign(key, "propose_data" as never, { data_root: id(document), metadata }),
  );
  journal.close();
  if (sub.status !== "committed") {
    throw new Error(`the forged proposal was not committed: ${sub.code} ${sub.message}`);
  }
  return {
    proposal: txid(envelopeOf(sub.raw) as never),
    victim: { id: victim.id, source: victim.source, row: victim.row },
    document,
  };
}
