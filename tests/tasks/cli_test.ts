import { assertEquals, assertThrows } from "../_assert.ts";
import { integerOption, UsageError } from "../../tasks/_cli.ts";

Deno.test("integerOption reads decimal integers in range and falls back when the option is absent", () => {
  assertEquals(integerOption("7", "steps"), 7);
  assertEquals(integerOption(undefined, "steps", { fallback: 5 }), 5);
  assertEquals(integerOption("1000", "steps", { max: 1000 }), 1000);
  assertEquals(integerOption("0", "port", { min: 0, max: 65535 }), 0);
});

Deno.test("integerOption refuses out-of-range, non-decimal and missing values with the option named", () => {
  const cases: [string | undefined, { fallback?: number; min?: number; max?: number }, string][] = [
    ["0", { max: 1000 }, "--steps is 0, expected an integer from 1 to 1000"],
    ["1001", { max: 1000 }, "--steps is 1001, expected an integer from 1 to 1000"],
    ["two", {}, "--steps is two, expected a positive integer"],
    ["1e3", {}, "--steps is 1e3, expected a positive integer"],
    ["1.0", {}, "--steps is 1.0, expected a positive integer"],
    [" 5", {}, "--steps is  5, expected a positive integer"],
    ["", {}, "--steps is , expected a positive integer"],
    ["-1", { min: 0 }, "--steps is -1, expected an integer of at least 0"],
    ["99999999999999999999", {}, "--steps is 99999999999999999999, expected a positive integer"],
    [undefined, {}, "--steps is required"],
  ];
  for (const [value, bounds, message] of cases) {
    const e = assertThrows(() => integerOption(value, "steps", bounds), UsageError);
    assertEquals(e.message, message);
  }
});
