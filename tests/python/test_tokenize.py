"""Tokenization against llama.cpp's goldens: the vocab test strings of
shared/vocab and the prompt tokens of the logits goldens."""

from __future__ import annotations

import json

import pytest

from conftest import shared_file, shared_root

SEPARATOR = "\n__ggml_vocab_test__\n"


def vocab_names():
    root = shared_root() / "vocab"
    names = sorted(p.name[:-len(".gguf.inp")] for p in root.glob("*.gguf.inp")) if root.exists() else []
    return names or ["llama-spm"]


@pytest.mark.parametrize("name", vocab_names())
def test_vocab_goldens(name):
    from ferrite import Llama

    vocab = Llama(model_path=str(shared_file(f"vocab/{name}.gguf")), vocab_only=True, verbose=False)
    inputs = shared_file(f"vocab/{name}.gguf.inp").read_text(encoding="utf-8").split(SEPARATOR)
    outputs = shared_file(f"vocab/{name}.gguf.out").read_text(encoding="utf-8").split("\n")
    assert len(outputs) >= len(inputs)
    for text, line in zip(inputs, outputs):
        want = [int(t) for t in line.split()]
        got = vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        assert got == want, f"{name}: {text!r}"


def test_logits_golden_prompts(llm):
    for rel in ("golden/logits/stories260K.p0.json", "golden/logits/stories260K.p2.json"):
        golden = json.loads(shared_file(rel).read_text())
        prompt = golden.get("prompt", "Once upon a time")
        assert llm.tokenize(prompt.encode("utf-8"), add_bos=True) == golden["tokens"]


def test_roundtrip_and_bos(llm):
    text = b"Once upon a time, there was a dog."
    tokens = llm.tokenize(text)
    assert tokens[0] == llm.token_bos() == 1  # the Llama SentencePiece convention
    assert llm.tokenize(text, add_bos=False) == tokens[1:]
    assert llm.detokenize(tokens) == text
    # Without BOS the SentencePiece word marker of the first piece stays, as in llama-cpp-python.
    assert llm.detokenize(tokens[1:]) == b" " + text


def test_special_tokens_parsed_only_when_asked(llm):
    eos_text = llm.detokenize([llm.token_eos()], special=True)
    assert eos_text == b"</s>"
    assert llm.tokenize(eos_text, add_bos=False, special=True) == [llm.token_eos()]
    assert llm.token_eos() not in llm.tokenize(eos_text, add_bos=False, special=False)


def test_model_facts(llm):
    assert llm.n_vocab() == 512
    assert llm.n_ctx() == 512
    assert llm.token_eos() == 2
    assert llm.metadata["general.architecture"] == "llama"
