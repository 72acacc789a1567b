#!/usr/bin/env python3
"""Known-answer vectors made by an independent implementation (CPython's json and float.hex).

Run from the repository root: python3 tests/vectors/make_vectors.py
Writes tests/vectors/canonical.json and tests/vectors/hex_float.json. The TypeScript tests compare
our canonical encoder and hex-float spelling to these bytes.
"""
import json
import math
import random
import struct

def canon(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=True)

CASES = [
    ("empty object", {}),
    ("empty array", []),
    ("literals", [None, True, False]),
    ("integers", [0, 1, -1, 42, -42, 10**15]),
    ("largest safe integers", [9007199254740991, -9007199254740991]),
    ("key order by code point", {"b": 1, "a": 2, "B": 3, "aa": 4, "": 5, "a\u0000": 6}),
    ("astral keys sort after BMP keys", {"\U0001F600": 1, "\uffff": 2, "\ue000": 3, "z": 4, "\U00010000": 5}),
    ("non-ASCII as lowercase escapes", "caf\u00e9 \u00fc\u00df \u0416 \u4e2d\u6587 \u05e9\u05dc\u05d5\u05dd \u0627\u0644"),
    ("astral characters as surrogate pairs", "\U0001F600\U0001F9D1\u200d\U0001F4BB \U00010000 \U0010FFFF"),
    ("short escapes", "quote\" backslash\\ slash/ \b\f\n\r\t"),
    ("other control characters", "".join(chr(c) for c in range(0, 32))),
    ("DEL is escaped", "a\x7fb"),
    ("printable ASCII", "".join(chr(c) for c in range(32, 127))),
    ("nesting", {"outer": {"inner": [1, [2, [3, {"deep": [None, {"x": "y"}]}]]], "list": [{"b": 1, "a": 0}]}}),
    ("mixed document", {"kind": "transfer", "chain_id": "neuroshard-devnet", "nonce": 7, "to": "02" + "ab" * 32,
                        "amount": 1000000, "memo": "na\u00efve \U0001F680", "tags": ["\u00e9", "e"]}),
    ("unicode keys", {"\u00e9": 1, "e": 2, "\u0065\u0301": 3, "f": 4}),
]

def main():
    vectors = [{"name": n, "value": v, "canonical": canon(v)} for n, v in CASES]
    with open("tests/vectors/canonical.json", "w", encoding="ascii") as f:
        json.dump({"generator": "tests/vectors/make_vectors.py", "python_json": True, "vectors": vectors}, f,
                  indent=1, ensure_ascii=True)
        f.write("\n")

    rng = random.Random(20261129)
    floats = []
    edges = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 0.1, 2.0**-1022, 2.0**-1074, -(2.0**-1074), 2.0**-1023,
             1.7976931348623157e308, -1.7976931348623157e308, 2.2250738585072009e-308, 1e-7, 123456.789]
    for x in edges:
        floats.append(x)
    while len(floats) < 2000:
        bits = rng.getrandbits(64)
        x = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if math.isfinite(x):
            floats.append(x)
    rows = [{"bits": struct.pack(">d", x).hex(), "hex": x.hex()} for x in floats]
    with open("tests/vectors/hex_float.json", "w", encoding="ascii") as f:
        json.dump({"generator": "tests/vectors/make_vectors.py", "python_float_hex": True, "vectors": rows}, f,
                  indent=0)
        f.write("\n")

if __name__ == "__main__":
    main()
