#!/usr/bin/env python3
"""Trains a PEFT LoRA adapter for the committed testbed model and writes what the tests need.

    python3 scripts/train_lora.py --base tests/convert/fixtures/testbed-small \
        --text ../shared/text/war-and-peace.txt --out OUT

Needs PyTorch, transformers and peft (the GPU machine has them; nothing is
downloaded). On a GPU it takes well under a minute.

The adapter is fine-tuned on the held-out last 10% of the text (which the base
model never saw), so its outputs differ visibly from the base model's.

What it writes under OUT (the adapter directory, as peft's save_pretrained):
  adapter_config.json, adapter_model.safetensors  (float32 weights)
  reference.json   the prompts (the base model's reference.json prompts), the
                   training figures, the LoRA scale alpha/r, versions
  logits.f32       transformers' float32 logits of every prompt position with
                   the adapter applied (PeftModel, not merged), row-major
                   [rows, n_vocab], little-endian, computed on the CPU
  base_logits.f32  the same rows without the adapter (disable_adapter()), so a
                   test can compare the adapter's change of the logits
"""
import argparse
import json
import math
import os
import struct
import time

import torch


def write_f32(path, rows):
    with open(path, "wb") as f:
        f.write(rows.contiguous().float().numpy().astype("<f4").tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the testbed checkpoint directory (save_pretrained)")
    ap.add_argument("--text", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--alpha", type=float, default=16.0)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=4321)
    args = ap.parse_args()

    from peft import LoraConfig, PeftModel, get_peft_model
    from tokenizers import Tokenizer
    from transformers import LlamaForCausalLM

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ref = json.load(open(os.path.join(args.base, "reference.json")))
    tok = Tokenizer.from_file(os.path.join(args.base, "tokenizer.json"))
    text = open(args.text, encoding="utf-8").read()
    heldout = text[int(len(text) * 0.9):]
    data = torch.tensor(tok.encode(heldout).ids, dtype=torch.long)
    bos = ref["prompts"][0]["tokens"][0]

    model = LlamaForCausalLM.from_pretrained(args.base, torch_dtype=torch.float32).to(device)
    cfg = LoraConfig(r=args.rank, lora_alpha=args.alpha, lora_dropout=0.0, bias="none", task_type="CAUSAL_LM",
                     target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    model = get_peft_model(model, cfg)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    gen = torch.Generator().manual_seed(args.seed)
    seq, batch = 128, 32
    t0, losses = time.time(), []
    model.train()
    for step in range(args.steps):
        starts = torch.randint(0, data.numel() - seq, (batch,), generator=gen)
        y = torch.stack([data[s:s + seq] for s in starts])
        x = torch.cat([torch.full((batch, 1), bos, dtype=y.dtype), y[:, :-1]], dim=1)
        logits = model(x.to(device)).logits
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, logits.size(-1)), y.to(device).view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % 50 == 0 or step == args.steps - 1:
            print(f"lora: step {step} loss {losses[-1]:.4f} ({time.time() - t0:.1f} s)", flush=True)
    os.makedirs(args.out, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=True)

    # Reference logits on the CPU in float32 from the saved files.
    base = LlamaForCausalLM.from_pretrained(args.base, torch_dtype=torch.float32, attn_implementation="eager")
    peft = PeftModel.from_pretrained(base, args.out).float().eval()
    rows, base_rows = [], []
    with torch.no_grad():
        for p in ref["prompts"]:
            ids = torch.tensor([p["tokens"]])
            rows.append(peft(ids).logits[0].float())
            with peft.disable_adapter():
                base_rows.append(peft(ids).logits[0].float())
    rows, base_rows = torch.cat(rows), torch.cat(base_rows)
    write_f32(os.path.join(args.out, "logits.f32"), rows)
    write_f32(os.path.join(args.out, "base_logits.f32"), base_rows)
    import peft as peft_mod
    import transformers
    change = (rows - base_rows).abs()
    figures = {"rank": args.rank, "alpha": args.alpha, "scale": args.alpha / args.rank, "steps": args.steps,
               "batch": batch, "seq": seq, "first_loss": losses[0], "final_loss": sum(losses[-20:]) / 20,
               "train_seconds": time.time() - t0, "max_abs_logit_change": change.max().item(),
               "mean_abs_logit_change": change.mean().item()}
    json.dump({"base": os.path.basename(os.path.normpath(args.base)),
               "prompts": [{"text": p["text"], "tokens": p["tokens"]} for p in ref["prompts"]],
               "rows": int(rows.shape[0]), "n_vocab": int(rows.shape[1]),
               "logits": "logits.f32 with the adapter, base_logits.f32 without (float32 little-endian, [rows, n_vocab])",
               "computed_by": "peft PeftModel over transformers LlamaForCausalLM, CPU, float32, eager attention",
               "training": figures,
               "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                            "peft": peft_mod.__version__}},
              open(os.path.join(args.out, "reference.json"), "w"), indent=1)
    print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
