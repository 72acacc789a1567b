/**
 * The Python oracle for the text tests: a venv under `.cache/venv-text` with pinned `tokenizers` and `jinja2`
 * (`../_python_venv.ts`). When Python, venv or pip cannot be used, `oracleSkip` says why and the oracle tests
 * are ignored (never passed).
 */
import { pythonVenv } from "../_python_venv.ts";

const oracle = await pythonVenv("venv-text", ["tokenizers==0.23.3", "jinja2==3.1.6"]);

/** The venv's python. */
export const PYTHON = oracle.path;

/** Why the oracle tests are ignored, or null when the oracle is ready. */
export const oracleSkip: string | null = oracle.skip;
if (oracleSkip !== null) console.log(`Python oracle tests ignored: ${oracleSkip}`);

/** Runs a Python script in the venv with JSON in and JSON out. */
export const python = oracle.python;
