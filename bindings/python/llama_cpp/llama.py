"""``llama_cpp.llama``: where llama-cpp-python defines Llama."""

from ferrite.llama import Llama, LlamaState  # noqa: F401  (re-exported)
from ferrite.llama_grammar import LlamaGrammar  # noqa: F401

from .llama_cache import LlamaCache, LlamaDiskCache, LlamaRAMCache  # noqa: F401
