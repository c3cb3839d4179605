"""The examples in examples/python run and do what they say."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO

EXAMPLES = REPO / "examples" / "python"


def _run(args, stdin=""):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)  # the build's package, as this test sees it
    return subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True, env=env,
                          timeout=120)


def test_chat_loop_reads_stdin(stories_path):
    proc = _run([str(EXAMPLES / "chat.py"), stories_path, "--max-tokens", "6", "--n-ctx", "512",
                 "--temperature", "0"], stdin="Hello there\n\nTell me a story\n")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2  # one reply per non-empty input line
    assert all(line.strip() for line in lines)


@pytest.mark.parametrize("model", ["bert", "decoder"])
def test_embedding_search_ranks_the_exact_match_first(model, tiny_bert, stories_path, tmp_path):
    docs = ["the cat sat on the mat", "stock markets fell sharply today", "a recipe for apple pie",
            "rain is expected tomorrow"]
    path = tmp_path / "docs.txt"
    path.write_text("\n".join(docs) + "\n")
    model_path = tiny_bert.path if model == "bert" else stories_path  # stories260K: one vector per token
    for query in (docs[1], docs[2]):
        proc = _run([str(EXAMPLES / "embedding_search.py"), model_path, str(path), query, "--top", "2"])
        assert proc.returncode == 0, proc.stderr
        best = proc.stdout.splitlines()[0].split("\t")
        assert best[1] == query
        assert float(best[0]) > 0.9999  # cosine of a vector with itself
