"""Text completions: shapes, greedy text against the independent references
in shared/, log-probabilities against llama.cpp's logits, stop strings,
echo, streaming, seeds."""

from __future__ import annotations

import json

import pytest

from conftest import shared_file


def test_greedy_matches_llama2c_reference(llm):
    # The greedy continuation of BOS that llama2.c prints (shared/README.md).
    want = shared_file("models/stories260K.greedy200.txt").read_text()
    out = llm("", max_tokens=60, temperature=0.0)
    text = out["choices"][0]["text"]
    assert len(text) > 100
    # After a bare BOS the text starts the document, as the tokenizer decodes
    # it: no SentencePiece word-marker space (the CLI and the server agree).
    assert want.startswith(text)


def test_echo_is_the_prompt_and_the_continuation_byte_for_byte(llm):
    want = shared_file("models/stories260K.greedy200.txt").read_text()
    prompt = "Once upon a"
    echoed = llm(prompt, max_tokens=12, temperature=0.0, echo=True)["choices"][0]["text"]
    plain = llm(prompt, max_tokens=12, temperature=0.0)["choices"][0]["text"]
    assert plain.startswith(" time")  # the space after "a" is the continuation's
    assert echoed == prompt + plain
    assert len(echoed) > len(prompt) + 5 and want.startswith(echoed)
    streamed = "".join(c["choices"][0]["text"]
                       for c in llm(prompt, max_tokens=12, temperature=0.0, echo=True, stream=True))
    assert streamed == echoed


def test_every_sampler_parameter_is_reachable(llm):
    import ferrite

    names = set(ferrite.sampler_parameters())
    assert {"dry_multiplier", "xtc_probability", "top_n_sigma", "mirostat", "repeat_last_n",
            "dry_sequence_breakers", "samplers", "dynatemp_range"} <= names
    # DRY needs a repeat to act on: greedy stories repeat themselves within 80 tokens.
    base = llm("Once upon a time", max_tokens=80, temperature=0.0)["choices"][0]["text"]
    dry = llm("Once upon a time", max_tokens=80, temperature=0.0, dry_multiplier=2.0,
              dry_allowed_length=1)["choices"][0]["text"]
    assert dry != base
    xtc = llm("Once upon a time", max_tokens=40, temperature=1.0, seed=5, xtc_probability=1.0,
              xtc_threshold=0.05)["choices"][0]["text"]
    plain = llm("Once upon a time", max_tokens=40, temperature=1.0, seed=5)["choices"][0]["text"]
    assert xtc != plain
    with pytest.raises(TypeError):
        llm("Once", max_tokens=1, no_such_sampler=1.0)
    with pytest.raises(ValueError):
        llm("Once", max_tokens=1, mirostat_mode=0, dry_base=0.5)  # out of range, as the CLI and server say


def test_return_shape(llm):
    out = llm.create_completion("Once upon a time", max_tokens=5, temperature=0.0, model="stories")
    assert set(out) == {"id", "object", "created", "model", "choices", "usage"}
    assert out["id"].startswith("cmpl-")
    assert out["object"] == "text_completion"
    assert out["model"] == "stories"
    assert isinstance(out["created"], int)
    (choice,) = out["choices"]
    assert set(choice) == {"text", "index", "logprobs", "finish_reason"}
    assert choice["index"] == 0 and choice["logprobs"] is None
    assert choice["finish_reason"] == "length"
    n_prompt = len(llm.tokenize(b"Once upon a time"))
    assert out["usage"] == {"prompt_tokens": n_prompt, "completion_tokens": 5, "total_tokens": n_prompt + 5}


def test_golden_prompt_greedy_continuation(llm):
    golden = json.loads(shared_file("golden/logits/stories260K.p2.json").read_text())
    assert llm.tokenize(golden["prompt"].encode()) == golden["tokens"]
    n = len(golden["greedy"])
    out = llm(golden["tokens"], max_tokens=n, temperature=0.0)
    want = bytes.fromhex(golden["greedy_text_hex"]).decode("utf-8")
    assert out["choices"][0]["text"] == want


def test_echo_logprobs_match_llama_cpp_logits(llm):
    golden = json.loads(shared_file("golden/logits/stories260K.p0.json").read_text())
    tokens = golden["tokens"]
    out = llm(tokens, max_tokens=1, temperature=0.0, echo=True, logprobs=3)
    lp = out["choices"][0]["logprobs"]
    assert out["choices"][0]["text"].startswith("Once upon a time")
    assert len(lp["tokens"]) == len(tokens) + 1
    assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
    checked = 0
    for i in range(1, len(tokens)):
        pos = golden["positions"][i - 1]
        logits = dict(pos["top"])
        if tokens[i] in logits:  # log p = logit - log-sum-exp (shared/README.md)
            assert lp["token_logprobs"][i] == pytest.approx(logits[tokens[i]] - pos["lse"], abs=1e-3)
            checked += 1
        best_id, best_logit = pos["top"][0]
        best_piece = llm.detokenize([best_id], prev_tokens=[1]).decode()
        assert lp["top_logprobs"][i][best_piece] == pytest.approx(best_logit - pos["lse"], abs=1e-3)
    assert checked > 0
    # Offsets index the returned text.
    text = out["choices"][0]["text"]
    for tok, off in zip(lp["tokens"], lp["text_offset"]):
        assert text[off:off + len(tok)] == tok


def test_stop_string_cuts_text(llm):
    full = llm("Once upon a time", max_tokens=30, temperature=0.0)["choices"][0]["text"]
    assert "Lily" in full
    out = llm("Once upon a time", max_tokens=30, temperature=0.0, stop=["Lily"])
    assert out["choices"][0]["text"] == full[:full.index("Lily")]
    assert out["choices"][0]["finish_reason"] == "stop"
    # A stop string split across tokens is caught too ("Li" + "ly").
    out = llm("Once upon a time", max_tokens=30, temperature=0.0, stop="ily.")
    assert "ily." not in out["choices"][0]["text"]


def test_max_tokens_none_runs_to_the_context_end(stories_path):
    from ferrite import Llama

    small = Llama(model_path=stories_path, n_ctx=32, n_threads=1, verbose=False)
    eos = small.token_eos()
    out = small("Once upon a time", max_tokens=None, temperature=0.0, logit_bias={eos: float("-inf")})
    n_prompt = out["usage"]["prompt_tokens"]
    assert out["usage"]["completion_tokens"] == 32 - n_prompt
    assert out["choices"][0]["finish_reason"] == "length"


def test_streaming_concatenates_to_the_whole_text(llm):
    whole = llm("Once upon a time", max_tokens=24, temperature=0.0)
    chunks = list(llm("Once upon a time", max_tokens=24, temperature=0.0, stream=True))
    assert len(chunks) > 1
    for c in chunks:
        assert set(c) == {"id", "object", "created", "model", "choices"}
        assert c["object"] == "text_completion" and c["id"] == chunks[0]["id"]
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert "".join(c["choices"][0]["text"] for c in chunks) == whole["choices"][0]["text"]


def test_streaming_with_echo_and_logprobs(llm):
    chunks = list(llm("Once upon a time", max_tokens=4, temperature=0.0, stream=True, echo=True, logprobs=1))
    text = "".join(c["choices"][0]["text"] for c in chunks)
    assert text.startswith("Once upon a time")
    n_tokens = sum(len(c["choices"][0]["logprobs"]["tokens"]) for c in chunks)
    assert n_tokens == len(llm.tokenize(b"Once upon a time")) + 4


def test_seed_gives_the_same_text(llm):
    a = llm("Once upon a time", max_tokens=40, temperature=1.0, seed=42)["choices"][0]["text"]
    b = llm("Once upon a time", max_tokens=40, temperature=1.0, seed=42)["choices"][0]["text"]
    assert a == b
    texts = {llm("Once upon a time", max_tokens=40, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0,
                 seed=s)["choices"][0]["text"] for s in range(6)}
    assert len(texts) > 1  # the seed matters


def test_constructor_seed_makes_calls_repeatable(stories_path):
    from ferrite import Llama

    runs = []
    for _ in range(2):
        m = Llama(model_path=stories_path, n_ctx=128, n_threads=1, seed=7, verbose=False)
        runs.append([m("Once", max_tokens=20, temperature=1.0)["choices"][0]["text"] for _ in range(2)])
    assert runs[0] == runs[1]


def test_grammar_constrains_completion(llm):
    from ferrite import LlamaGrammar

    g = LlamaGrammar.from_string('root ::= ("yes" | "no") "."')
    out = llm("Once upon a time", max_tokens=10, temperature=1.0, seed=3, grammar=g)
    assert out["choices"][0]["text"] in ("yes.", "no.")
    assert out["choices"][0]["finish_reason"] == "stop"
