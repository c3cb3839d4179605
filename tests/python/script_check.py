"""Checks llama_cpp_script.py's output against independent expectations:
the stories260K greedy text (llama2.c's, in ../shared), the grammar's
language, the tiny BERT's double-precision reference embedding."""

from __future__ import annotations

import json
import re

import pytest

from conftest import shared_file

PROMPT = "Once upon a time"
EMBEDDING_TOLERANCE = 5e-3  # as test_embeddings.py


def greedy_continuation() -> str:
    text = shared_file("models/stories260K.greedy200.txt").read_text()
    assert text.startswith(PROMPT)
    return text[len(PROMPT):]


def check_script_output(stdout: str, tiny_bert) -> None:
    result = json.loads(stdout.strip().splitlines()[-1])
    completion = result["completion"]
    assert result["completion_tokens"] == 16
    assert len(completion) > 20 and greedy_continuation().startswith(completion)
    assert result["stream"] == completion
    assert result["chat"]["role"] == "assistant" and isinstance(result["chat"]["content"], str)
    assert result["chat"]["content"].strip() and result["chat_finish"] in ("stop", "length")
    assert re.fullmatch(r"The answer is (yes|no)\.", result["grammar"]), result["grammar"]
    want = tiny_bert.reference_embedding(result["embedding_tokens"])
    assert result["embedding"] == pytest.approx(want, abs=EMBEDDING_TOLERANCE)
    assert result["embedding_count"] == 2
