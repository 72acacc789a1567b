/** The assertions tests use: node's strict assert, re-exported with the names Deno code expects. */
import assert from "node:assert/strict";

/** Deep strict equality. */
export function assertEquals<T>(actual: T, expected: T, message?: string): void {
  assert.deepStrictEqual(actual, expected, message);
}

/** Asserts `fn` throws (an instance of `type`, when given) and returns the error. */
export function assertThrows(
  fn: () => unknown,
  type?: new (...args: never[]) => Error,
  includes?: string,
): Error {
  try {
    fn();
  } catch (e) {
    if (type && !(e instanceof type)) {
      throw new assert.AssertionError({ message: `expected ${type.name}, got ${e}` });
    }
    if (includes && !String((e as Error).message).includes(includes)) {
      throw new assert.AssertionError({
        message: `expected message to include "${includes}", got "${(e as Error).message}"`,
      });
    }
    return e as Error;
  }
  throw new assert.AssertionError({ message: "expected the function to throw" });
}

/** Asserts the promise rejects (with an instance of `type`, when given) and returns the error. */
export async function assertRejects(
  fn: () => Promise<unknown>,
  type?: new (...args: never[]) => Error,
  includes?: string,
): Promise<Error> {
  try {
    await fn();
  } catch (e) {
    if (type && !(e instanceof type)) {
      throw new assert.AssertionError({ message: `expected ${type.name}, got ${e}` });
    }
    if (includes && !String((e as Error).message).includes(includes)) {
      throw new assert.AssertionError({
        message: `expected message to include "${includes}", got "${(e as Error).message}"`,
      });
    }
    return e as Error;
  }
  throw new assert.AssertionError({ message: "expected the promise to reject" });
}

export { assert };
