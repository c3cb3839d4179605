"""Writes the tiny BERT of tests/python/tiny_gguf.py and prints, as JSON, the
independent double-precision reference embeddings of the token lists given.

usage: tiny_bert.py VOCAB.gguf OUT.gguf '[[101, 2000, 102], ...]'
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from tiny_gguf import TinyBert  # noqa: E402


def main() -> None:
    vocab, out, token_lists = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    bert = TinyBert(vocab, out, pooling=1)
    print(json.dumps({"n_vocab": bert.n_vocab, "reference": [bert.reference_embedding(t) for t in token_lists]}))


if __name__ == "__main__":
    main()
