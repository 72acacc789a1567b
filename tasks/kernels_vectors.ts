/**
 * `deno task kernels:vectors`: write, check or print the kernels' conformance vectors (PROTOCOL §10.6).
 */
import { ProtocolError } from "../core/errors.ts";
import { checkVectors, computeVectors } from "../kernels/conformance.ts";
import { parse, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task kernels:vectors [--check | --print] [--file PATH]

Compute the conformance vectors of the deterministic kernels (a forward, a backward, an update and a
4-token generation of a small model of the devnet's shape from fixed seeds, and a grid of exp/log/sin/cos)
that every genesis pins and every role checks at startup (PROTOCOL §10.6), and
  (default)      write them to the file
  --check        compare them with the file; exit 1 naming the first differing entry
  --print        print them as JSON on stdout

Options:
  --file PATH    the vectors file (default genesis/vectors/kernels.json)
  -h, --help     show this help`;

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    check: { type: "boolean" },
    print: { type: "boolean" },
    file: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if (values.check && values.print) throw new UsageError("--check and --print exclude each other");
  const file = values.file ?? "genesis/vectors/kernels.json";
  const vectors = computeVectors();
  if (values.print) {
    console.log(JSON.stringify(vectors));
    return;
  }
  if (values.check) {
    let expected: unknown;
    try {
      expected = JSON.parse(await Deno.readTextFile(file));
    } catch (e) {
      throw new UsageError(`Cannot read vectors ${file}: ${(e as Error).message}`);
    }
    const result = checkVectors(expected as never, vectors);
    if (!result.ok) throw new ProtocolError(result.code, result.message);
    console.log(`ok: the kernels reproduce ${file}`);
    return;
  }
  await Deno.writeTextFile(file, JSON.stringify(vectors, null, 2) + "\n");
  console.log(`wrote ${file}`);
}

await runTask("kernels:vectors", main);
