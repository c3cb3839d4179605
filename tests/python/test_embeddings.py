"""Embeddings of a tiny BERT (written by tiny_gguf.py with the bert-bge
WordPiece vocabulary) against a plain double-precision reference forward."""

from __future__ import annotations

import math

import pytest

TOLERANCE = 5e-3  # LayerNorm'ed values of order 1; float32 and the f16 GELU table vs exact tanh GELU


@pytest.fixture(scope="module")
def bert(tiny_bert):
    from ferrite import Llama

    return Llama(model_path=tiny_bert.path, embedding=True, n_threads=1, verbose=False)


def test_embedding_matches_reference(bert, tiny_bert):
    for text in ("hello world", "the quick brown fox jumps over the lazy dog", "a"):
        tokens = bert.tokenize(text.encode())
        got = bert.embed(text)
        want = tiny_bert.reference_embedding(tokens)
        assert len(got) == bert.n_embd() == len(want)
        for g, w in zip(got, want):
            assert g == pytest.approx(w, abs=TOLERANCE)


def test_batch_equals_one_by_one(bert):
    texts = [f"sentence number {i} about cats" for i in range(70)]  # more than one pass of sequences
    together = bert.embed(texts)
    assert len(together) == len(texts)
    for text, vec in zip(texts[::17], together[::17]):
        assert vec == pytest.approx(bert.embed(text), abs=1e-5)


def test_create_embedding_shape(bert):
    out = bert.create_embedding(["hello world", "goodbye"], model="bert")
    assert out["object"] == "list" and out["model"] == "bert"
    assert [d["index"] for d in out["data"]] == [0, 1]
    assert all(d["object"] == "embedding" and len(d["embedding"]) == bert.n_embd() for d in out["data"])
    n = len(bert.tokenize(b"hello world")) + len(bert.tokenize(b"goodbye"))
    assert out["usage"] == {"prompt_tokens": n, "total_tokens": n}


def test_normalize(bert):
    v = bert.embed("hello world", normalize=True)
    assert math.sqrt(sum(x * x for x in v)) == pytest.approx(1.0, abs=1e-5)


def test_truncation(bert):
    long_text = " ".join(["word"] * 200)  # more tokens than the model's 64 positions
    with pytest.raises(ValueError):
        bert.embed(long_text, truncate=False)
    assert len(bert.embed(long_text)) == bert.n_embd()


def test_embedding_needs_the_flag(tiny_bert, llm):
    from ferrite import Llama

    plain = Llama(model_path=tiny_bert.path, n_threads=1, verbose=False)
    with pytest.raises(RuntimeError, match="embedding=True"):
        plain.embed("hello")
    with pytest.raises(RuntimeError):
        llm.create_embedding("hello")


def test_encoder_cannot_complete(bert):
    with pytest.raises(ValueError, match="encoder"):
        bert("hello", max_tokens=2)
