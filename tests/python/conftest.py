"""Shared fixtures: the data root (FERRITE_SHARED, else ../shared beside the
repository), the stories260K model, and a tiny BERT written on the fly.

Missing shared data skips a test locally and fails it in CI (CI=true)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))


def shared_root() -> Path:
    env = os.environ.get("FERRITE_SHARED")
    return Path(env) if env else REPO.parent / "shared"


def shared_file(rel: str) -> Path:
    path = shared_root() / rel
    if not path.exists():
        message = f"shared test data missing: {path}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def stories_path() -> str:
    return str(shared_file("models/stories260K.gguf"))


@pytest.fixture(scope="module")
def llm(stories_path):
    from ferrite import Llama

    return Llama(model_path=stories_path, n_ctx=512, n_threads=1, seed=1234, verbose=False)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory):
    from tiny_gguf import TinyBert

    vocab = shared_file("vocab/ggml-vocab-bert-bge.gguf")
    out = tmp_path_factory.mktemp("bert") / "tiny-bert.gguf"
    return TinyBert(str(vocab), str(out), pooling=1)
