/**
 * `deno task docs`: writes the Mermaid diagram page of every registered workflow machine into
 * `docs/workflows/<name>.md`; with `--check`, writes nothing and exits 1 when a page is missing or stale.
 */
import { MACHINE_FILES, MACHINES } from "../workflows/registry.ts";
import { DIAGRAM_DIR, diagramDoc, diagramPath, INDEX_PATH, indexDoc } from "../workflows/diagram_doc.ts";
import { parse, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task docs [--check] [--root DIR]

Write a Mermaid state diagram page for every workflow machine (workflows/registry.ts) into
${DIAGRAM_DIR}/<name>.md, and an index page ${INDEX_PATH}.

Options:
  --check       write nothing; list missing or stale pages and exit 1 if there are any
  --root DIR    the repository root (default: the current directory)
  -h, --help    show this help

Exit status: 0 done (or all pages current), 1 stale pages with --check or a write error, 2 usage error.`;

async function readOrNull(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    check: { type: "boolean" },
    root: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const root = values.root ?? ".";
  const stale: string[] = [];
  const pages: [string, string][] = Object.entries(MACHINES).map(([name, machine]) => [
    diagramPath(name),
    diagramDoc(machine, MACHINE_FILES[name] ?? `workflows/${name}.ts`),
  ]);
  pages.push([INDEX_PATH, indexDoc(MACHINES, MACHINE_FILES)]);
  for (const [relative, text] of pages) {
    const path = `${root}/${relative}`;
    const current = await readOrNull(path);
    if (current === text) {
      console.log(`current  ${relative}`);
      continue;
    }
    if (values.check) {
      stale.push(relative);
      console.log(`${current === null ? "missing" : "stale  "}  ${relative}`);
      continue;
    }
    await Deno.mkdir(`${root}/${DIAGRAM_DIR}`, { recursive: true });
    await Deno.writeTextFile(path, text);
    console.log(`wrote    ${relative}`);
  }
  if (stale.length > 0) {
    console.error(`error: ${stale.length} diagram page(s) are stale; run \`deno task docs\``);
    Deno.exit(1);
  }
}

if (import.meta.main) await runTask("docs", main);
