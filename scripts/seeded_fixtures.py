#!/usr/bin/env python3
"""Seeded weights for the converter's checkpoint fixtures (tests/convert/fixtures).

The repository keeps no weights for those checkpoints. Each folder's weights.json
lists the tensors of its safetensors file (name, dtype, shape) with the mean and
half-width of a uniform distribution, and a seed; the tests write the file from
it (tests/convert/seeded_checkpoint.h) with the generator below, written there
again in C++. What transformers computes from those same weights (logits.f32 and
the outputs in reference.json) is made here, on a machine with torch:

    python3 scripts/seeded_fixtures.py manifest FIXTURES OUT DIR...
        weights.json for each DIR (relative to FIXTURES) from the weights its
        safetensors file holds now: each tensor's mean and spread, so that a
        norm stays near 1 and an embedding keeps its scale
    python3 scripts/seeded_fixtures.py reference FIXTURES OUT DIR...
        logits.f32 and reference.json for each DIR from its weights.json

Both write under OUT, in the folders' relative paths. `reference` reads
weights.json from OUT when `manifest` put one there, else from FIXTURES.

The generator, element i of tensor t (its place in weights.json) under seed s,
all arithmetic modulo 2^64:
    x = (s + (t << 40) + i + 1) * 0x9E3779B97F4A7C15
    z = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB
    z = z ^ (z >> 31)                       (SplitMix64's output function)
    v = (z >> 40) * 2^-23 - 1               (24 bits, in [-1, 1), exact)
    w = float32(mean + half * v)            (in double: the product is exact)
then rounded to the tensor's dtype (BF16: to nearest, ties to even).
"""
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np

GOLDEN = 0x9E3779B97F4A7C15
SEED = 20261127


def uniform(seed, tensor, n, mean, half):
    u64 = np.uint64
    i = np.arange(n, dtype=np.uint64)
    x = (i + u64((seed + (tensor << 40) + 1) % (1 << 64))) * u64(GOLDEN)
    z = (x ^ (x >> u64(30))) * u64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> u64(27))) * u64(0x94D049BB133111EB)
    z = z ^ (z >> u64(31))
    v = (z >> u64(40)).astype(np.float64) * 2.0 ** -23 - 1.0
    return (np.float64(mean) + np.float64(half) * v).astype(np.float32)


def f32_exact(x):
    """A float32's value as a JSON number that reads back to the same float32."""
    return float(np.float32(x))


def manifest(src_dir, out_dir):
    import torch
    from safetensors import safe_open
    names = [f for f in os.listdir(src_dir) if f.endswith(".safetensors")]
    if len(names) != 1:
        raise SystemExit(f"{src_dir}: expected one safetensors file, found {names}")
    tensors = []
    with safe_open(os.path.join(src_dir, names[0]), framework="pt") as f:
        for name in sorted(f.keys()):
            t = f.get_tensor(name)
            d = t.double()
            mean = d.mean().item()
            half = d.std(unbiased=False).item() * math.sqrt(3.0) if t.numel() > 1 else 0.0
            tensors.append({"name": name, "dtype": {torch.float32: "F32", torch.bfloat16: "BF16"}[t.dtype],
                            "shape": list(t.shape), "mean": f32_exact(mean), "half": f32_exact(half)})
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "weights.json"), "w") as out:
        json.dump({"file": names[0], "seed": SEED,
                   "generator": "scripts/seeded_fixtures.py (SplitMix64 per element, uniform mean +- half)",
                   "tensors": tensors}, out, indent=1)
        out.write("\n")


def materialize(fixture_dir, weights_json, into):
    """A copy of the fixture with its safetensors file written from weights.json."""
    import torch
    from safetensors.torch import save_file
    os.makedirs(into, exist_ok=True)
    for f in os.listdir(fixture_dir):
        if f not in ("weights.json", "logits.f32", "reference.json") and not f.endswith(".safetensors"):
            shutil.copy(os.path.join(fixture_dir, f), os.path.join(into, f))
    w = json.load(open(weights_json))
    out = {}
    for t, e in enumerate(w["tensors"]):
        n = int(np.prod(e["shape"])) if e["shape"] else 1
        v = torch.from_numpy(uniform(w["seed"], t, n, e["mean"], e["half"]).reshape(e["shape"]))
        out[e["name"]] = v.to(torch.bfloat16) if e["dtype"] == "BF16" else v
    save_file(out, os.path.join(into, w["file"]), metadata={"format": "pt"})
    return into


def write_f32(path, rows):
    rows.detach().float().contiguous().numpy().astype("<f4").tofile(path)


def versions(*mods):
    import torch
    out = {"torch": torch.__version__}
    for m in mods:
        out[m] = __import__(m).__version__
    return out


def load(cls_name, path):
    import transformers
    return getattr(transformers, cls_name).from_pretrained(path, attn_implementation="eager").float().eval()


def reference(fixtures, rel, out_root, weights_of):
    import torch
    src = os.path.join(fixtures, rel)
    ref = json.load(open(os.path.join(src, "reference.json")))
    tmp = tempfile.mkdtemp()
    path = materialize(src, weights_of(rel), os.path.join(tmp, os.path.basename(rel)))
    with torch.no_grad():
        if "pairs" in ref:  # a cross-encoder: one score per (query, document) pair
            model = load(ref["class"], path)
            score = lambda ids, types: float(model(input_ids=torch.tensor([ids]),  # noqa: E731
                                                   token_type_ids=torch.tensor([types])).logits[0, 0])
            for p in ref["pairs"]:
                p["score"] = score(p["tokens"], p["token_types"])
                p["score_types_0"] = score(p["tokens"], [0] * len(p["tokens"]))
                p["server_score"] = score(p["server_tokens"], [0] * len(p["server_tokens"]))
            rows = torch.tensor([[p["score"], p["score_types_0"], p["server_score"]] for p in ref["pairs"]])
            ref["versions"] = versions("transformers")
        elif "encoder_tokens" in ref:  # an encoder-decoder: the decoder's logits
            model = load(ref["class"], path)
            rows = model(input_ids=torch.tensor([ref["encoder_tokens"]]),
                         decoder_input_ids=torch.tensor([ref["tokens"]])).logits[0]
            ref["versions"] = versions("transformers")
        elif "base" in ref:  # a PEFT LoRA adapter over the fixture named by "base"
            from peft import PeftModel
            base_rel = os.path.join(os.path.dirname(rel), ref["base"])
            base_path = materialize(os.path.join(fixtures, base_rel), weights_of(base_rel),
                                    os.path.join(tmp, "base"))
            peft = PeftModel.from_pretrained(load("LlamaForCausalLM", base_path), path).float().eval()
            with_rows, base_rows = [], []
            for p in ref["prompts"]:
                ids = torch.tensor([p["tokens"]])
                with_rows.append(peft(ids).logits[0])
                with peft.disable_adapter():
                    base_rows.append(peft(ids).logits[0])
            rows, base = torch.cat(with_rows), torch.cat(base_rows)
            change = (rows - base).abs()
            ref["adapter_effect"] = {"max_abs_logit_change": change.max().item(),
                                     "mean_abs_logit_change": change.mean().item()}
            ref["versions"] = versions("transformers", "peft")
        elif "prompts" in ref:  # a causal LM over several prompts
            model = load("LlamaForCausalLM", path)
            rows = torch.cat([model(torch.tensor([p["tokens"]])).logits[0] for p in ref["prompts"]])
            ref["versions"] = versions("transformers", "tokenizers")
        else:  # one prompt: logits, or an encoder's hidden states
            model = load(ref["class"], path)
            out = model(torch.tensor([ref["tokens"]]))
            rows = (out.logits if getattr(out, "logits", None) is not None else out.last_hidden_state)[0]
            ref["versions"] = versions("transformers")
    shutil.rmtree(tmp)
    ref["weights"] = "seeded: weights.json (scripts/seeded_fixtures.py)"
    ref.pop("training", None)
    dst = os.path.join(out_root, rel)
    os.makedirs(dst, exist_ok=True)
    write_f32(os.path.join(dst, "logits.f32"), rows)
    with open(os.path.join(dst, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    print(f"{rel}: {tuple(rows.shape)}", flush=True)


def main():
    if len(sys.argv) < 5 or sys.argv[1] not in ("manifest", "reference"):
        raise SystemExit(__doc__)
    mode, fixtures, out_root, dirs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    if mode == "manifest":
        for rel in dirs:
            manifest(os.path.join(fixtures, rel), os.path.join(out_root, rel))
            print(f"{rel}: weights.json", flush=True)
        return

    def weights_of(rel):
        made = os.path.join(out_root, rel, "weights.json")
        return made if os.path.exists(made) else os.path.join(fixtures, rel, "weights.json")

    for rel in dirs:
        reference(fixtures, rel, out_root, weights_of)


if __name__ == "__main__":
    main()
