"""Bad input gets a Python exception carrying the engine's message, never a
crash."""

from __future__ import annotations

import pytest


def test_missing_model_file(tmp_path):
    from ferrite import Llama, ModelNotFoundError

    missing = tmp_path / "nope.gguf"
    with pytest.raises(FileNotFoundError, match="nope.gguf"):
        Llama(model_path=str(missing), verbose=False)
    with pytest.raises(ValueError):  # llama-cpp-python raises ValueError here
        Llama(model_path=str(missing), verbose=False)
    assert issubclass(ModelNotFoundError, FileNotFoundError)


def test_not_a_gguf_file(tmp_path):
    from ferrite import FerriteError, FormatError, Llama

    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"this is not a model at all, just some bytes" * 4)
    with pytest.raises(FormatError) as info:
        Llama(model_path=str(bad), verbose=False)
    assert isinstance(info.value, ValueError) and isinstance(info.value, FerriteError)
    assert "bad.gguf" in str(info.value)


def test_truncated_gguf(tmp_path, stories_path):
    from ferrite import Llama

    data = open(stories_path, "rb").read()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="cut.gguf"):
        Llama(model_path=str(cut), verbose=False)


def test_bad_constructor_arguments(stories_path):
    from ferrite import Llama

    with pytest.raises(ValueError, match="n_ctx"):
        Llama(model_path=stories_path, n_ctx=-1, verbose=False)
    with pytest.raises(ValueError, match="n_batch"):
        Llama(model_path=stories_path, n_batch=0, verbose=False)
    with pytest.raises(TypeError, match="n_ctx"):
        Llama(model_path=stories_path, n_ctx="big", verbose=False)
    # As llama-cpp-python, unknown keyword arguments are accepted, but with a warning (test_llama_cpp_api.py).
    with pytest.warns(UserWarning, match="no_such_option"):
        Llama(model_path=stories_path, no_such_option=1, verbose=False)
    with pytest.raises(ValueError, match="lora_path"):
        Llama(model_path=stories_path, lora_path="no-such-adapter.gguf", verbose=False)
    with pytest.raises(TypeError):
        Llama(model_path=None, verbose=False)


def test_bad_call_arguments(llm):
    with pytest.raises(TypeError, match="temperature"):
        llm("x", temperature="hot")
    with pytest.raises(ValueError, match="NaN"):
        llm("x", top_p=float("nan"))
    with pytest.raises(ValueError, match="mirostat"):
        llm("x", mirostat_mode=3)
    with pytest.raises(ValueError, match="context window"):
        llm("word " * 600, max_tokens=1)
    with pytest.raises(ValueError, match="vocabulary"):
        llm([1, 99999], max_tokens=1)
    with pytest.raises(ValueError, match="vocabulary"):
        llm.detokenize([1, 512])
    with pytest.raises(ValueError):
        llm("x", logit_bias={100000: 1.0})
    with pytest.raises(TypeError):
        llm.tokenize(12)
    with pytest.raises(TypeError):
        llm("x", stop=[1])
    with pytest.raises(ValueError):
        llm("x", suffix="y")


def test_bad_grammar(llm):
    from ferrite import InvalidArgumentError, LlamaGrammar

    with pytest.raises(InvalidArgumentError, match="line"):
        LlamaGrammar.from_string("root ::= (")
    with pytest.raises(ValueError):
        llm("x", grammar="root ::= undefined-rule")
    with pytest.raises(ValueError):
        LlamaGrammar.from_json_schema({"type": "no-such-type"})


def test_still_usable_after_errors(llm):
    with pytest.raises(ValueError):
        llm([1, 99999], max_tokens=1)
    out = llm("Once upon a time", max_tokens=4, temperature=0.0)
    assert out["usage"]["completion_tokens"] == 4


def test_vocab_only_refuses_generation():
    from conftest import shared_file
    from ferrite import Llama

    v = Llama(model_path=str(shared_file("vocab/ggml-vocab-llama-spm.gguf")), vocab_only=True, verbose=False)
    with pytest.raises(ValueError, match="vocab_only"):
        v("hello", max_tokens=1)
