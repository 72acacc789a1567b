import assert from "node:assert/strict";
import { generate } from "../../../kernels/generation.ts";
import { encodePrompt } from "../../../text/conversation.ts";
import { ATOMS_PER_NEURO, DEVNET_PARAMS } from "../../../workflows/params.ts";
import { fixtureTextCodec } from "../../text/_fixture.ts";
import { startTask } from "../worker/_process.ts";
import { runInfer, startInferenceNetwork } from "./_network.ts";

const QUESTION = "the answer is seven apples";
const FEE = DEVNET_PARAMS.fee, PRICE = DEVNET_PARAMS.price_per_token;

Deno.test("deno task infer pays a Provider and prints the settled answer, equal to deno task generate token for token", async () => {
  const net = await startInferenceNetwork();
  const provider = await startTask("provider", [
    "--home",
    net.homes.provider,
    "--rpc",
    net.rpc,
    "--poll-ms",
    "100",
  ], {
    listens: false,
  });
  try {
    const r = await runInfer(net, ["--provider", net.accounts.provider, "--prompt", QUESTION, "--json"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const out = JSON.parse(r.stdout);
    const codec = fixtureTextCodec();
    const ids = encodePrompt(codec, [{ role: "user", content: QUESTION }]);
    const expected = generate(net.model, ids, 8, codec.manifest.special_ids.eos).tokens;
    assert.deepEqual(out.prompt_ids, ids);
    assert.deepEqual(out.tokens, expected);
    assert.equal(out.status, "settled");
    assert.equal(out.paid, expected.length * PRICE);
    assert.equal(out.refunded, 8 * PRICE - expected.length * PRICE);
    assert.match(r.stderr, /job [0-9a-f]{64} accepted at height \d+/);
    assert.match(r.stderr, /responded with \d+ tokens; challenge window until height \d+/);
    assert.match(r.stderr, /settled: \d+ tokens paid/);
    // The client paid the fee and exactly the tokens; the provider got its bond back and the tokens.
    assert.equal((await net.chain.account(net.accounts.client)).balance, ATOMS_PER_NEURO - FEE - out.paid);
    assert.equal(
      (await net.chain.account(net.accounts.provider)).balance,
      100 * ATOMS_PER_NEURO - FEE + out.paid,
    );
    // `deno task generate` on the same model and prompt prints the same answer.
    const root = new URL("../../../", import.meta.url).pathname;
    const gen = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `${root}tasks/generate.ts`,
        "--model",
        net.modelRoot,
        "--prompt",
        QUESTION,
        "--objects",
        net.objects,
        "--max-tokens",
        "8",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(new TextDecoder().decode(gen.stdout), out.answer + "\n");
    // The text form of the same question: the answer line, then what was paid.
    const again = await runInfer(net, [
      "--provider",
      net.accounts.provider,
      "--prompt",
      QUESTION,
      "--max-tokens",
      "2",
    ]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /paid \d+ atoms for [12] tokens, refunded \d+ atoms \(job [0-9a-f]{64}\)\n$/);
    // The same idempotency key twice: the second run follows the job the first paid for, paying nothing.
    const keyed = [
      "--provider",
      net.accounts.provider,
      "--prompt",
      QUESTION,
      "--max-tokens",
      "1",
      "--request",
      "k1",
      "--json",
    ];
    const first = JSON.parse((await runInfer(net, keyed)).stdout);
    const before = (await net.chain.account(net.accounts.client)).balance;
    const second = await runInfer(net, keyed);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(JSON.parse(second.stdout).job_id, first.job_id);
    assert.doesNotMatch(second.stderr, /paying at most/);
    assert.equal((await net.chain.account(net.accounts.client)).balance, before);
  } finally {
    await provider.stop();
    await net.close();
  }
});

Deno.test("deno task infer refuses control tokens, overlong prompts and bad options before paying", async () => {
  const net = await startInferenceNetwork();
  try {
    const control = await runInfer(net, [
      "--provider",
      net.accounts.provider,
      "--prompt",
      "hi <|im_end|> there",
    ]);
    assert.equal(control.code, 1);
    assert.match(control.stderr, /^error: .*\(invalid_conversation\)\n$/);
    const long = await runInfer(net, [
      "--provider",
      net.accounts.provider,
      "--prompt",
      "banana ".repeat(200),
    ]);
    assert.equal(long.code, 1);
    assert.match(long.stderr, /expected 2 to 192 \(invalid_conversation\)/);
    const many = await runInfer(net, [
      "--provider",
      net.accounts.provider,
      "--prompt",
      "x",
      "--max-tokens",
      "9",
    ]);
    assert.equal(many.code, 2);
    assert.match(many.stderr, /--max-tokens is 9, expected an integer from 1 to 8/);
    const who = await runInfer(net, ["--provider", "nobody", "--prompt", "x"]);
    assert.equal(who.code, 2);
    const low = await runInfer(net, [
      "--provider",
      net.accounts.provider,
      "--prompt",
      QUESTION,
      "--max-price",
      "10",
    ]);
    assert.equal(low.code, 1);
    assert.match(low.stderr, /max_price is 10, expected at least 800 \(invalid_inference\)/);
    // Nothing was paid but the refused transaction's nothing: the balance is untouched.
    assert.equal((await net.chain.account(net.accounts.client)).balance, ATOMS_PER_NEURO);
  } finally {
    await net.close();
  }
});

Deno.test("a Provider started with --forge token is refuted by the Referee through the head; its honest retry settles", async () => {
  // A 40-block window (6 s): the referee replays the response and challenges it within it on a loaded machine.
  const net = await startInferenceNetwork({ challengeBlocks: 40 });
  const provider = await startTask(
    "provider",
    ["--home", net.homes.forger, "--rpc", net.rpc, "--poll-ms", "100", "--forge", "token"],
    { listens: false },
  );
  const referee = await startTask("referee", [
    "--home",
    net.homes.referee,
    "--rpc",
    net.rpc,
    "--poll-ms",
    "100",
  ], {
    listens: false,
  });
  try {
    const r = await runInfer(net, ["--provider", net.accounts.forger, "--prompt", QUESTION, "--json"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const out = JSON.parse(r.stdout);
    const codec = fixtureTextCodec();
    const ids = encodePrompt(codec, [{ role: "user", content: QUESTION }]);
    assert.deepEqual(out.tokens, generate(net.model, ids, 8, codec.manifest.special_ids.eos).tokens);
    assert.equal(out.responses, 2);
    assert.match(r.stderr, /response challenged \(fraud, stage 1\)/); // one partition, then the head
    assert.match(r.stderr, /^response 1 was refuted$/m);
    assert.doesNotMatch(r.stderr, /^response 2 was refuted$/m);
    await referee.waitFor(/^verdict [0-9a-f]{64} stage 1 mismatch generated token/, 120_000);
    await referee.waitFor(
      /^outcome [0-9a-f]{64} caught: refuted mismatch: generated token(; the job reopened for another response)?$/,
      120_000,
    );
    const forger = (await net.chain.account(net.accounts.forger)).balance;
    assert.equal(forger, 100 * ATOMS_PER_NEURO - 2 * FEE - DEVNET_PARAMS.provider_bond + out.paid);
    assert.equal((await net.chain.account(net.accounts.client)).balance, ATOMS_PER_NEURO - FEE - out.paid);
    assert.ok(provider.lines.some((l) => /^answer .* \(forged\)/.test(l)), provider.lines.join("\n"));
  } finally {
    await referee.stop();
    await provider.stop();
    await net.close();
  }
});
