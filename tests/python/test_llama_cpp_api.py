"""llama-cpp-python's API beyond completions, through the llama_cpp package:
generate(), scores/eval_logits (against llama.cpp's logits in ../shared),
chat_format names, close(), unknown keyword arguments, LlamaCache."""

from __future__ import annotations

import json
import struct
import warnings

import pytest

from conftest import shared_file
from script_check import greedy_continuation

LOGIT_TOLERANCE = 2e-3  # F32 model: float rounding of a differently ordered sum (tests/model use the same scale)


@pytest.fixture(scope="module")
def p2():
    golden = json.loads(shared_file("golden/logits/stories260K.p2.json").read_text())
    raw = shared_file("golden/logits/stories260K.p2.logits.f32").read_bytes()
    n_vocab = golden["n_vocab"]
    rows = [struct.unpack_from(f"<{n_vocab}f", raw, i * 4 * n_vocab) for i in range(len(golden["tokens"]))]
    return golden["tokens"], rows


def test_imports_as_llama_cpp_python_does():
    import ferrite
    import llama_cpp
    from llama_cpp.llama import Llama
    from llama_cpp.llama_chat_format import chat_format_names
    from llama_cpp.llama_grammar import LlamaGrammar

    assert Llama is llama_cpp.Llama is ferrite.Llama
    assert LlamaGrammar is llama_cpp.LlamaGrammar
    assert {"llama-2", "llama-3", "chatml", "qwen", "gemma", "mistral-instruct", "phi-3"} <= set(chat_format_names())


def test_generate_yields_the_greedy_tokens(stories_path):
    from llama_cpp import Llama

    llm = Llama(model_path=stories_path, n_ctx=512, verbose=False)
    tokens = []
    for token in llm.generate(llm.tokenize(b"Once upon a time"), temp=0.0):
        tokens.append(token)
        if len(tokens) == 24:
            break
    text = llm.detokenize(tokens).decode()
    assert len(text) > 40 and greedy_continuation().startswith(text)
    assert llm.n_tokens >= 5 + 23  # the prompt and the tokens evaluated so far


def test_generate_goes_past_eos_until_the_caller_stops(stories_path):
    from llama_cpp import Llama

    llm = Llama(model_path=stories_path, n_ctx=64, verbose=False)
    prompt = llm.tokenize(b"Once upon a time")
    n = sum(1 for _ in llm.generate(prompt, temp=0.0))
    assert n == 64 - len(prompt)  # every free cell of the context, EOS or not


def test_scores_with_logits_all_match_llama_cpp(stories_path, p2):
    from llama_cpp import Llama

    tokens, want = p2
    llm = Llama(model_path=stories_path, n_ctx=512, logits_all=True, verbose=False)
    llm.eval(tokens)
    scores = llm.scores
    assert scores.shape == (512, llm.n_vocab())
    assert llm._scores.shape == (len(tokens), llm.n_vocab())
    for i in (0, 1, len(tokens) // 2, len(tokens) - 1):
        assert list(scores[i]) == pytest.approx(want[i], abs=LOGIT_TOLERANCE)
    assert not scores[len(tokens):].any()
    rows = llm.eval_logits
    assert len(rows) == len(tokens)
    assert rows[-1] == pytest.approx(want[-1], abs=LOGIT_TOLERANCE)


def test_scores_without_logits_all_hold_the_last_row(stories_path, p2):
    from llama_cpp import Llama

    tokens, want = p2
    llm = Llama(model_path=stories_path, n_ctx=512, verbose=False)
    llm.eval(tokens[:40])
    llm.eval(tokens[40:])
    scores = llm.scores
    assert list(scores[len(tokens) - 1]) == pytest.approx(want[-1], abs=LOGIT_TOLERANCE)
    assert not scores[: len(tokens) - 1].any()
    rows = llm.eval_logits
    assert len(rows) == 1 and rows[0] == pytest.approx(want[-1], abs=LOGIT_TOLERANCE)


# Each name's template marks a user turn with these (the formats' own markers).
FORMAT_MARKERS = {
    "llama-2": "[INST]", "llama-3": "<|start_header_id|>user<|end_header_id|>", "chatml": "<|im_start|>user",
    "qwen": "<|im_start|>user", "gemma": "<start_of_turn>user", "mistral-instruct": "[INST]", "phi-3": "<|user|>",
    "zephyr": "<|user|>", "vicuna": "USER:",
}


@pytest.mark.parametrize("name", sorted(FORMAT_MARKERS))
def test_chat_format_names(stories_path, name):
    from llama_cpp import Llama

    llm = Llama(model_path=stories_path, n_ctx=64, chat_format=name, verbose=False)
    prompt = llm._formatter.render(json.dumps([{"role": "user", "content": "Hi there"}]), "", True)
    assert FORMAT_MARKERS[name] in prompt and "Hi there" in prompt
    with pytest.raises(ValueError, match="chat format"):
        Llama(model_path=stories_path, n_ctx=64, chat_format="no-such-format", verbose=False)


def test_use_after_close_raises_a_clear_error(stories_path):
    from llama_cpp import Llama, LlamaClosedError

    with Llama(model_path=stories_path, n_ctx=64, verbose=False) as llm:
        assert llm.n_ctx() == 64
    for use in (lambda: llm.n_ctx(), lambda: llm.tokenize(b"x"), lambda: llm("x", max_tokens=1),
                lambda: llm.create_chat_completion([{"role": "user", "content": "x"}]), lambda: llm.input_ids,
                lambda: llm.eval_logits, lambda: next(llm.generate([1]))):
        with pytest.raises(LlamaClosedError, match="closed"):
            use()
    llm.close()  # a second close is harmless


def test_unknown_keyword_arguments_warn_once(stories_path):
    from llama_cpp import IgnoredArgumentWarning, Llama

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Llama(model_path=stories_path, n_ctx=64, verbose=False, not_an_option_a=1, use_mmap=False)
        Llama(model_path=stories_path, n_ctx=64, verbose=False, not_an_option_a=2)
    mine = [w for w in caught if issubclass(w.category, IgnoredArgumentWarning)]
    assert len(mine) == 1 and "not_an_option_a" in str(mine[0].message)  # use_mmap is known to change nothing


def test_set_cache_accepts_llama_cache(stories_path):
    from llama_cpp import Llama, LlamaRAMCache

    llm = Llama(model_path=stories_path, n_ctx=128, verbose=False)
    cache = LlamaRAMCache(capacity_bytes=1 << 20)
    llm.set_cache(cache)
    a = llm("Once upon a time", max_tokens=4, temperature=0.0)["choices"][0]["text"]
    b = llm("Once upon a time", max_tokens=4, temperature=0.0)["choices"][0]["text"]
    assert a == b and greedy_continuation().startswith(a)
    assert cache.cache_size == 0 and [1, 2] not in cache
