"""Llama.from_pretrained: a model from the Hugging Face hub through
ferrite's pull (the `ferrite pull` cache, resumable and checksummed
downloads; FERRITE_CACHE, FERRITE_HF_ENDPOINT, HF_TOKEN, FERRITE_OFFLINE)
instead of the huggingface_hub package."""

from __future__ import annotations

import fnmatch
from typing import Any, List, Optional

from . import _ferrite

_GLOB_CHARS = "*?["


def _check_repo_id(repo_id: Any) -> str:
    if not isinstance(repo_id, str) or repo_id.count("/") != 1 or ":" in repo_id:
        raise ValueError(f"repo_id must be 'owner/name', got {repo_id!r}")
    return repo_id


def _match(repo_id: str, pattern: str) -> str:
    """The one repository file a glob pattern names (llama-cpp-python's rule:
    no match or several matches are errors)."""
    files = _ferrite.list_repo_files(repo_id)
    found = [f for f in files if fnmatch.fnmatch(f, pattern)]
    if not found:
        gguf = [f for f in files if f.endswith(".gguf")]
        raise ValueError(f"no file of {repo_id} matches '{pattern}'; its GGUF files: {', '.join(gguf) or 'none'}")
    if len(found) > 1:
        raise ValueError(f"several files of {repo_id} match '{pattern}': {', '.join(found)}")
    return found[0]


def pull_file(repo_id: str, filename: Optional[str], cache_dir: str, quiet: bool) -> str:
    """Path of the file in the cache, downloaded first when missing.
    Without a filename: the repository's Q4_K_M GGUF file, else its only one
    (as `ferrite pull owner/repo`)."""
    if filename is None:
        return _ferrite.pull(repo_id, cache_dir, quiet)
    if not isinstance(filename, str) or not filename:
        raise ValueError("filename must be a file name or a glob pattern")
    if any(c in filename for c in _GLOB_CHARS):
        filename = _match(repo_id, filename)
    return _ferrite.pull(f"{repo_id}:{filename}", cache_dir, quiet)


def from_pretrained(cls: Any, repo_id: str, filename: Optional[str] = None,
                    additional_files: Optional[List[str]] = None, local_dir: Optional[str] = None,
                    local_dir_use_symlinks: Any = "auto", cache_dir: Optional[str] = None, **kwargs: Any) -> Any:
    del local_dir_use_symlinks  # files are never linked: they are in the cache folder
    repo_id = _check_repo_id(repo_id)
    folder = local_dir or cache_dir or ""
    quiet = not kwargs.get("verbose", True)
    path = pull_file(repo_id, filename, str(folder), quiet)
    for extra in additional_files or []:
        pull_file(repo_id, extra, str(folder), quiet)
    return cls(model_path=path, **kwargs)
