import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { PERMISSIONS } from "./permissions.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const tasks =
  (JSON.parse(Deno.readTextFileSync(`${ROOT}deno.json`)) as { tasks: Record<string, string> }).tasks;

Deno.test("every deno.json task runs with exactly the permissions of its row in tests/tasks/permissions.ts", () => {
  const problems: string[] = [];
  for (const [name, command] of Object.entries(tasks)) {
    if (!Object.hasOwn(PERMISSIONS, name)) {
      problems.push(
        `task ${name} has no row: add  ${JSON.stringify(name)}: ${
          JSON.stringify(command)
        },  to tests/tasks/permissions.ts`,
      );
    } else if (PERMISSIONS[name] !== command) {
      problems.push(
        `task ${name} is ${JSON.stringify(command)}, the table says ${
          JSON.stringify(PERMISSIONS[name])
        }: change one of them`,
      );
    }
  }
  for (const name of Object.keys(PERMISSIONS)) {
    if (!Object.hasOwn(tasks, name)) {
      problems.push(`the table has a row for ${name}, which deno.json does not have: remove it`);
    }
  }
  assertEquals(problems, []);
});

Deno.test("no task grants all of the environment, -A, or network beyond 127.0.0.1, except the CometBFT tools and the test and bench runners", () => {
  const broad = Object.entries(tasks).filter(([name, command]) =>
    !["test", "test:slow", "bench", "abci:gen", "cometbft:install"].includes(name) &&
    (/--allow-env(\s|$)/.test(command) || /(^|\s)(-A|--allow-all)(\s|$)/.test(command) ||
      /--allow-net(?!=127\.0\.0\.1(\s|$))/.test(command))
  ).map(([name]) => name);
  assertEquals(broad, []);
});

Deno.test("only tasks that start processes (roles, pip, go, CometBFT) may run them", () => {
  const running = Object.entries(tasks).filter(([, c]) => /--allow-run/.test(c)).map(([n]) => n).sort();
  assertEquals(running, [
    "abci:gen",
    "bench",
    "cometbft:install",
    "devnet",
    "model:fetch-smollm2",
    "test",
    "test:slow",
    "validator", // starts CometBFT under --engine cometbft
  ]);
});
