"""Writes the source distribution: <name>-<version>.tar.gz holding the
checkout's files that git does not ignore (tracked or not; without git, the
tree minus build folders and caches) under <name>-<version>/, with PKG-INFO."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from typing import List

_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".cache"}


def _source_files(root: str) -> List[str]:
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True).stdout
        files = [f for f in out.decode("utf-8").split("\0") if f]
        return [f for f in files if os.path.isfile(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for here, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("build"))
        rel = os.path.relpath(here, root)
        files.extend(os.path.normpath(os.path.join(rel, n)) for n in sorted(names) if not n.endswith(".pyc"))
    return files


def write_sdist(root: str, directory: str, base: str, pkg_info: str) -> str:
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in _source_files(root):
            tar.add(os.path.join(root, rel), arcname=f"{base}/{rel}", recursive=False)
        data = pkg_info.encode("utf-8")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(data)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(data))
    return name
