#!/usr/bin/env python3
"""Semantic search: embeds documents (one per line of a file) and ranks them
by cosine similarity to a query.

    python3 examples/python/embedding_search.py EMBEDDING_MODEL.gguf DOCS.txt "query" [--top 3]

Prints "score<TAB>document" for the best matches, best first. Works with
embedding models (bert) and with decoders (llama, qwen2, ...): a model that
pools nothing gives one vector per token, averaged here into one.
"""

import argparse
import math
import sys

from ferrite import Llama


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na > 0 and nb > 0 else 0.0


def as_vector(embedding):
    """One vector: the embedding itself, or the mean of its token vectors."""
    if embedding and isinstance(embedding[0], list):
        n = len(embedding)
        return [sum(col) / n for col in zip(*embedding)]
    return embedding


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("documents")
    ap.add_argument("query")
    ap.add_argument("--top", type=int, default=3)
    args = ap.parse_args()

    with open(args.documents, encoding="utf-8") as f:
        docs = [line.strip() for line in f if line.strip()]
    if not docs:
        print("no documents", file=sys.stderr)
        return 1
    llm = Llama(model_path=args.model, embedding=True, verbose=False)
    doc_vectors = [as_vector(e) for e in llm.embed(docs, normalize=True)]
    query_vector = as_vector(llm.embed(args.query, normalize=True))
    ranked = sorted(((cosine(query_vector, v), d) for v, d in zip(doc_vectors, docs)), key=lambda p: -p[0])
    for score, doc in ranked[: args.top]:
        print(f"{score:.4f}\t{doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
