"""``llama_cpp.llama_grammar``: LlamaGrammar (GBNF, or from a JSON schema)."""

from ferrite.llama_grammar import LlamaGrammar  # noqa: F401  (re-exported)
