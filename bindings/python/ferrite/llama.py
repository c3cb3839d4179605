"""The Llama class: llama-cpp-python's high-level API over the ferrite engine.

Return values have llama-cpp-python's shapes (OpenAI-style dicts), so code
written for ``llama_cpp.Llama`` runs with ``from ferrite import Llama``.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from . import _ferrite
from ._closed import LlamaClosedError
from ._completion import CompletionRequest, run_completion, stream_completion
from ._options import check_options
from ._pretrained import from_pretrained
from ._token_loop import TokenLoopMixin
from .llama_chat import ChatMixin

# llama.cpp's "pick a random seed" value.
LLAMA_DEFAULT_SEED = 0xFFFFFFFF

# Pooling of embeddings (llama.cpp's values). Rank: a reranker's score, the
# one value embed() gives per input (a model whose file says rank and holds a
# classification head; refused for others).
LLAMA_POOLING_TYPE_UNSPECIFIED = -1
LLAMA_POOLING_TYPE_NONE = 0
LLAMA_POOLING_TYPE_MEAN = 1
LLAMA_POOLING_TYPE_CLS = 2
LLAMA_POOLING_TYPE_LAST = 3
LLAMA_POOLING_TYPE_RANK = 4


class ModelNotFoundError(FileNotFoundError, ValueError):
    """The model file does not exist (a FileNotFoundError and, as in
    llama-cpp-python, a ValueError)."""


class LlamaState:
    """What save_state() captures, with llama-cpp-python's attributes: the
    tokens the context holds, the KV cache itself (``llama_state``, bytes in
    ferrite's sequence-state format, tokens included) and the seed.

    load_state() copies the cache back without evaluating anything. A state
    without ``llama_state`` (built by hand) is restored by evaluating
    ``input_ids``. ``scores`` is None: Llama.scores recomputes logits from
    the restored tokens when read.
    """

    def __init__(self, input_ids: Sequence[int], scores: Any, n_tokens: int, llama_state: bytes,
                 llama_state_size: int, seed: int) -> None:
        self.input_ids = list(input_ids)
        self.scores = scores
        self.n_tokens = n_tokens
        self.llama_state = llama_state
        self.llama_state_size = llama_state_size
        self.seed = seed


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


class Llama(ChatMixin, TokenLoopMixin):
    """A model and its context. Not for use from several threads at once.

    Keyword arguments of llama-cpp-python that change nothing here (use_mmap,
    flash_attn, n_threads_batch, ... : _options.py) are accepted; unknown ones
    are ignored with one IgnoredArgumentWarning per name."""

    def __init__(
        self,
        model_path: str,
        *,
        n_gpu_layers: int = 0,
        seed: int = LLAMA_DEFAULT_SEED,
        n_ctx: int = 512,
        n_batch: int = 512,
        n_threads: Optional[int] = None,
        embedding: bool = False,
        pooling_type: int = LLAMA_POOLING_TYPE_UNSPECIFIED,
        vocab_only: bool = False,
        chat_format: Optional[str] = None,
        logits_all: bool = False,
        lora_path: Optional[str] = None,
        lora_scale: float = 1.0,
        verbose: bool = True,
        **kwargs: Any,
    ) -> None:
        self.verbose = verbose
        self._live_session = None
        self._formatter = None
        check_options("Llama", kwargs)
        if not isinstance(model_path, (str, os.PathLike)):
            raise TypeError(f"model_path must be a path, not {type(model_path).__name__}")
        model_path = os.fspath(model_path)
        _check_int("n_ctx", n_ctx, 0)
        _check_int("n_batch", n_batch, 1)
        _check_int("n_gpu_layers", n_gpu_layers, -1)
        _check_int("pooling_type", pooling_type, LLAMA_POOLING_TYPE_UNSPECIFIED)
        _check_int("seed", seed, 0) if seed != -1 else None
        if n_threads is not None:
            _check_int("n_threads", n_threads, 1)
        if not os.path.exists(model_path):
            raise ModelNotFoundError(f"Model path does not exist: {model_path}")
        if lora_path is not None:
            if not isinstance(lora_path, (str, os.PathLike)):
                raise TypeError(f"lora_path must be a path, not {type(lora_path).__name__}")
            lora_path = os.fspath(lora_path)
            if not os.path.exists(lora_path):
                raise ValueError(f"lora_path does not exist: {lora_path}")
        if isinstance(lora_scale, bool) or not isinstance(lora_scale, (int, float)):
            raise TypeError(f"lora_scale must be a number, not {type(lora_scale).__name__}")
        if n_gpu_layers != 0 and verbose and not _ferrite.gpu_offload_available():
            print("ferrite: n_gpu_layers is ignored (this build evaluates on the CPU)", file=sys.stderr)

        self.model_path = model_path
        self._seed = LLAMA_DEFAULT_SEED if seed == -1 else seed
        self._embedding = bool(embedding)
        self._logits_all = bool(logits_all)
        self._cache: Any = None
        self._live_session = _ferrite.Session(model_path, n_ctx=n_ctx, n_batch=n_batch, n_threads=n_threads or 0,
                                              embedding=self._embedding, vocab_only=bool(vocab_only),
                                              n_gpu_layers=n_gpu_layers, pooling_type=pooling_type,
                                              lora_path=lora_path or "", lora_scale=float(lora_scale))
        self.n_batch = n_batch
        self.metadata: Dict[str, str] = self._session.metadata()
        self._init_chat(chat_format)
        if verbose and not vocab_only:
            print(f"ferrite: loaded {model_path} ({self._session.arch}, n_ctx={self._session.n_ctx}, "
                  f"threads={self._session.n_threads})", file=sys.stderr)

    @classmethod
    def from_pretrained(cls, repo_id: str, filename: Optional[str] = None,
                        additional_files: Optional[List[str]] = None, local_dir: Optional[str] = None,
                        local_dir_use_symlinks: Any = "auto", cache_dir: Optional[str] = None,
                        **kwargs: Any) -> "Llama":
        """A model from the Hugging Face hub (``filename`` may be a glob
        pattern matching one file; without it, the Q4_K_M file or the only
        GGUF file), downloaded through ferrite's pull into its cache
        (FERRITE_CACHE, or ``local_dir``/``cache_dir`` as the cache folder:
        the file goes to ``<folder>/<owner>/<repo>/<file>``). The other
        keyword arguments go to Llama()."""
        return from_pretrained(cls, repo_id, filename, additional_files, local_dir, local_dir_use_symlinks,
                               cache_dir, **kwargs)

    @property
    def _session(self) -> Any:
        session = self._live_session
        if session is None:
            raise LlamaClosedError()
        return session

    # -- model facts ---------------------------------------------------------

    def n_ctx(self) -> int:
        return self._session.n_ctx

    def n_vocab(self) -> int:
        return self._session.n_vocab

    def n_embd(self) -> int:
        return self._session.n_embd

    def token_bos(self) -> int:
        return self._session.token_bos

    def token_eos(self) -> int:
        return self._session.token_eos

    @property
    def n_tokens(self) -> int:
        """Tokens the context holds."""
        return len(self._session.cached_tokens)

    @property
    def input_ids(self) -> List[int]:
        return list(self._session.cached_tokens)

    # -- tokens --------------------------------------------------------------

    def tokenize(self, text: Union[bytes, str], add_bos: bool = True, special: bool = False) -> List[int]:
        if isinstance(text, str):
            text = text.encode("utf-8")
        if not isinstance(text, (bytes, bytearray)):
            raise TypeError(f"tokenize() takes bytes, not {type(text).__name__}")
        return self._session.tokenize(bytes(text), add_bos, special)

    def detokenize(self, tokens: Sequence[int], prev_tokens: Optional[Sequence[int]] = None,
                   special: bool = False) -> bytes:
        tokens = list(tokens)
        text = self._session.detokenize(tokens, special)
        # As llama-cpp-python: the space a SentencePiece vocabulary puts before
        # the first word goes when the text starts with BOS.
        if tokens and tokens[0] == self.token_bos() and text.startswith(b" "):
            return text[1:]
        return text

    # -- context -------------------------------------------------------------

    def reset(self) -> None:
        """Forgets the context (the next prompt is evaluated from scratch)."""
        self._session.reset()

    def eval(self, tokens: Sequence[int]) -> None:
        """Appends tokens to the context."""
        self._session.eval(list(tokens))

    def set_seed(self, seed: int) -> None:
        self._seed = LLAMA_DEFAULT_SEED if seed == -1 else _check_int("seed", seed, 0)

    def save_state(self) -> LlamaState:
        """The context's KV cache and tokens (no evaluation on load_state)."""
        data = self._session.save_state()
        ids = list(self._session.cached_tokens)
        return LlamaState(ids, None, len(ids), data, len(data), self._seed)

    def load_state(self, state: LlamaState) -> None:
        if not isinstance(state, LlamaState):
            raise TypeError("load_state() takes a LlamaState from save_state()")
        if len(state.input_ids) > self.n_ctx():
            raise ValueError(f"the state holds {len(state.input_ids)} tokens, more than n_ctx={self.n_ctx()}")
        data = state.llama_state
        if data:
            if not isinstance(data, (bytes, bytearray)) or len(data) != state.llama_state_size:
                raise ValueError("the state's llama_state is not the bytes save_state() wrote")
            self._session.load_state(bytes(data))
        else:
            self._session.restore(list(state.input_ids))
        self._seed = state.seed

    def set_cache(self, cache: Any) -> None:
        """Accepted for llama-cpp-python's LlamaCache/LlamaRAMCache/LlamaDiskCache
        (llama_cpp/llama_cache.py), which hold nothing and are never consulted:
        ferrite reuses the context's cached prefix of each prompt by itself."""
        self._cache = cache

    def close(self) -> None:
        """Releases the model; using this Llama afterwards raises LlamaClosedError."""
        self._live_session = None
        self._formatter = None
        self._logits_memo = None

    def __enter__(self) -> "Llama":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- completions ---------------------------------------------------------

    def _call_seed(self, seed: Optional[int]) -> int:
        if seed is None:
            return self._seed
        if seed == -1:
            return LLAMA_DEFAULT_SEED
        return _check_int("seed", seed, 0)

    def _prompt_tokens(self, prompt: Union[str, bytes, Sequence[int]]) -> List[int]:
        if self._session.vocab_only:
            raise ValueError("this Llama was opened with vocab_only=True: it can only tokenize")
        if isinstance(prompt, (str, bytes)):
            tokens = self.tokenize(prompt, add_bos=True, special=True)
        elif isinstance(prompt, Sequence):
            tokens = [_check_int("prompt token", t, 0) for t in prompt]
        else:
            raise TypeError(f"prompt must be a str or a list of token ids, not {type(prompt).__name__}")
        if not tokens:
            if self.token_bos() < 0:
                raise ValueError("the prompt is empty and the model has no BOS token")
            tokens = [self.token_bos()]
        if len(tokens) >= self.n_ctx():
            raise ValueError(f"Requested tokens ({len(tokens)}) exceed context window of {self.n_ctx()}")
        return tokens

    def create_completion(
        self,
        prompt: Union[str, List[int]],
        suffix: Optional[str] = None,
        max_tokens: Optional[int] = 16,
        temperature: float = 0.8,
        top_p: float = 0.95,
        min_p: float = 0.05,
        typical_p: float = 1.0,
        logprobs: Optional[int] = None,
        echo: bool = False,
        stop: Optional[Union[str, List[str]]] = None,
        frequency_penalty: float = 0.0,
        presence_penalty: float = 0.0,
        repeat_penalty: float = 1.0,
        top_k: int = 40,
        stream: bool = False,
        seed: Optional[int] = None,
        tfs_z: float = 1.0,
        mirostat_mode: int = 0,
        mirostat_tau: float = 5.0,
        mirostat_eta: float = 0.1,
        model: Optional[str] = None,
        stopping_criteria: Any = None,
        logits_processor: Any = None,
        grammar: Any = None,
        logit_bias: Optional[Dict[int, float]] = None,
        **sampler_options: Any,
    ) -> Union[Dict[str, Any], Iterator[Dict[str, Any]]]:
        """Text completion; a dict, or with stream=True an iterator of chunks.

        Beyond llama-cpp-python's arguments, every sampler parameter of
        ferrite is accepted by its name (``ferrite.sampler_parameters()``:
        dry_multiplier, xtc_probability, top_n_sigma, repeat_last_n, ...)."""
        if suffix is not None:
            raise ValueError("suffix (fill-in-the-middle) is not supported by ferrite")
        if stopping_criteria is not None or logits_processor is not None:
            raise ValueError("stopping_criteria and logits_processor are not supported by ferrite")
        if logprobs is not None:
            _check_int("logprobs", logprobs, 0)
        req = CompletionRequest(
            llama=self,
            prompt_tokens=self._prompt_tokens(prompt),
            prompt_text=_prompt_string(prompt),
            max_tokens=max_tokens,
            sampling=_sampling(temperature, top_p, min_p, typical_p, top_k, repeat_penalty, frequency_penalty,
                               presence_penalty, mirostat_mode, mirostat_tau, mirostat_eta,
                               self._call_seed(seed), logit_bias, sampler_options),
            stop=_stop_list(stop),
            grammar=grammar,
            logprobs=logprobs,
            echo=echo,
            model=model or self.model_path,
        )
        if stream:
            return stream_completion(req)
        return run_completion(req)

    def __call__(self, prompt: Union[str, List[int]], *args: Any, **kwargs: Any) -> Any:
        return self.create_completion(prompt, *args, **kwargs)

    # -- embeddings ----------------------------------------------------------

    def embed(self, input: Union[str, List[str]], normalize: bool = False, truncate: bool = True,
              return_count: bool = False) -> Any:
        """Embeddings of a text (a list of floats, or a list of token vectors
        when the model pools nothing) or of a list of texts (a list of those).

        Encoders (bert) and decoders (llama, qwen2, ...: the final hidden
        state after the output norm, as llama.cpp) alike; pooling as
        ``Llama(pooling_type=...)`` or else the model's ``<arch>.pooling_type``
        says (decoders without one: none, so one vector per token). A decoder's context is cleared, as in
        llama-cpp-python."""
        if not self._embedding:
            raise RuntimeError("Llama model must be created with embedding=True to call this method")
        single = isinstance(input, str)
        texts = [input] if single else list(input)
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("embed() takes a str or a list of str")
        limit = self._session.max_embed_tokens
        batches = []
        for t in texts:
            tokens = self.tokenize(t.encode("utf-8"), add_bos=True, special=False)
            if len(tokens) > limit:
                if not truncate:
                    raise ValueError(f"the input has {len(tokens)} tokens, more than {limit}")
                tokens = tokens[:limit]
            batches.append(tokens)
        vectors, per_token = self._session.embed(batches)
        n_embd = self.n_embd()
        out: List[Any] = []
        for v in vectors:
            rows = [v[i:i + n_embd] for i in range(0, len(v), n_embd)] if per_token else [v]
            if normalize:
                rows = [_l2_normalize(r) for r in rows]
            out.append(rows if per_token else rows[0])
        result = out[0] if single else out
        count = sum(len(b) for b in batches)
        return (result, count) if return_count else result

    def create_embedding(self, input: Union[str, List[str]], model: Optional[str] = None) -> Dict[str, Any]:
        texts = [input] if isinstance(input, str) else list(input)
        embeds, count = self.embed(texts, return_count=True)
        return {
            "object": "list",
            "data": [{"object": "embedding", "embedding": e, "index": i} for i, e in enumerate(embeds)],
            "model": model or self.model_path,
            "usage": {"prompt_tokens": count, "total_tokens": count},
        }


def _l2_normalize(v: List[float]) -> List[float]:
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v] if norm > 0 else list(v)


def _prompt_string(prompt: Any) -> Optional[str]:
    """The prompt as text, for echo (None for token ids)."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, bytes):
        return prompt.decode("utf-8", errors="replace")
    return None


def _stop_list(stop: Optional[Union[str, List[str]]]) -> List[str]:
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop] if stop else []
    if not all(isinstance(s, str) for s in stop):
        raise TypeError("stop must be a str or a list of str")
    return [s for s in stop if s]


def _sampling(temperature: float, top_p: float, min_p: float, typical_p: float, top_k: int,
              repeat_penalty: float, frequency_penalty: float, presence_penalty: float, mirostat_mode: int,
              mirostat_tau: float, mirostat_eta: float, seed: int,
              logit_bias: Optional[Dict[int, float]], extra: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    for name, value in (("temperature", temperature), ("top_p", top_p), ("min_p", min_p),
                        ("typical_p", typical_p), ("repeat_penalty", repeat_penalty),
                        ("frequency_penalty", frequency_penalty), ("presence_penalty", presence_penalty),
                        ("mirostat_tau", mirostat_tau), ("mirostat_eta", mirostat_eta)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, not {type(value).__name__}")
        if math.isnan(value):
            raise ValueError(f"{name} must not be NaN")
    if repeat_penalty <= 0:
        raise ValueError(f"repeat_penalty must be positive, got {repeat_penalty}")
    if mirostat_mode not in (0, 1, 2):
        raise ValueError(f"mirostat_mode must be 0, 1 or 2, got {mirostat_mode}")
    bias = None
    if logit_bias:
        bias = {}
        for token, value in logit_bias.items():
            bias[int(token)] = float(value)
    params = {
        "temperature": float(temperature), "top_p": float(top_p), "min_p": float(min_p),
        "typical_p": float(typical_p), "top_k": _check_int("top_k", top_k, -(2 ** 31)),
        "repeat_penalty": float(repeat_penalty), "frequency_penalty": float(frequency_penalty),
        "presence_penalty": float(presence_penalty), "mirostat": mirostat_mode,
        "mirostat_tau": float(mirostat_tau), "mirostat_eta": float(mirostat_eta), "seed": seed,
        "logit_bias": bias,
    }
    if extra:
        known = set(_ferrite.sampler_parameters())
        for name, value in extra.items():
            if name not in known or name in params:
                raise TypeError(f"got an unexpected keyword argument '{name}'")
            params[name] = value
    return params
