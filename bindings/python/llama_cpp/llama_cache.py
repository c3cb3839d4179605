"""llama-cpp-python's prompt caches, accepted by Llama.set_cache() and kept
as no-ops: ferrite's Llama already reuses the longest prefix that a new
prompt shares with the context (the KV cache is not evaluated again), and
save_state()/load_state() keep a context across prompts. These classes
store nothing; every lookup misses."""

from __future__ import annotations

from typing import Any, Optional, Sequence


class LlamaCache:
    """A cache that holds nothing (see the module's note)."""

    def __init__(self, capacity_bytes: int = 2 << 30, cache_dir: Optional[str] = None) -> None:
        self.capacity_bytes = capacity_bytes
        self.cache_dir = cache_dir

    @property
    def cache_size(self) -> int:
        return 0

    def __contains__(self, key: Sequence[int]) -> bool:
        return False

    def __getitem__(self, key: Sequence[int]) -> Any:
        raise KeyError("Key not found")

    def __setitem__(self, key: Sequence[int], value: Any) -> None:
        pass


class LlamaRAMCache(LlamaCache):
    pass


class LlamaDiskCache(LlamaCache):
    def __init__(self, cache_dir: str = ".cache/llama_cache", capacity_bytes: int = 2 << 30) -> None:
        super().__init__(capacity_bytes, cache_dir)
