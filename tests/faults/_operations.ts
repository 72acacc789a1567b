/** The operations the crash actor delivers: ids derived from content (PROTOCOL §12). */
import { operationId } from "../../actors/runtime/journal.ts";

/** Two operations of session "crash-matrix". */
export const OPERATIONS = [1, 2].map((n) => ({ opId: operationId("crash-matrix", { n }), input: { n } }));
