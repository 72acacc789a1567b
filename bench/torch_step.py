"""One SGD training step of a SmolLM2-135M-shaped Llama in PyTorch (B=1, T=argv[1]), timed for model_bench.ts.

Run with the reference profile in the environment (1 thread, ATEN_CPU_CAPABILITY=default,
MKL_ENABLE_INSTRUCTIONS=SSE4_2). Random weights: only the time matters. Prints {"seconds", "version"} as JSON:
the best of two steps (forward, loss, backward, SGD update).
"""
import json
import sys
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.set_num_threads(1)
T = int(sys.argv[1])
config = LlamaConfig(
    vocab_size=49152,
    hidden_size=576,
    intermediate_size=1536,
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
    rms_norm_eps=1e-5,
    rope_theta=100000.0,
    max_position_embeddings=8192,
    tie_word_embeddings=True,
)
torch.manual_seed(0)
model = LlamaForCausalLM(config).float()
ids = torch.arange(T).unsqueeze(0) * 977 % 49152
optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
best = float("inf")
for _ in range(2):
    t0 = time.perf_counter()
    optimizer.zero_grad()
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    best = min(best, time.perf_counter() - t0)
print(json.dumps({"seconds": best, "version": torch.__version__}))
