"""ferrite: run GGUF language models from Python.

A drop-in for llama-cpp-python's high-level API::

    from ferrite import Llama
    llm = Llama(model_path="model.gguf", n_ctx=2048)
    out = llm("Once upon a time", max_tokens=32)
    print(out["choices"][0]["text"])
"""

from ._ferrite import (  # noqa: F401  (re-exported)
    EngineError,
    FerriteError,
    FormatError,
    InvalidArgumentError,
    IoError,
    ModelError,
    sampler_parameters,
)
from ._closed import LlamaClosedError
from ._options import IgnoredArgumentWarning
from .llama import (
    LLAMA_DEFAULT_SEED,
    LLAMA_POOLING_TYPE_CLS,
    LLAMA_POOLING_TYPE_LAST,
    LLAMA_POOLING_TYPE_MEAN,
    LLAMA_POOLING_TYPE_NONE,
    LLAMA_POOLING_TYPE_RANK,
    LLAMA_POOLING_TYPE_UNSPECIFIED,
    Llama,
    LlamaState,
    ModelNotFoundError,
)
from .llama_grammar import LlamaGrammar

__version__ = "0.1.0"

__all__ = [
    "Llama",
    "LlamaGrammar",
    "LlamaState",
    "LLAMA_DEFAULT_SEED",
    "LLAMA_POOLING_TYPE_UNSPECIFIED",
    "LLAMA_POOLING_TYPE_NONE",
    "LLAMA_POOLING_TYPE_MEAN",
    "LLAMA_POOLING_TYPE_CLS",
    "LLAMA_POOLING_TYPE_LAST",
    "LLAMA_POOLING_TYPE_RANK",
    "FerriteError",
    "InvalidArgumentError",
    "FormatError",
    "ModelError",
    "IoError",
    "EngineError",
    "ModelNotFoundError",
    "LlamaClosedError",
    "IgnoredArgumentWarning",
    "sampler_parameters",
]
