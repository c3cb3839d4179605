"""Builds the extension `_ferrite` with CMake and Ninja: in an existing
configured build folder when one is named (it is only brought up to date),
else in <root>/build-python, configured for Release with tests and
benchmarks off. ccache, when CMake finds it, is used as scripts/build uses it
(paths relative to the checkout, so other checkouts' objects are reused)."""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
import sys
from typing import Dict, List, Optional

from .project import extension_suffixes

DEFAULT_BUILD_DIR = "build-python"


def _setting(config_settings: Optional[Dict[str, object]], key: str, env: str) -> str:
    """A --config-settings value (pip -C key=value), else the environment's."""
    value = (config_settings or {}).get(key)
    if isinstance(value, list):
        value = value[-1] if value else None
    return str(value) if value else os.environ.get(env, "")


def build_dir(root: str, config_settings: Optional[Dict[str, object]]) -> str:
    chosen = _setting(config_settings, "build-dir", "FERRITE_BUILD_DIR")
    return os.path.abspath(os.path.join(root, chosen or DEFAULT_BUILD_DIR))


def _run(cmd: List[str], env: Dict[str, str]) -> None:
    print("ferrite_build: " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr, flush=True)
    result = subprocess.run(cmd, env=env, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"ferrite_build: '{cmd[0]}' failed with status {result.returncode}")


def _configure_args(root: str, folder: str, config_settings: Optional[Dict[str, object]]) -> List[str]:
    args = ["cmake", "-S", root, "-B", folder, "-DCMAKE_BUILD_TYPE=Release", "-DFERRITE_TESTS=OFF",
            "-DFERRITE_BENCH=OFF", "-DFERRITE_PYTHON=ON", f"-DPYTHON_EXECUTABLE={sys.executable}"]
    if shutil.which("ninja"):
        args += ["-G", "Ninja"]
    args += shlex.split(_setting(config_settings, "cmake-args", "FERRITE_CMAKE_ARGS"))
    return args


def build_extension(root: str, config_settings: Optional[Dict[str, object]]) -> str:
    """Builds target ferrite_python; returns the folder it assembles the
    packages in (<build>/python)."""
    if not shutil.which("cmake"):
        raise RuntimeError("ferrite_build: cmake not found (Debian: scripts/setup installs cmake and ninja-build)")
    folder = build_dir(root, config_settings)
    env = dict(os.environ)
    env.setdefault("CCACHE_BASEDIR", root)
    env.setdefault("CCACHE_NOHASHDIR", "true")
    if not os.path.isfile(os.path.join(folder, "CMakeCache.txt")):
        _run(_configure_args(root, folder, config_settings), env)
    _run(["cmake", "--build", folder, "--target", "ferrite_python"], env)
    return os.path.join(folder, "python")


def find_extension(python_dir: str) -> str:
    """The built _ferrite module, which must suit this interpreter."""
    found = sorted(glob.glob(os.path.join(python_dir, "ferrite", "_ferrite*")))
    for suffix in extension_suffixes():
        for path in found:
            if path.endswith(suffix) and os.path.basename(path) == "_ferrite" + suffix:
                return path
    names = ", ".join(os.path.basename(p) for p in found) or "none"
    raise RuntimeError(f"ferrite_build: no _ferrite extension for this Python ({sys.version.split()[0]}, "
                       f"{sys.executable}) in {python_dir} (found: {names}); build it with this interpreter "
                       "or name another build folder")
