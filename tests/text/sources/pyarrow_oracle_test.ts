/**
 * Oracle: a Parquet file written by another library (pyarrow, in a venv under `.cache/venv-parquet` built with
 * pip on first run) reads to the same documents as its JSON Lines twin, with every codec pyarrow offers that
 * hyparquet-compressors decodes and with several row groups. Ignored, with the reason, where pip cannot
 * install pyarrow.
 */
import { sha256Hex } from "../../../core/digest.ts";
import { openSource } from "../../../text/sources/source.ts";
import { rowDocument } from "../../../text/sources/document.ts";
import { parseSourceSpec } from "../../../text/sources/spec.ts";
import { jsonlBytes } from "../../../text/sources/write.ts";
import { assertEquals } from "../../_assert.ts";
import { pythonVenv } from "../../_python_venv.ts";
import { tempDir } from "../../actors/runtime/_temp.ts";
import { chatRows } from "./_rows.ts";

const oracle = await pythonVenv("venv-parquet", ["pyarrow==26.0.1"]);
if (oracle.skip !== null) console.log(`pyarrow oracle test ignored: ${oracle.skip}`);

const SCRIPT = `
import json, sys
import pyarrow as pa, pyarrow.parquet as pq
data = json.load(open(sys.argv[1], encoding="utf-8"))
msg = pa.struct([("role", pa.string()), ("content", pa.string())])
table = pa.table({"messages": pa.array(data["rows"], type=pa.list_(msg)),
                  "prompt_id": pa.array([str(i) for i in range(len(data["rows"]))])})
for codec in data["codecs"]:
    pq.write_table(table, f"{data['dir']}/{codec}.parquet", compression=codec, row_group_size=7)
json.dump({"version": pa.__version__}, open(sys.argv[2], "w"))
`;

Deno.test({
  name: "a pyarrow-written Parquet file reads to the same documents as its JSON Lines twin",
  ignore: oracle.skip !== null,
  fn: async () => {
    const rows = chatRows(30);
    const dir = tempDir("pyarrow-");
    const codecs = ["snappy", "gzip", "zstd", "brotli", "lz4", "none"];
    await oracle.python(SCRIPT, { rows, dir, codecs });
    const base = { name: "hf/chat", revision: "r1", split: "train", license: "mit", role: "train" };
    const twin = jsonlBytes(rows);
    await Deno.writeFile(`${dir}/twin.jsonl`, twin);
    const j = await openSource(
      parseSourceSpec({ ...base, format: "jsonl", sha256: sha256Hex(twin) }),
      `${dir}/twin.jsonl`,
    );
    const expected = (await j.read(0, j.count)).map(rowDocument);
    for (const codec of codecs) {
      const path = `${dir}/${codec}.parquet`;
      const bytes = await Deno.readFile(path);
      const p = await openSource(
        parseSourceSpec({ ...base, format: "parquet", sha256: sha256Hex(bytes) }),
        path,
      );
      assertEquals(p.count, 30, codec);
      assertEquals((await p.read(0, p.count)).map(rowDocument), expected, codec);
      assertEquals((await p.read(5, 16)).map(rowDocument), expected.slice(5, 16), codec);
    }
  },
});
