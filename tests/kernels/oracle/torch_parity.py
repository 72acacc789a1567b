"""PyTorch parity oracle for the deterministic kernels (run by tests/kernels/torch_parity_test.ts).

Usage: python torch_parity.py DIR

DIR holds what the Deno side wrote:
  config.json            our model config (plain numbers)
  batch.json             {"input_ids": [[...]], "labels": [[...]]} (labels aligned with positions, -100 ignored)
  <component>.safetensors  our canonical component files (embed, norm, block_000, ...)
  logits.safetensors     our logits, one tensor "value" [B, T, V]
  grad_<component>.safetensors  our gradient of the mean loss for every tensor of the component
  loss.json              {"loss": float}

It builds transformers' LlamaForCausalLM (eager attention, float32, tied embeddings) from the same
weights, runs the batch, takes the masked mean cross-entropy and its gradients, and prints one JSON object
{"tensors": {name: relative_error}, "float64": {name: [torch32_error, ours_error]}, "worst": float} where
relative_error = max|ours - torch| / max|torch|, and "float64" gives, for context, the errors of torch's
float32 run and of ours against the same model run by torch in float64.
"""
import copy
import json
import os
import sys

import torch
from safetensors.torch import load_file
from transformers import LlamaConfig, LlamaForCausalLM


def main(folder: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(folder, "batch.json")) as f:
        batch = json.load(f)
    with open(os.path.join(folder, "loss.json")) as f:
        our_loss = json.load(f)["loss"]
    config = LlamaConfig(
        vocab_size=cfg["vocab_size"],
        hidden_size=cfg["hidden_size"],
        intermediate_size=cfg["intermediate_size"],
        num_hidden_layers=cfg["num_hidden_layers"],
        num_attention_heads=cfg["num_attention_heads"],
        num_key_value_heads=cfg["num_key_value_heads"],
        rms_norm_eps=cfg["rms_norm_eps"],
        rope_theta=cfg["rope_theta"],
        max_position_embeddings=cfg["max_position_embeddings"],
        tie_word_embeddings=True,
        hidden_act="silu",
        attention_bias=False,
        mlp_bias=False,
        head_dim=cfg["hidden_size"] // cfg["num_attention_heads"],
    )
    config._attn_implementation = "eager"
    model = LlamaForCausalLM(config).to(torch.float32)
    state = {}
    names = ["embed", "norm"] + [f"block_{i:03d}" for i in range(cfg["num_hidden_layers"])]
    for name in names:
        tensors = load_file(os.path.join(folder, f"{name}.safetensors"))
        for key, value in tensors.items():
            if name == "embed":
                state["model.embed_tokens.weight"] = value
            elif name == "norm":
                state["model.norm.weight"] = value
            else:
                state[f"model.layers.{int(name[6:])}.{key}"] = value
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if m != "lm_head.weight"]
    if missing or unexpected:
        raise SystemExit(f"state dict mismatch: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr(), "head is not tied"

    ids = torch.tensor(batch["input_ids"], dtype=torch.long)
    labels = torch.tensor(batch["labels"], dtype=torch.long)
    model64 = copy.deepcopy(model).to(torch.float64)

    def run(m):
        logits = m(input_ids=ids, use_cache=False).logits
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100, reduction="mean"
        )
        loss.backward()
        return logits, loss

    logits, loss = run(model)
    logits64, loss64 = run(model64)

    def rel(ours: torch.Tensor, theirs: torch.Tensor) -> float:
        scale = theirs.abs().max().item()
        return (ours - theirs).abs().max().item() / max(scale, 1e-30)

    errors = {}
    float64 = {}  # the same tensor of torch float32 and of ours against torch float64, for context
    ours_logits = load_file(os.path.join(folder, "logits.safetensors"))["value"]
    errors["logits"] = rel(ours_logits, logits.detach())
    float64["logits"] = [rel(logits.detach().double(), logits64.detach()), rel(ours_logits.double(), logits64.detach())]
    errors["loss"] = abs(our_loss - loss.item()) / abs(loss.item())
    params = dict(model.named_parameters())
    params64 = dict(model64.named_parameters())
    for name in names:
        grads = load_file(os.path.join(folder, f"grad_{name}.safetensors"))
        for key, value in grads.items():
            if name == "embed":
                hf = "model.embed_tokens.weight"
            elif name == "norm":
                hf = "model.norm.weight"
            else:
                hf = f"model.layers.{int(name[6:])}.{key}"
            errors[f"grad {name} {key}"] = rel(value, params[hf].grad)
            float64[f"grad {name} {key}"] = [
                rel(params[hf].grad.double(), params64[hf].grad),
                rel(value.double(), params64[hf].grad),
            ]
    print(json.dumps({"tensors": errors, "float64": float64, "worst": max(errors.values()), "torch": torch.__version__}))


if __name__ == "__main__":
    main(sys.argv[1])
