"""llama-cpp-python's import names over ferrite, so that code written for
llama-cpp-python runs unchanged::

    from llama_cpp import Llama, LlamaGrammar

``llama_cpp.Llama`` is ``ferrite.Llama``. Installing the ferrite wheel puts
this package beside ``ferrite``: it cannot be installed in the same
environment as llama-cpp-python itself (both own ``llama_cpp``)."""

from ferrite import (  # noqa: F401  (re-exported)
    LLAMA_DEFAULT_SEED,
    LLAMA_POOLING_TYPE_CLS,
    LLAMA_POOLING_TYPE_LAST,
    LLAMA_POOLING_TYPE_MEAN,
    LLAMA_POOLING_TYPE_NONE,
    LLAMA_POOLING_TYPE_RANK,
    LLAMA_POOLING_TYPE_UNSPECIFIED,
    IgnoredArgumentWarning,
    Llama,
    LlamaClosedError,
    LlamaGrammar,
    LlamaState,
    __version__,
)

from .llama_cache import LlamaCache, LlamaDiskCache, LlamaRAMCache  # noqa: F401

__all__ = [
    "Llama",
    "LlamaGrammar",
    "LlamaState",
    "LlamaCache",
    "LlamaRAMCache",
    "LlamaDiskCache",
    "LlamaClosedError",
    "IgnoredArgumentWarning",
    "LLAMA_DEFAULT_SEED",
    "LLAMA_POOLING_TYPE_UNSPECIFIED",
    "LLAMA_POOLING_TYPE_NONE",
    "LLAMA_POOLING_TYPE_MEAN",
    "LLAMA_POOLING_TYPE_CLS",
    "LLAMA_POOLING_TYPE_LAST",
    "LLAMA_POOLING_TYPE_RANK",
]
