"""Grammars that constrain generation (llama-cpp-python's LlamaGrammar)."""

from __future__ import annotations

import json
from typing import Any, Union

from . import _ferrite


class LlamaGrammar:
    """A GBNF grammar (llama.cpp's format), checked when it is made.

    ``LlamaGrammar.from_string(gbnf)`` or ``LlamaGrammar.from_json_schema(schema)``;
    pass it as ``grammar=`` to a completion.
    """

    def __init__(self, gbnf: str) -> None:
        if not isinstance(gbnf, str):
            raise TypeError("a grammar is GBNF text (str)")
        _ferrite.check_grammar(gbnf)
        self._grammar = gbnf

    @property
    def grammar(self) -> str:
        return self._grammar

    @classmethod
    def from_string(cls, grammar: str, verbose: bool = True) -> "LlamaGrammar":
        return cls(grammar)

    @classmethod
    def from_file(cls, file: str, verbose: bool = True) -> "LlamaGrammar":
        with open(file, encoding="utf-8") as f:
            return cls(f.read())

    @classmethod
    def from_json_schema(cls, json_schema: Union[str, dict], verbose: bool = True) -> "LlamaGrammar":
        text = json_schema if isinstance(json_schema, str) else json.dumps(json_schema)
        return cls(_ferrite.json_schema_to_gbnf(text))

    def __repr__(self) -> str:
        return f"LlamaGrammar({self._grammar!r})"


def grammar_text(grammar: Any) -> str:
    """GBNF text of a ``grammar=`` argument (LlamaGrammar, str or None)."""
    if grammar is None:
        return ""
    if isinstance(grammar, LlamaGrammar):
        return grammar.grammar
    if isinstance(grammar, str):
        _ferrite.check_grammar(grammar)
        return grammar
    raise TypeError(f"grammar must be a LlamaGrammar or GBNF text, not {type(grammar).__name__}")


def json_schema_gbnf(schema: Any) -> str:
    """GBNF of a JSON schema (dict or JSON text); any JSON object for None."""
    if schema is None:
        return _ferrite.json_any_gbnf(True)
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return _ferrite.json_schema_to_gbnf(text)
