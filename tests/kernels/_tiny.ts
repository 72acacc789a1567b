/** Test helper: a tiny model config and batch shared by the model, step, referee and generation tests. */
import type { Batch } from "../../kernels/batch.ts";
import type { ModelConfig } from "../../kernels/config.ts";

/** Vocabulary 32, width 16, MLP 24, 3 blocks, 4 heads of width 4, 2 kv heads. */
export const TINY: ModelConfig = {
  vocab_size: 32,
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 3,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  max_position_embeddings: 16,
};

/** Two rows of six tokens; the last position of each row and one inside are unlabelled. */
export const TINY_BATCH: Batch = {
  input_ids: [[1, 5, 9, 2, 7, 3], [4, 4, 8, 31, 0, 6]],
  labels: [[5, 9, 2, 7, 3, -100], [4, -100, 31, 0, 6, -100]],
};

/** A zero tokenizer root for manifests in tests. */
export const TOKENIZER_ROOT = "ab".repeat(32);
