#!/usr/bin/env python3
"""Trains ferrite's quality testbed from scratch and writes what the tests need.

    python3 scripts/train_testbed.py --text ../shared/text/war-and-peace.txt --out OUT [--tiny]
    python3 scripts/train_testbed.py --text ... --out OUT --tiny-only mamba2,granitemoehybrid

Needs PyTorch, transformers, tokenizers and sentencepiece (the GPU machine has
them; nothing is downloaded). On a GPU the whole run takes a few minutes.

What it writes under OUT:
  small/   a ~4M-parameter Llama (bf16 safetensors, save_pretrained) with a
           byte-level BPE tokenizer trained on the first 90% of the text
           (tokenizer.json, tokenizer_config.json with a chat template),
           reference.json (prompts, their token ids, training figures) and
           logits.f32 (transformers' float32 logits of every prompt position,
           row-major [rows, n_vocab], little-endian, computed on the CPU from
           the saved weights)
  large/   the same for a ~24M-parameter Llama
  tiny/    one random checkpoint per architecture ferrite runs, tiny sizes,
           float32, with reference.json and logits.f32 (bert: hidden states)
  summary.json  parameters, losses, held-out perplexities, timings, versions

The repository keeps none of these weights (tests/convert/fixtures): a
checkpoint becomes a fixture through scripts/seeded_fixtures.py, whose
`manifest` step turns its safetensors file into weights.json (each tensor's
shape, mean and spread) and whose `reference` step recomputes logits.f32 from
the seeded weights that the tests also write; the safetensors file is then
dropped. The trained small model lives outside the repository for the
quality benchmarks (bench/QUALITY.md).

--tiny shrinks every size and step count so the logic can be checked on a CPU
in seconds. Training uses fixed seeds; GPU kernels are not bitwise
deterministic, so a rerun gives close but not identical weights.
"""
import argparse
import hashlib
import json
import math
import os
import shutil
import struct
import sys
import time
import traceback

import torch

SPLIT_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")  # Llama 3's pre-tokenizer
BOS, EOS = "<|begin_of_text|>", "<|end_of_text|>"
CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant:{% endif %}")
# The text llama.cpp's convert_hf_to_gguf.py encodes to name a BPE
# pre-tokenizer (the SHA-256 of str(ids) is looked up in its table).
CHECK_TEXT = (
    '\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n\U0001f680 (normal) \U0001f636\u200d\U0001f32b'
    '\ufe0f (multiple emojis concatenated) \u2705 \U0001f999\U0001f999 3 33 333 3333 33333 3333'
    '33 3333333 33333333 3.3 3..3 3...3 \u1780\u17b6\u1793\u17cb\u178f\u17c2\u1796\u17b7\u179f\u17c1'
    '\u179f\u17a2\u17b6\u1785\U0001f601 ?\u6211\u60f3\u5728apple\u5de5\u4f5c1314151\u5929\uff5e'
    ' ------======= \u043d\u0435\u0449\u043e \u043d\u0430 \u0411\u044a\u043b\u0433\u0430\u0440\u0441'
    '\u043a\u0438 \'\'\'\'\'\'```````""""......!!!!!!?????? I\'ve been \'told he\'s there, \'RE'
    ' you sure? \'M not sure I\'ll make it, \'D you like some tea? We\'Ve a\'lL')
PROMPTS = [
    "The quick brown fox jumps over the lazy dog",
    "Prince Andrew looked at Pierre and said nothing.",
]


def log(*args):
    print(*args, flush=True)


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False)
        f.write("\n")


def write_f32(path, rows):
    """rows: a float32 torch tensor [n, m] -> little-endian bytes."""
    data = rows.detach().to(torch.float32).contiguous().cpu().numpy().astype("<f4")
    with open(path, "wb") as f:
        f.write(data.tobytes())


def safetensors_manifest(path):
    """Names, dtypes and shapes from a safetensors header (no library)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    return {k: [v["dtype"], v["shape"]] for k, v in header.items() if k != "__metadata__"}


# ---------------------------------------------------------------------------
# Tokenizers
# ---------------------------------------------------------------------------

def train_bpe(texts, vocab_size):
    """Byte-level BPE with Llama 3's pre-tokenizer, BOS added by the post-processor."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE(ignore_merges=True))  # as Llama 3's
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[BOS, EOS], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    bos = tok.token_to_id(BOS)
    tok.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B",
                                                       special_tokens=[(BOS, bos)])
    return tok


def train_wordpiece(texts, vocab_size):
    """BERT-style WordPiece; [CLS] is 101 as in bert-base (llama.cpp's default)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    specials = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    return tok


def train_spm(text, vocab_size, workdir):
    """A SentencePiece BPE model (tokenizer.model) in Llama 2's style."""
    import sentencepiece as spm
    path = os.path.join(workdir, "spm-input.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    prefix = os.path.join(workdir, "spm")
    spm.SentencePieceTrainer.train(
        input=path, model_prefix=prefix, vocab_size=vocab_size, model_type="bpe", byte_fallback=True,
        character_coverage=0.9995, normalization_rule_name="identity", remove_extra_whitespaces=False,
        add_dummy_prefix=True, split_digits=True, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        num_threads=8, max_sentence_length=1 << 16)
    return prefix + ".model"


def train_unigram(text, vocab_size, workdir):
    """A SentencePiece Unigram model in T5's id layout (pad 0, eos 1, unk 2, no BOS), identity normalizer
    (no precompiled character map: the file stays a few kB)."""
    import sentencepiece as spm
    path = os.path.join(workdir, "ugm-input.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    prefix = os.path.join(workdir, "ugm")
    spm.SentencePieceTrainer.train(
        input=path, model_prefix=prefix, vocab_size=vocab_size, model_type="unigram",
        character_coverage=0.9995, normalization_rule_name="identity", add_dummy_prefix=True,
        pad_id=0, eos_id=1, unk_id=2, bos_id=-1, num_threads=8, max_sentence_length=1 << 16)
    return prefix + ".model"


def save_bpe_files(tok, out_dir, max_len):
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    write_json(os.path.join(out_dir, "tokenizer_config.json"), {
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": BOS, "eos_token": EOS,
        "add_bos_token": True, "add_eos_token": False, "clean_up_tokenization_spaces": False,
        "model_max_length": max_len, "chat_template": CHAT_TEMPLATE})


def encode_prompt(out_dir, tok, text):
    """Token ids as transformers' AutoTokenizer gives them (what llama.cpp's
    converter calls); the tokenizers library's encode when that fails."""
    try:
        from transformers import AutoTokenizer
        ids = AutoTokenizer.from_pretrained(out_dir).encode(text)
        return list(ids), "transformers.AutoTokenizer"
    except Exception as e:  # noqa: BLE001 - any failure falls back
        log("AutoTokenizer failed:", repr(e))
        return tok.encode(text).ids, "tokenizers.Tokenizer"


# ---------------------------------------------------------------------------
# The trained Llamas
# ---------------------------------------------------------------------------

def llama_config(vocab, dim, layers, heads, kv_heads, ff, ctx, bos, eos):
    from transformers import LlamaConfig
    return LlamaConfig(vocab_size=vocab, hidden_size=dim, intermediate_size=ff, num_hidden_layers=layers,
                       num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=ctx,
                       rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=bos, eos_token_id=eos)


def batches(data, bos, seq, batch, gen, device):
    """Random windows of `seq` tokens; the input starts with BOS."""
    starts = torch.randint(0, data.numel() - seq, (batch,), generator=gen)
    y = torch.stack([data[s:s + seq] for s in starts])
    x = torch.cat([torch.full((batch, 1), bos, dtype=y.dtype), y[:, :-1]], dim=1)
    return x.to(device), y.to(device)


@torch.no_grad()
def heldout_nll(model, data, bos, seq, device):
    """Mean NLL over non-overlapping windows of the held-out tokens (BOS first)."""
    model.eval()
    total, count = 0.0, 0
    for s in range(0, data.numel() - seq, seq):
        y = data[s:s + seq].unsqueeze(0)
        x = torch.cat([torch.tensor([[bos]]), y[:, :-1]], dim=1)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            logits = model(x.to(device)).logits.float()
        total += torch.nn.functional.cross_entropy(logits[0], y[0].to(device), reduction="sum").item()
        count += seq
    model.train()
    return total / max(count, 1)


def train_llama(name, cfg, train, heldout, bos, steps, batch, seq, lr, device, seed):
    from transformers import LlamaForCausalLM
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"{name}: {n_params:,} parameters, {steps} steps of {batch}x{seq} tokens")
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1,
                            fused=device.type == "cuda")
    warmup = max(steps // 20, 1)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda i: min(1.0, (i + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(i, steps) / steps)))
    gen = torch.Generator().manual_seed(seed)
    t0 = time.time()
    losses = []
    model.train()
    for step in range(steps):
        x, y = batches(train, bos, seq, batch, gen, device)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            logits = model(x).logits
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, logits.size(-1)), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if step % max(steps // 10, 1) == 0 or step == steps - 1:
            log(f"{name}: step {step} loss {losses[-1]:.4f} ({time.time() - t0:.1f} s)")
    train_s = time.time() - t0
    nll = heldout_nll(model, heldout, bos, seq, device)
    figures = {"parameters": n_params, "steps": steps, "batch": batch, "seq": seq, "lr": lr,
               "final_train_loss": sum(losses[-20:]) / len(losses[-20:]), "heldout_nll": nll,
               "heldout_ppl": math.exp(nll), "heldout_tokens": int(heldout.numel()), "train_seconds": train_s}
    log(f"{name}: {json.dumps(figures)}")
    return model, figures


def reference_logits(out_dir, model_cls, prompts_ids):
    """Reloads the saved checkpoint on the CPU in float32 and evaluates each prompt."""
    model = model_cls.from_pretrained(out_dir, attn_implementation="eager").float().eval()
    rows = []
    with torch.no_grad():
        for ids in prompts_ids:
            out = model(torch.tensor([ids]))
            rows.append((out.logits if hasattr(out, "logits") and out.logits is not None
                         else out.last_hidden_state)[0].float())
    return torch.cat(rows, dim=0)


def save_trained(name, model, tok, out_dir, figures, heldout_text, ctx):
    from transformers import LlamaForCausalLM
    os.makedirs(out_dir, exist_ok=True)
    model.to(torch.bfloat16).to("cpu").save_pretrained(out_dir)
    save_bpe_files(tok, out_dir, ctx)
    prompts = PROMPTS + [heldout_text[:200]]
    entries, all_ids = [], []
    for p in prompts:
        ids, how = encode_prompt(out_dir, tok, p)
        raw = tok.encode(p).ids
        entries.append({"text": p, "tokens": ids, "tokenized_by": how, "tokenizers_ids_agree": raw == ids})
        all_ids.append(ids)
    check_ids, _ = encode_prompt(out_dir, tok, CHECK_TEXT)
    rows = reference_logits(out_dir, LlamaForCausalLM, all_ids)
    write_f32(os.path.join(out_dir, "logits.f32"), rows)
    write_json(os.path.join(out_dir, "reference.json"), {
        "model": name, "prompts": entries, "rows": int(rows.shape[0]), "n_vocab": int(rows.shape[1]),
        "check_text_hash": hashlib.sha256(str(check_ids).encode()).hexdigest(),
        "logits": "logits.f32 (float32 little-endian, [rows, n_vocab], prompts one after another)",
        "computed_by": "transformers, CPU, float32, eager attention, from the saved bf16 weights",
        "training": figures, "versions": versions()})
    log(f"{name}: saved {sorted(os.listdir(out_dir))}")


def versions():
    out = {"torch": torch.__version__}
    for mod in ("transformers", "tokenizers", "sentencepiece"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            out[mod] = None
    return out


# ---------------------------------------------------------------------------
# Tiny random checkpoints, one per architecture
# ---------------------------------------------------------------------------

def tiny_configs(vocab_bpe, vocab_spm, vocab_wpm):
    """(name, config class, model class, tokenizer kind, vocab, kwargs)."""
    common = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                  max_position_embeddings=64)
    gqa = dict(common, num_attention_heads=4, num_key_value_heads=2)
    # Granite 4.0 H's shape: Mamba-2 layers around an attention one without position embedding.
    granite_hybrid = dict(hidden_size=32, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                          shared_intermediate_size=24, layer_types=["mamba", "attention", "mamba"],
                          mamba_n_heads=8, mamba_d_head=8, mamba_n_groups=1, mamba_d_state=8, mamba_d_conv=4,
                          mamba_expand=2, mamba_chunk_size=4, position_embedding_type="nope",
                          embedding_multiplier=6.0, residual_multiplier=0.35, attention_multiplier=0.25,
                          logits_scaling=4.0, max_position_embeddings=64, tie_word_embeddings=True)
    return [
        ("llama", "LlamaConfig", "LlamaForCausalLM", "bpe", vocab_bpe, dict(gqa, tie_word_embeddings=False)),
        ("mistral", "MistralConfig", "MistralForCausalLM", "spm", vocab_spm, dict(gqa, sliding_window=None)),
        ("mixtral", "MixtralConfig", "MixtralForCausalLM", "spm", vocab_spm,
         dict(gqa, num_local_experts=4, num_experts_per_tok=2, sliding_window=None)),
        ("qwen2", "Qwen2Config", "Qwen2ForCausalLM", "bpe", vocab_bpe, dict(gqa, tie_word_embeddings=False)),
        ("qwen2moe", "Qwen2MoeConfig", "Qwen2MoeForCausalLM", "bpe", vocab_bpe,
         dict(gqa, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
              shared_expert_intermediate_size=48, decoder_sparse_step=1, mlp_only_layers=[])),
        ("qwen3", "Qwen3Config", "Qwen3ForCausalLM", "bpe", vocab_bpe, dict(gqa, head_dim=16)),
        ("qwen3moe", "Qwen3MoeConfig", "Qwen3MoeForCausalLM", "bpe", vocab_bpe,
         dict(gqa, head_dim=16, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
              decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=True)),
        ("gemma", "GemmaConfig", "GemmaForCausalLM", "spm", vocab_spm, dict(gqa, head_dim=8)),
        ("gemma2", "Gemma2Config", "Gemma2ForCausalLM", "spm", vocab_spm,
         dict(gqa, head_dim=8, sliding_window=4, query_pre_attn_scalar=8, attn_logit_softcapping=50.0,
              final_logit_softcapping=30.0)),
        ("gemma3", "Gemma3TextConfig", "Gemma3ForCausalLM", "spm", vocab_spm,
         dict(gqa, num_hidden_layers=6, head_dim=8, sliding_window=4, query_pre_attn_scalar=8)),
        ("phi3", "Phi3Config", "Phi3ForCausalLM", "spm", vocab_spm,
         dict(gqa, original_max_position_embeddings=64, sliding_window=None)),
        ("gpt2", "GPT2Config", "GPT2LMHeadModel", "bpe", vocab_bpe,
         dict(n_embd=32, n_layer=2, n_head=2, n_positions=64)),
        ("gptneox", "GPTNeoXConfig", "GPTNeoXForCausalLM", "bpe", vocab_bpe,
         dict(common, use_parallel_residual=True)),  # rotary_pct's default: 0.25
        ("starcoder2", "Starcoder2Config", "Starcoder2ForCausalLM", "bpe", vocab_bpe,
         dict(common, num_key_value_heads=1, use_bias=True, sliding_window=None)),
        ("falcon", "FalconConfig", "FalconForCausalLM", "bpe", vocab_bpe,
         dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, new_decoder_architecture=False,
              multi_query=True, parallel_attn=True, bias=False, alibi=False)),
        ("bert", "BertConfig", "BertModel", "wpm", vocab_wpm,
         dict(common, type_vocab_size=2)),
        # 8 heads of 8; chunk_size 4 runs transformers' chunked scan across chunks. One group:
        # transformers 5's MambaRMSNormGated normalises all of d_inner at once where mamba_ssm and
        # llama.cpp normalise each group (ferrite follows them; tests/model's reference checks groups).
        ("mamba2", "Mamba2Config", "Mamba2ForCausalLM", "bpe", vocab_bpe,
         dict(hidden_size=32, num_hidden_layers=2, num_heads=8, head_dim=8, expand=2, n_groups=1, state_size=8,
              conv_kernel=4, chunk_size=4, tie_word_embeddings=False)),
        ("granitemoehybrid", "GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM", "bpe", vocab_bpe,
         dict(granite_hybrid, num_local_experts=4, num_experts_per_tok=2, intermediate_size=16)),
        ("granitemoehybrid-dense", "GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM", "bpe", vocab_bpe,
         dict(granite_hybrid, num_local_experts=0, intermediate_size=48)),
    ] + tiny_configs_issue27(vocab_bpe, gqa)


def phimoe_longrope(original):
    """PhimoeConfig's rope arguments (transformers 5: rope_parameters; 4: rope_scaling)."""
    import inspect
    import transformers
    rope = dict(short_factor=[1.0, 1.25, 1.5, 2.0], long_factor=[1.5, 2.0, 3.0, 4.0], short_mscale=1.3,
                long_mscale=1.3, original_max_position_embeddings=original)
    if "rope_parameters" in inspect.signature(transformers.PhimoeConfig.__init__).parameters:
        return dict(rope_parameters=dict(rope, rope_type="longrope", rope_theta=1e6))
    return dict(rope_scaling=dict(rope, type="longrope"))


def tiny_configs_issue27(vocab_bpe, gqa):
    """The families of issue 27 that transformers has (same tuple layout)."""
    multipliers = dict(embedding_multiplier=6.0, residual_multiplier=0.35, attention_multiplier=0.25,
                       logits_scaling=4.0)
    moe = dict(num_experts_per_tok=2, moe_intermediate_size=32)
    t5 = dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
              relative_attention_num_buckets=16, relative_attention_max_distance=128, decoder_start_token_id=0,
              pad_token_id=0, eos_token_id=1)
    return [
        ("granite", "GraniteConfig", "GraniteForCausalLM", "bpe", vocab_bpe,
         dict(gqa, tie_word_embeddings=False, **multipliers)),
        ("granitemoe", "GraniteMoeConfig", "GraniteMoeForCausalLM", "bpe", vocab_bpe,
         dict(gqa, num_local_experts=4, num_experts_per_tok=2, intermediate_size=32, **multipliers)),
        ("olmo", "OlmoConfig", "OlmoForCausalLM", "bpe", vocab_bpe, dict(gqa, tie_word_embeddings=False)),
        ("olmo2", "Olmo2Config", "Olmo2ForCausalLM", "bpe", vocab_bpe, dict(gqa, tie_word_embeddings=False)),
        ("olmoe", "OlmoeConfig", "OlmoeForCausalLM", "bpe", vocab_bpe,
         dict(gqa, num_experts=4, num_experts_per_tok=2, intermediate_size=32, norm_topk_prob=False)),
        ("cohere", "CohereConfig", "CohereForCausalLM", "bpe", vocab_bpe, dict(gqa, logit_scale=0.5)),
        ("cohere2", "Cohere2Config", "Cohere2ForCausalLM", "bpe", vocab_bpe,
         dict(gqa, num_hidden_layers=4, sliding_window=4, logit_scale=0.5,
              layer_types=["sliding_attention"] * 3 + ["full_attention"])),
        ("stablelm", "StableLmConfig", "StableLmForCausalLM", "bpe", vocab_bpe,
         dict(gqa, partial_rotary_factor=0.25, tie_word_embeddings=False)),
        ("nemotron", "NemotronConfig", "NemotronForCausalLM", "bpe", vocab_bpe,
         dict(gqa, head_dim=8, partial_rotary_factor=0.5, tie_word_embeddings=False)),
        ("phi", "PhiConfig", "PhiForCausalLM", "bpe", vocab_bpe, dict(gqa, partial_rotary_factor=0.5)),
        ("gptj", "GPTJConfig", "GPTJForCausalLM", "bpe", vocab_bpe,
         dict(n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=64, tie_word_embeddings=False)),
        ("gpt_bigcode", "GPTBigCodeConfig", "GPTBigCodeForCausalLM", "bpe", vocab_bpe,
         dict(n_embd=32, n_layer=2, n_head=4, multi_query=True, n_positions=64)),
        ("bloom", "BloomConfig", "BloomForCausalLM", "bpe", vocab_bpe, dict(hidden_size=32, n_layer=2, n_head=4)),
        ("mpt", "MptConfig", "MptForCausalLM", "bpe", vocab_bpe,
         dict(d_model=32, n_heads=4, n_layers=2, expansion_ratio=2, max_seq_len=64)),
        ("smollm3", "SmolLM3Config", "SmolLM3ForCausalLM", "bpe", vocab_bpe,
         dict(gqa, num_hidden_layers=4, no_rope_layer_interval=4, tie_word_embeddings=False, pad_token_id=None)),
        ("glm4", "Glm4Config", "Glm4ForCausalLM", "bpe", vocab_bpe,
         dict(gqa, head_dim=8, partial_rotary_factor=0.5, tie_word_embeddings=False, pad_token_id=None)),
        ("glm4moe", "Glm4MoeConfig", "Glm4MoeForCausalLM", "bpe", vocab_bpe,
         dict(gqa, head_dim=8, partial_rotary_factor=0.5, num_hidden_layers=3, n_routed_experts=4, n_shared_experts=1,
              first_k_dense_replace=1, use_qk_norm=True, n_group=1, topk_group=1, routed_scaling_factor=2.5,
              norm_topk_prob=True, tie_word_embeddings=False, **moe)),
        ("ernie4_5", "Ernie4_5Config", "Ernie4_5ForCausalLM", "bpe", vocab_bpe, dict(gqa, head_dim=8)),
        ("ernie4_5_moe", "Ernie4_5_MoeConfig", "Ernie4_5_MoeForCausalLM", "bpe", vocab_bpe,
         dict(gqa, head_dim=8, num_hidden_layers=3, moe_num_experts=4, moe_k=2, moe_intermediate_size=32,
              moe_num_shared_experts=1, moe_layer_start_index=1)),
        ("hunyuan_v1_moe", "HunYuanMoEV1Config", "HunYuanMoEV1ForCausalLM", "bpe", vocab_bpe,
         dict(gqa, head_dim=8, num_experts=4, moe_topk=2, moe_intermediate_size=32, num_shared_expert=1,
              use_qk_norm=True)),
        ("deepseek_v3", "DeepseekV3Config", "DeepseekV3ForCausalLM", "bpe", vocab_bpe,
         dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
              num_key_value_heads=4, kv_lora_rank=16, q_lora_rank=24, qk_nope_head_dim=8, qk_rope_head_dim=8,
              v_head_dim=8, n_routed_experts=4, n_shared_experts=1, first_k_dense_replace=1, n_group=1,
              topk_group=1, routed_scaling_factor=2.5, max_position_embeddings=64, tie_word_embeddings=False,
              rope_interleave=True, **moe)),
        ("deepseek_v2", "DeepseekV2Config", "DeepseekV2ForCausalLM", "bpe", vocab_bpe,
         dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
              num_key_value_heads=4, kv_lora_rank=16, q_lora_rank=24, qk_nope_head_dim=8, qk_rope_head_dim=8,
              v_head_dim=8, n_routed_experts=4, n_shared_experts=1, first_k_dense_replace=1, n_group=1,
              topk_group=1, routed_scaling_factor=2.0, max_position_embeddings=64, tie_word_embeddings=False,
              topk_method="greedy", **moe)),
        # Phi-3.5-MoE's biases; router_jitter_noise 0.25 (the model's: 0.01) so that sparsemixer's
        # mask keeps some experts beside the best and the softmax over them shows; a 4-token window.
        ("phimoe", "PhimoeConfig", "PhimoeForCausalLM", "bpe", vocab_bpe,
         dict(gqa, num_local_experts=4, num_experts_per_tok=2, sliding_window=4, attention_bias=True,
              lm_head_bias=True, router_jitter_noise=0.25)),
        # LongRoPE with Phi-3.5-MoE's own magnitude (short_mscale = long_mscale, not LongRoPE's formula);
        # the original context 256 is ferrite's test context, so that both sides use the short factors.
        ("phimoe-longrope", "PhimoeConfig", "PhimoeForCausalLM", "bpe", vocab_bpe,
         dict(gqa, num_local_experts=4, num_experts_per_tok=2, sliding_window=None, attention_bias=True,
              lm_head_bias=True, max_position_embeddings=1024, **phimoe_longrope(256))),
        ("dbrx", "DbrxConfig", "DbrxForCausalLM", "bpe", vocab_bpe,
         dict(d_model=32, n_heads=4, n_layers=2, max_seq_len=64,
              attn_config=dict(kv_n_heads=2, clip_qkv=8.0), ffn_config=dict(moe_num_experts=4, moe_top_k=2,
                                                                            ffn_hidden_size=32))),
        ("gpt_oss", "GptOssConfig", "GptOssForCausalLM", "bpe", vocab_bpe,
         dict(gqa, head_dim=8, num_local_experts=4, num_experts_per_tok=2, intermediate_size=32, sliding_window=4,
              layer_types=["sliding_attention", "full_attention"], tie_word_embeddings=False)),
        # Issue 27's second part: encoder-decoder, sequence classification. T5 as t5-small (ReLU,
        # tied embeddings: transformers scales the decoder output by d_model^-0.5) and with flan-t5's
        # gated tanh-GELU (transformers 5.17 turns tie_word_embeddings=False into
        # scale_decoder_outputs false and still ties the head: the token table, unscaled); 16
        # buckets so that both the encoder's (8 a side) and the decoder's (16) logarithmic buckets
        # are reached by the prompts.
        ("t5", "T5Config", "T5ForConditionalGeneration", "ugm", None,
         dict(t5, feed_forward_proj="relu", tie_word_embeddings=True)),
        ("t5-gated", "T5Config", "T5ForConditionalGeneration", "ugm", None,
         dict(t5, feed_forward_proj="gated-gelu", tie_word_embeddings=False)),
        # A cross-encoder (ms-marco-MiniLM's class). initializer_range 0.2 (transformers' own init,
        # ten times the default) makes the scores of order one and distinct per document.
        ("bert-reranker", "BertConfig", "BertForSequenceClassification", "wpm-pair", None,
         dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
              max_position_embeddings=64, type_vocab_size=2, num_labels=1, initializer_range=0.2)),
        ("llama4", "Llama4TextConfig", "Llama4ForCausalLM", "bpe", vocab_bpe,
         dict(gqa, head_dim=8, num_hidden_layers=4, num_local_experts=4, num_experts_per_tok=1,
              intermediate_size=32, intermediate_size_mlp=64, attention_chunk_size=4, interleave_moe_layer_step=1,
              no_rope_layers=[1, 1, 1, 0], use_qk_norm=True, floor_scale=4, attn_scale=0.5,
              tie_word_embeddings=False)),
    ]


def random_model(cfg_cls, model_cls, cfg_kwargs, seed):
    """transformers' own seeded init, every parameter then perturbed (see make_tiny)."""
    import transformers
    cfg = getattr(transformers, cfg_cls)(**cfg_kwargs)
    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(cfg).float().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    return model


def finish_tiny(out_dir, name, model_cls, ref):
    files = sorted(os.listdir(out_dir))
    write_json(os.path.join(out_dir, "reference.json"), dict(
        {"architecture": name, "class": model_cls}, **ref,
        computed_by="transformers, CPU, float32, eager attention", versions=versions()))
    return {"config": json.load(open(os.path.join(out_dir, "config.json"))), "files": files,
            "tensors": safetensors_manifest(os.path.join(out_dir, "model.safetensors"))}


def make_tiny_t5(out_dir, spec, ugm_model, seed):
    """An encoder-decoder: the decoder's logits for an encoder input and a decoder prefix."""
    import sentencepiece as spm
    import transformers
    name, cfg_cls, model_cls, _, _, kwargs = spec
    shutil.copy(ugm_model, os.path.join(out_dir, "tokenizer.model"))
    sp = spm.SentencePieceProcessor(model_file=ugm_model)
    write_json(os.path.join(out_dir, "tokenizer_config.json"), {
        "tokenizer_class": "T5Tokenizer", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
        "extra_ids": 0})
    model = random_model(cfg_cls, model_cls, dict(kwargs, vocab_size=sp.get_piece_size()), seed)
    model.save_pretrained(out_dir)
    enc = sp.encode(PROMPTS[0]) + [1]  # T5's tokenizer appends </s>
    dec = [0] + sp.encode(PROMPTS[1])[:15]  # from decoder_start_token_id
    model = getattr(transformers, model_cls).from_pretrained(out_dir, attn_implementation="eager").float().eval()
    with torch.no_grad():
        rows = model(input_ids=torch.tensor([enc]), decoder_input_ids=torch.tensor([dec])).logits[0].float()
    write_f32(os.path.join(out_dir, "logits.f32"), rows)
    return finish_tiny(out_dir, name, model_cls, {
        "encoder_tokens": enc, "encoder_text": PROMPTS[0], "tokens": dec, "text": PROMPTS[1],
        "rows": int(rows.shape[0]), "cols": int(rows.shape[1]), "output": "decoder logits"})


RERANK_QUERY = "who looked at Pierre?"
RERANK_DOCS = ["Prince Andrew looked at Pierre and said nothing.", "The quick brown fox jumps over the lazy dog",
               "Pierre said nothing."]


def make_tiny_reranker(out_dir, spec, tok, seed):
    """A cross-encoder: one score per (query, document) pair, with the tokenizer's segment ids and with
    every token of type 0 (what llama.cpp's bert graph feeds), and for llama-server's pair layout
    [CLS] query [SEP] [SEP] document [SEP] (BOS, EOS, SEP; types 0)."""
    import transformers
    name, cfg_cls, model_cls, _, _, kwargs = spec
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    write_json(os.path.join(out_dir, "tokenizer_config.json"), {
        "tokenizer_class": "BertTokenizer", "do_lower_case": True, "unk_token": "[UNK]",
        "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"})
    model = random_model(cfg_cls, model_cls, dict(kwargs, vocab_size=tok.get_vocab_size(), pad_token_id=0), seed)
    model.save_pretrained(out_dir)
    model = getattr(transformers, model_cls).from_pretrained(out_dir, attn_implementation="eager").float().eval()
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    pairs = []
    with torch.no_grad():
        score = lambda ids, types: float(model(input_ids=torch.tensor([ids]),  # noqa: E731
                                               token_type_ids=torch.tensor([types])).logits[0, 0])
        for doc in RERANK_DOCS:
            q = tok.encode(RERANK_QUERY, add_special_tokens=False).ids
            d = tok.encode(doc, add_special_tokens=False).ids
            ids = [cls] + q + [sep] + d + [sep]  # BertTokenizer's pair, segment 1 from the document on
            types = [0] * (len(q) + 2) + [1] * (len(d) + 1)
            server = [cls] + q + [sep, sep] + d + [sep]
            pairs.append({"document": doc, "tokens": ids, "token_types": types,
                          "score": score(ids, types), "score_types_0": score(ids, [0] * len(ids)),
                          "server_tokens": server, "server_score": score(server, [0] * len(server))})
    write_f32(os.path.join(out_dir, "logits.f32"),
              torch.tensor([[p["score"], p["score_types_0"], p["server_score"]] for p in pairs]))
    return finish_tiny(out_dir, name, model_cls, {
        "query": RERANK_QUERY, "pairs": pairs, "rows": len(pairs), "cols": 3,
        "output": "score (logits[0, 0]) per pair: with segment ids, all types 0, llama-server's layout"})


def make_tiny(root, spec, toks, seed):
    import transformers
    name, cfg_cls, model_cls, kind, vocab, kwargs = spec
    out_dir = os.path.join(root, name)
    os.makedirs(out_dir, exist_ok=True)
    if kind == "ugm":
        return make_tiny_t5(out_dir, spec, toks["ugm"], seed)
    if kind == "wpm-pair":
        return make_tiny_reranker(out_dir, spec, toks["wpm"], seed)
    tok = toks[kind]
    ids_kw = {}
    if kind == "bpe":
        save_bpe_files(tok, out_dir, 64)
        ids_kw = dict(bos_token_id=tok.token_to_id(BOS), eos_token_id=tok.token_to_id(EOS))
    elif kind == "spm":
        shutil.copy(tok, os.path.join(out_dir, "tokenizer.model"))
        write_json(os.path.join(out_dir, "tokenizer_config.json"), {
            "tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
            "add_bos_token": True, "add_eos_token": False})
        ids_kw = dict(bos_token_id=1, eos_token_id=2, pad_token_id=None)
    else:
        tok.save(os.path.join(out_dir, "tokenizer.json"))
        write_json(os.path.join(out_dir, "tokenizer_config.json"), {
            "tokenizer_class": "BertTokenizer", "do_lower_case": True, "unk_token": "[UNK]",
            "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"})
        ids_kw = dict(pad_token_id=0)
    cfg = getattr(transformers, cfg_cls)(vocab_size=vocab, **ids_kw, **kwargs)
    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(cfg).float().eval()
    # Random init leaves norms at 1 and biases at 0: perturb every parameter
    # so that a mapping that drops or swaps one shows in the outputs.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    model.save_pretrained(out_dir)
    text = PROMPTS[0]
    if kind == "spm":
        import sentencepiece as spm
        ids = [1] + spm.SentencePieceProcessor(model_file=tok).encode(text)
    else:
        ids = tok.encode(text).ids
    rows = reference_logits(out_dir, getattr(transformers, model_cls), [ids])
    write_f32(os.path.join(out_dir, "logits.f32"), rows)
    files = sorted(os.listdir(out_dir))
    write_json(os.path.join(out_dir, "reference.json"), {
        "architecture": name, "class": model_cls, "tokens": ids, "text": text, "rows": int(rows.shape[0]),
        "cols": int(rows.shape[1]), "output": "hidden states" if name == "bert" else "logits",
        "computed_by": "transformers, CPU, float32, eager attention", "versions": versions()})
    manifest = {"config": json.load(open(os.path.join(out_dir, "config.json"))), "files": files,
                "tensors": safetensors_manifest(os.path.join(out_dir, "model.safetensors"))}
    return manifest


# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--text", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tiny", action="store_true", help="tiny sizes and steps (checks the logic on a CPU)")
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--tiny-only", metavar="ARCHS", default=None,
                    help="only the tiny checkpoints of these architectures (comma-separated names of tiny_configs), "
                         "with --tiny's text; no small/large training")
    ap.add_argument("--tiny-bpe", metavar="TOKENIZER_JSON", default=None,
                    help="the tiny checkpoints' BPE tokenizer from this tokenizer.json instead of one trained here "
                         "(tests/convert/fixtures/tiny/llama/tokenizer.json: the one the other fixtures have)")
    args = ap.parse_args()
    if args.tiny_only is not None:
        args.tiny = True
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    os.makedirs(args.out, exist_ok=True)
    summary = {"versions": versions(), "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
               "errors": []}
    log("versions:", summary["versions"], "device:", summary["device"])
    t_all = time.time()

    text = open(args.text, encoding="utf-8").read()
    if args.tiny:
        text = text[:200_000]
    cut = text.rfind("\n", 0, int(len(text) * 0.9)) + 1
    train_text, heldout_text = text[:cut], text[cut:]
    paragraphs = lambda s: [p + "\n\n" for p in s.split("\n\n")]  # noqa: E731
    summary["text"] = {"bytes": len(text.encode()), "train_chars": len(train_text), "heldout_chars": len(heldout_text),
                       "heldout_starts_at_char": cut}

    t0 = time.time()
    tok = train_bpe(paragraphs(train_text), 512 if args.tiny else 4096)
    bos, eos = tok.token_to_id(BOS), tok.token_to_id(EOS)
    enc = lambda s: torch.tensor([i for e in tok.encode_batch(paragraphs(s), add_special_tokens=False)  # noqa: E731
                                  for i in e.ids], dtype=torch.long)
    train, heldout = enc(train_text), enc(heldout_text)
    summary["tokenizer"] = {"vocab": tok.get_vocab_size(), "train_tokens": int(train.numel()),
                            "heldout_tokens": int(heldout.numel()), "seconds": time.time() - t0}
    log("tokenizer:", summary["tokenizer"])

    sizes = {  # name: (dim, layers, heads, kv_heads, ff, steps, batch, lr)
        "small": (256, 4, 8, 4, 640, 1000, 32, 2e-3),
        "large": (512, 8, 8, 4, 1280, 1000, 32, 1e-3),
    }
    seq = 256
    if args.tiny:
        sizes = {"small": (32, 2, 2, 1, 64, 20, 4, 2e-3), "large": (48, 2, 2, 1, 96, 20, 4, 1e-3)}
        seq = 64
    for name, (dim, layers, heads, kv, ff, steps, batch, lr) in sizes.items():
        if args.tiny_only is not None:
            break
        if name == "large" and args.skip_large:
            continue
        try:
            cfg = llama_config(tok.get_vocab_size(), dim, layers, heads, kv, ff, 2048, bos, eos)
            model, figures = train_llama(name, cfg, train, heldout, bos, steps, batch, seq, lr, device, args.seed)
            save_trained(name, model, tok, os.path.join(args.out, name), figures, heldout_text, 2048)
            summary[name] = figures
            del model
        except Exception:  # noqa: BLE001 - keep going; the log says what failed
            summary["errors"].append(f"{name}: {traceback.format_exc()}")
            log(summary["errors"][-1])

    # Tiny checkpoints of every architecture.
    try:
        tiny_text = train_text[:300_000]
        import tokenizers
        toks = {"bpe": (tokenizers.Tokenizer.from_file(args.tiny_bpe) if args.tiny_bpe
                        else train_bpe(paragraphs(tiny_text), 320)),
                "wpm": train_wordpiece(paragraphs(tiny_text), 400)}
        workdir = os.path.join(args.out, "spm-work")
        os.makedirs(workdir, exist_ok=True)
        toks["spm"] = train_spm(tiny_text, 400, workdir)
        toks["ugm"] = train_unigram(tiny_text, 400, workdir)
        import sentencepiece as spm
        vocab_spm = spm.SentencePieceProcessor(model_file=toks["spm"]).get_piece_size()
        manifests = {}
        wanted = None if args.tiny_only is None else set(args.tiny_only.split(","))
        for spec in tiny_configs(toks["bpe"].get_vocab_size(), vocab_spm, toks["wpm"].get_vocab_size()):
            if wanted is not None and spec[0] not in wanted:
                continue
            try:
                manifests[spec[0]] = make_tiny(os.path.join(args.out, "tiny"), spec, toks, args.seed)
                log(f"tiny {spec[0]}: ok")
            except Exception:  # noqa: BLE001
                summary["errors"].append(f"tiny {spec[0]}: {traceback.format_exc()}")
                log(summary["errors"][-1])
        write_json(os.path.join(args.out, "tiny", "manifest.json"), manifests)
        shutil.rmtree(workdir, ignore_errors=True)
    except Exception:  # noqa: BLE001
        summary["errors"].append(f"tiny: {traceback.format_exc()}")
        log(summary["errors"][-1])

    summary["seconds"] = time.time() - t_all
    write_json(os.path.join(args.out, "summary.json"), summary)
    log("done in", f"{summary['seconds']:.1f} s;", len(summary["errors"]), "errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
