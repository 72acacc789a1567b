import assert from "node:assert/strict";
import { sponsorSpec } from "../../devnet/sponsor_spec.ts";

Deno.test("sponsorSpec: the sponsor child every devnet starts, its work and budget in place", () => {
  const spec = sponsorSpec({
    home: "/d/sponsor",
    rpc: "http://127.0.0.1:9",
    workers: "/d/workers.json",
    budget: 3,
    work: ["--grow", "4"],
  });
  assert.deepEqual(spec, {
    name: "sponsor",
    task: "sponsor",
    listens: false,
    expectsExit: true,
    args: [
      "--home",
      "/d/sponsor",
      "--rpc",
      "http://127.0.0.1:9",
      "--workers",
      "/d/workers.json",
      "--grow",
      "4",
      "--budget",
      "3",
      "--json",
    ],
  });
});
