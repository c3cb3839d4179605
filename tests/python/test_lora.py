"""Llama(lora_path=..., lora_scale=...): a LoRA adapter in llama.cpp's GGUF
format, written here (random A and B for layer 0's Q and output projections
of stories260K), changes the greedy text; at scale 0 the text is the base
model's; a bad adapter file is a clear error."""

from __future__ import annotations

import random
import struct
from array import array

import pytest

from tiny_gguf import ALIGNMENT, F32, GGUF_MAGIC, STRING, _kv, _string

N_EMBD, RANK = 64, 4  # stories260K's width; the adapter's rank


def write_adapter(path, arch="llama", seed=3):
    rng = random.Random(seed)
    tensors = []
    for base in ("blk.0.attn_q.weight", "blk.0.attn_output.weight"):
        tensors.append((base + ".lora_a", [N_EMBD, RANK]))
        tensors.append((base + ".lora_b", [RANK, N_EMBD]))
    kvs = [
        ("general.architecture", struct.pack("<I", STRING) + _string(arch)),
        ("general.type", struct.pack("<I", STRING) + _string("adapter")),
        ("adapter.type", struct.pack("<I", STRING) + _string("lora")),
        _kv("adapter.lora.alpha", F32, 8.0),
    ]
    header = bytearray(GGUF_MAGIC + struct.pack("<IQQ", 3, len(tensors), len(kvs)))
    for key, raw in kvs:
        header += _string(key) + raw
    offset, blobs = 0, []
    for name, ne in tensors:
        header += _string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        header += struct.pack("<IQ", 0, offset)
        blob = array("f", [rng.gauss(0.0, 0.5) for _ in range(ne[0] * ne[1])]).tobytes()
        blob += b"\0" * ((-len(blob)) % ALIGNMENT)
        blobs.append(blob)
        offset += len(blob)
    header += b"\0" * ((-len(header)) % ALIGNMENT)
    with open(path, "wb") as f:
        f.write(header)
        for b in blobs:
            f.write(b)
    return str(path)


def greedy(llm):
    return llm("Once upon a time", max_tokens=24, temperature=0.0)["choices"][0]["text"]


def test_lora_changes_the_text_and_scale_zero_does_not(tmp_path, stories_path):
    from ferrite import Llama

    adapter = write_adapter(tmp_path / "a.gguf")
    base = greedy(Llama(model_path=stories_path, n_threads=1, verbose=False))
    adapted = greedy(Llama(model_path=stories_path, n_threads=1, lora_path=adapter, verbose=False))
    off = greedy(Llama(model_path=stories_path, n_threads=1, lora_path=adapter, lora_scale=0.0, verbose=False))
    assert adapted != base
    assert off == base


def test_bad_adapters(tmp_path, stories_path):
    from ferrite import Llama

    with pytest.raises(ValueError, match="lora_path"):
        Llama(model_path=stories_path, lora_path=str(tmp_path / "missing.gguf"), verbose=False)
    wrong = write_adapter(tmp_path / "gemma.gguf", arch="gemma")
    with pytest.raises(ValueError, match="architecture 'gemma'"):
        Llama(model_path=stories_path, lora_path=wrong, verbose=False)
    with pytest.raises(TypeError, match="lora_scale"):
        Llama(model_path=stories_path, lora_path=write_adapter(tmp_path / "b.gguf"), lora_scale="x", verbose=False)
