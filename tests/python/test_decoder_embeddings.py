"""Embeddings from a decoder (stories260K, a llama): llama-cpp-python's
``Llama(embedding=True).embed`` semantics. The per-token vector is the final
hidden state after the output norm, so the output matrix (read from the GGUF
file here, independently of the engine) times it must give the logits of an
ordinary evaluation. Pooling comes from ``<arch>.pooling_type`` (written into
a copy of the model); without it every token has its vector."""

from __future__ import annotations

import math

import pytest

from gguf_read import copy_with_u32, output_matrix, read_gguf

TEXT = "Once upon a time there was a little dog"
REL_TOLERANCE = 2e-4  # f32 sums in the engine vs Python's double sums, relative to the logit range
POOL_TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def emb(stories_path):
    from ferrite import Llama

    return Llama(model_path=stories_path, embedding=True, n_ctx=128, n_threads=1, verbose=False)


@pytest.fixture(scope="module")
def pooled_paths(stories_path, tmp_path_factory):
    out = {}
    for name, value in (("mean", 1), ("cls", 2), ("last", 3)):
        path = tmp_path_factory.mktemp("pooled") / f"stories-{name}.gguf"
        copy_with_u32(stories_path, str(path), "llama.pooling_type", value)
        out[name] = str(path)
    return out


def test_token_states_times_output_matrix_give_the_logits(emb, stories_path):
    tokens = emb.tokenize(TEXT.encode())
    states = emb.embed(TEXT)
    assert len(states) == len(tokens)
    assert all(len(h) == emb.n_embd() for h in states)

    rows, n_embd = output_matrix(read_gguf(stories_path))
    emb.reset()
    for i, token in enumerate(tokens):
        logits = emb._session.eval([token])  # after tokens[:i + 1]
        scale = max(1.0, max(logits) - min(logits))
        h = states[i]
        for v, row in enumerate(rows):
            dot = math.fsum(row[d] * h[d] for d in range(n_embd))
            assert dot == pytest.approx(logits[v], abs=REL_TOLERANCE * scale), (i, v)


@pytest.mark.parametrize("pooling", ["mean", "cls", "last"])
def test_pooling_from_the_model(emb, pooled_paths, pooling):
    from ferrite import Llama

    pooled = Llama(model_path=pooled_paths[pooling], embedding=True, n_ctx=128, n_threads=1, verbose=False)
    texts = [TEXT, "The cat sat", "Lily and Ben went to the park to play"]
    got = pooled.embed(texts)  # one batch, three sequences
    assert len(got) == len(texts)
    for text, vec in zip(texts, got):
        states = emb.embed(text)  # pooling none: one vector per token
        if pooling == "mean":
            want = [math.fsum(h[d] for h in states) / len(states) for d in range(emb.n_embd())]
        else:
            want = states[0] if pooling == "cls" else states[-1]
        assert len(vec) == emb.n_embd()
        assert vec == pytest.approx(want, abs=POOL_TOLERANCE)
    one = pooled.embed(texts[1])
    assert one == pytest.approx(got[1], abs=POOL_TOLERANCE)
    normed = pooled.embed(texts[1], normalize=True)
    assert math.sqrt(sum(x * x for x in normed)) == pytest.approx(1.0, abs=1e-5)


def test_normalize_each_token_vector(emb):
    for h in emb.embed(TEXT, normalize=True):
        assert math.sqrt(sum(x * x for x in h)) == pytest.approx(1.0, abs=1e-5)


def test_truncate_to_the_batch(stories_path):
    from ferrite import Llama

    small = Llama(model_path=stories_path, embedding=True, n_ctx=128, n_batch=4, n_threads=1, verbose=False)
    with pytest.raises(ValueError):
        small.embed(TEXT, truncate=False)
    states, count = small.embed(TEXT, return_count=True)
    assert len(states) == count == 4


def test_create_embedding_shape(emb):
    out = emb.create_embedding(["The cat sat", "A dog"], model="stories")
    assert out["object"] == "list" and out["model"] == "stories"
    n = [len(emb.tokenize(b"The cat sat")), len(emb.tokenize(b"A dog"))]
    assert [len(d["embedding"]) for d in out["data"]] == n  # one vector per token
    assert out["usage"] == {"prompt_tokens": sum(n), "total_tokens": sum(n)}


def test_embedding_clears_the_context_and_generation_still_works(emb):
    first = emb("Once upon a time", max_tokens=6, temperature=0.0)["choices"][0]["text"]
    emb.embed("The cat sat")
    assert emb.n_tokens == 0
    again = emb("Once upon a time", max_tokens=6, temperature=0.0)["choices"][0]["text"]
    assert first == again


def test_architecture_without_hidden_states():
    from conftest import shared_file
    from ferrite import Llama

    gpt2 = Llama(model_path=str(shared_file("models/synth/synth-gpt2-f32.gguf")), embedding=True, n_ctx=64,
                 n_threads=1, verbose=False)
    with pytest.raises(ValueError, match="not supported"):
        gpt2.embed("hello")


def test_pooling_type_argument_overrides_the_model(emb, stories_path, pooled_paths):
    from ferrite import LLAMA_POOLING_TYPE_MEAN, LLAMA_POOLING_TYPE_NONE, Llama

    mean = Llama(model_path=stories_path, embedding=True, pooling_type=LLAMA_POOLING_TYPE_MEAN, n_ctx=128,
                 n_threads=1, verbose=False)
    states = emb.embed(TEXT)
    want = [math.fsum(h[d] for h in states) / len(states) for d in range(emb.n_embd())]
    assert mean.embed(TEXT) == pytest.approx(want, abs=POOL_TOLERANCE)

    none = Llama(model_path=pooled_paths["last"], embedding=True, pooling_type=LLAMA_POOLING_TYPE_NONE,
                 n_ctx=128, n_threads=1, verbose=False)
    got = none.embed(TEXT)
    assert len(got) == len(states)
    for g, h in zip(got, states):
        assert g == pytest.approx(h, abs=POOL_TOLERANCE)
    with pytest.raises(ValueError, match="pooling"):
        Llama(model_path=stories_path, embedding=True, pooling_type=4, verbose=False)  # rank
