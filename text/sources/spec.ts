/**
 * Pinned source specs (PROTOCOL §11 "Pinned sources"): `{name, revision, split, license, role, format,
 * sha256}` names one local file of chat rows. `name`, `revision`, `split` and `license` say where the rows
 * come from (for a Hugging Face dataset: the repository, the commit, the split, its license); `role` is what
 * the rows may be used for (`train | retention | fresh | heldout`); `format` is `jsonl` or `parquet`; `sha256`
 * pins the file's bytes. The first five fields are the part a cohort document carries (`pinnedPart`).
 *
 * @example
 * ```ts
 * import { parseSourceSpec, pinnedPart } from "./spec.ts";
 * const spec = parseSourceSpec({ name: "devnet/chat", revision: "v1", split: "train", license: "cc0-1.0",
 *   role: "train", format: "jsonl", sha256: "ab".repeat(32) });
 * pinnedPart(spec); // {license, name, revision, role, split}
 * ```
 */
import { hasExactKeys, isObject } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import { isRoot } from "../../core/hex.ts";

/** What a source's rows may be used for. */
export const SOURCE_ROLES = ["train", "retention", "fresh", "heldout"] as const;
/** A source role. */
export type SourceRole = typeof SOURCE_ROLES[number];
/** The file formats a source may have. */
export const SOURCE_FORMATS = ["jsonl", "parquet"] as const;
/** A source file format. */
export type SourceFormat = typeof SOURCE_FORMATS[number];

/** The longest `name`, `revision`, `split` or `license`, in characters. */
export const MAX_SPEC_FIELD = 128;

/** A pinned source spec. */
export interface SourceSpec {
  readonly name: string;
  readonly revision: string;
  readonly split: string;
  readonly license: string;
  readonly role: SourceRole;
  readonly format: SourceFormat;
  /** SHA-256 of the file's bytes, lowercase hex. */
  readonly sha256: string;
}

/** The part of a spec a cohort document carries (PROTOCOL §6): where the rows come from and their role. */
export interface PinnedPart {
  readonly name: string;
  readonly revision: string;
  readonly split: string;
  readonly license: string;
  readonly role: SourceRole;
}

const FIELDS = ["format", "license", "name", "revision", "role", "sha256", "split"];

function fail(message: string): never {
  throw new ProtocolError("invalid_source", message);
}

/** Checks a source spec value (exactly its seven fields) and returns it typed; `invalid_source` otherwise. */
export function parseSourceSpec(value: unknown): SourceSpec {
  if (!isObject(value) || !hasExactKeys(value, FIELDS)) {
    fail(`Cannot accept source spec: expected exactly the fields ${FIELDS.join(", ")}`);
  }
  for (const f of ["name", "revision", "split", "license"] as const) {
    const v = value[f];
    if (typeof v !== "string" || v.length < 1 || v.length > MAX_SPEC_FIELD || !/^[\x21-\x7e]+$/.test(v)) {
      fail(
        `Cannot accept source spec: ${f} is ${
          JSON.stringify(v)
        }, expected 1 to ${MAX_SPEC_FIELD} printable ASCII characters without spaces`,
      );
    }
  }
  if (!(SOURCE_ROLES as readonly unknown[]).includes(value.role)) {
    fail(
      `Cannot accept source spec: role is ${JSON.stringify(value.role)}, expected ${
        SOURCE_ROLES.join(" | ")
      }`,
    );
  }
  if (!(SOURCE_FORMATS as readonly unknown[]).includes(value.format)) {
    fail(
      `Cannot accept source spec: format is ${JSON.stringify(value.format)}, expected ${
        SOURCE_FORMATS.join(" | ")
      }`,
    );
  }
  if (!isRoot(value.sha256)) {
    fail(`Cannot accept source spec: sha256 is ${JSON.stringify(value.sha256)}, expected 64 lowercase hex`);
  }
  return value as unknown as SourceSpec;
}

/** The fields of `spec` a cohort document carries. */
export function pinnedPart(spec: SourceSpec): PinnedPart {
  return {
    name: spec.name,
    revision: spec.revision,
    split: spec.split,
    license: spec.license,
    role: spec.role,
  };
}
