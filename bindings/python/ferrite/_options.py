"""Keyword arguments of Llama() that ferrite does not use.

llama-cpp-python's Llama() takes ``**kwargs`` for compatibility, so code
written for it may pass options of another version. Options known to change
nothing here are accepted silently; unknown names are ignored with one
IgnoredArgumentWarning per name and process (never silently)."""

from __future__ import annotations

import warnings
from typing import Any, Dict, Set

# llama-cpp-python options that do not change results here (memory mapping,
# GPU placement, batch splitting, performance counters).
IGNORED_OPTIONS = frozenset((
    "split_mode", "main_gpu", "tensor_split", "use_mmap", "use_mlock", "n_ubatch", "n_threads_batch",
    "offload_kqv", "flash_attn", "numa", "last_n_tokens_size", "rpc_servers", "no_perf",
    "op_offload", "swa_full", "type_k", "type_v", "spm_infill",
    "rope_scaling_type", "yarn_ext_factor", "yarn_attn_factor", "yarn_beta_fast", "yarn_beta_slow",
    "yarn_orig_ctx", "mul_mat_q", "embd_normalize",
))
# Options that would change results and ferrite does not implement: refused
# when set to anything but their default.
UNSUPPORTED_OPTIONS: Dict[str, Any] = {
    "kv_overrides": None, "rope_freq_base": 0.0, "rope_freq_scale": 0.0,
    "lora_base": None, "chat_handler": None, "draft_model": None, "tokenizer": None,
}


class IgnoredArgumentWarning(UserWarning):
    """A keyword argument ferrite does not know was passed and ignored."""


_warned: Set[str] = set()


def warn_once(key: str, message: str) -> None:
    """Warns with `message` the first time `key` is seen in this process."""
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(message, IgnoredArgumentWarning, stacklevel=4)


def check_options(owner: str, options: Dict[str, Any]) -> None:
    """Accepts the ignored options, refuses unsupported ones that are set,
    warns once for each unknown name."""
    for key, value in options.items():
        if key in IGNORED_OPTIONS:
            continue
        if key in UNSUPPORTED_OPTIONS:
            if value != UNSUPPORTED_OPTIONS[key]:
                raise ValueError(f"{owner}({key}=...) is not supported by ferrite")
            continue
        warn_once(f"{owner}.{key}", f"{owner}() got an unknown keyword argument '{key}': ignored")
