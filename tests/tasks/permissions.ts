/**
 * The permission table: every task of `deno.json` and the exact command it runs, so that a change of any
 * task's permissions is a reviewed change of this table too (`permissions_test.ts`). Roles and why each
 * needs what it has: README "Permissions by role". A task added to `deno.json` needs its row here.
 *
 * Deno's flags cannot say "read and write only under --home": `--allow-read`/`--allow-write` take fixed paths,
 * and homes, genesis files and object stores are wherever the operator puts them. So tasks that touch files
 * get `--allow-read`/`--allow-write` without paths (the narrowest static set that works for any --home), and
 * tasks that need no files (`status`) or only read them (`transfer`, `codec:inspect`) get nothing or read only.
 * Network is 127.0.0.1 only; `--allow-run` only where a process is started; environment variables by name.
 */
export const PERMISSIONS: Readonly<Record<string, string>> = {
  "kernels:vectors":
    "deno run --allow-read --allow-write=genesis/vectors --allow-env=NEURO_KERNELS tasks/kernels_vectors.ts",
  "test":
    "deno test --allow-read --allow-write --allow-env --allow-run --allow-net=127.0.0.1 --allow-sys --allow-ffi --parallel tests/",
  "test:slow":
    "NEURO_SLOW=1 deno test --allow-read --allow-write --allow-env --allow-run --allow-net=127.0.0.1 --allow-sys --allow-ffi tests/",
  "docs": "deno run --allow-read --allow-write tasks/docs.ts",
  "check": "deno check .",
  "lint": "deno lint",
  "fmt": "deno fmt",
  "bench":
    "deno bench --allow-read --allow-write --allow-env --allow-run --allow-net=127.0.0.1 --allow-sys --allow-ffi bench/",
  "account": "deno run --allow-read --allow-write tasks/account.ts",
  "build:wasm": "deno run --allow-read --allow-write=kernels/wasm tasks/build_wasm.ts",
  "tokenizer:train": "deno run --allow-read --allow-write tasks/tokenizer_train.ts",
  "codec:inspect": "deno run --allow-read tasks/codec_inspect.ts",
  "devnet":
    "deno run --allow-read --allow-write --allow-env=NEURO_KERNELS --allow-net=127.0.0.1 --allow-run tasks/devnet.ts",
  "devnet:codec": "deno run --allow-read --allow-write tasks/devnet_codec.ts",
  "model:import": "deno run --allow-read --allow-write tasks/model_import.ts",
  // FFI only for the onnxruntime drafter's addon (`--draft N`), in its package folder
  "generate":
    "deno run --allow-read --allow-write --allow-env=NEURO_KERNELS --allow-ffi=node_modules/.deno/onnxruntime-node@1.30.0 tasks/generate.ts",
  // FFI only for the onnxruntime drafter's addon (`--draft N`), in its package folder
  "chat":
    "deno run --allow-read --allow-write --allow-env=NEURO_KERNELS --allow-ffi=node_modules/.deno/onnxruntime-node@1.30.0 tasks/chat.ts",
  "model:fetch-smollm2": "deno run --allow-read --allow-write --allow-run tasks/model_fetch_smollm2.ts",
  "genesis":
    "deno run --allow-read --allow-write --allow-env=NEURO_KERNELS,GO,NEURO_COMETBFT --allow-net=127.0.0.1 tasks/genesis.ts",
  "validator":
    "deno run --allow-read --allow-write --allow-env=NEURO_KERNELS,GO,NEURO_COMETBFT --allow-net=127.0.0.1 --allow-run tasks/validator.ts",
  "vote": "deno run --allow-read --allow-write --allow-env=NEURO_KERNELS --allow-net=127.0.0.1 tasks/vote.ts",
  "transfer": "deno run --allow-read --allow-net=127.0.0.1 tasks/transfer.ts",
  "status": "deno run --allow-net=127.0.0.1 tasks/status.ts",
  "replay": "deno run --allow-read --allow-write tasks/replay.ts",
  "journal": "deno run --allow-read --allow-write tasks/journal.ts",
  "worker":
    "deno run --allow-read --allow-write --allow-env=NEURO_KERNELS --allow-net=127.0.0.1 tasks/worker.ts",
  "sponsor":
    "deno run --allow-read --allow-write --allow-env=NEURO_KERNELS --allow-net=127.0.0.1 tasks/sponsor.ts",
  "explorer": "deno run --allow-read --allow-env=NEURO_KERNELS --allow-net=127.0.0.1 tasks/explorer.ts",
  "referee":
    "deno run --allow-read --allow-write --allow-env=NEURO_KERNELS --allow-net=127.0.0.1 tasks/referee.ts",
  "evaluator":
    "deno run --allow-read --allow-write --allow-env=NEURO_KERNELS --allow-net=127.0.0.1 tasks/evaluator.ts",
  "provider":
    "deno run --allow-read --allow-write --allow-env=NEURO_KERNELS --allow-net=127.0.0.1 tasks/provider.ts",
  "infer":
    "deno run --allow-read --allow-write --allow-env=NEURO_KERNELS --allow-net=127.0.0.1 tasks/infer.ts",
  "abci:gen": "deno run --allow-read --allow-write --allow-env --allow-run tasks/abci_gen.ts",
  "cometbft:install": "deno run --allow-read --allow-write --allow-env --allow-run tasks/cometbft_install.ts",
  "curator":
    "deno run --allow-read --allow-write --allow-env=NEURO_KERNELS --allow-net=127.0.0.1 tasks/curator.ts",
  "epoch":
    "deno run --allow-read --allow-write --allow-env=NEURO_KERNELS --allow-net=127.0.0.1 tasks/epoch.ts",
};
