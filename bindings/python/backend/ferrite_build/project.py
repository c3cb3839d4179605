"""The distribution's facts: name, version and metadata from pyproject.toml's
[project] table, the packages a wheel holds, and the wheel's tag for the
interpreter running the build."""

from __future__ import annotations

import importlib.machinery
import os
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import List

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None  # type: ignore[assignment]

# The packages a wheel holds, under bindings/python.
PACKAGES = ("ferrite", "llama_cpp")
PACKAGE_FILE_SUFFIXES = (".py", ".pyi", "py.typed")


def source_root() -> str:
    """The repository root (PEP 517 runs hooks in the project's folder)."""
    return os.path.abspath(os.getcwd())


@dataclass
class Project:
    name: str
    version: str
    summary: str = ""
    requires_python: str = ""
    license: str = ""
    extras: dict = field(default_factory=dict)  # extra -> [requirement]

    @property
    def dist_info(self) -> str:
        return f"{self.name}-{self.version}.dist-info"

    def metadata(self) -> str:
        """The METADATA file (core metadata 2.1)."""
        lines = ["Metadata-Version: 2.1", f"Name: {self.name}", f"Version: {self.version}"]
        if self.summary:
            lines.append(f"Summary: {self.summary}")
        if self.license:
            lines.append(f"License: {self.license}")
        if self.requires_python:
            lines.append(f"Requires-Python: {self.requires_python}")
        for extra, reqs in sorted(self.extras.items()):
            lines.append(f"Provides-Extra: {extra}")
            lines.extend(f'Requires-Dist: {r}; extra == "{extra}"' for r in reqs)
        return "\n".join(lines) + "\n"


def read_project(root: str) -> Project:
    if tomllib is None:
        raise RuntimeError("ferrite's build backend needs Python 3.11 or newer (tomllib)")
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        table = tomllib.load(f).get("project", {})
    for key in ("name", "version"):
        if not isinstance(table.get(key), str):
            raise RuntimeError(f"pyproject.toml: [project] needs a '{key}' string")
    lic = table.get("license", {})
    return Project(name=table["name"], version=table["version"], summary=table.get("description", ""),
                   requires_python=table.get("requires-python", ""),
                   license=lic.get("text", "") if isinstance(lic, dict) else str(lic),
                   extras=dict(table.get("optional-dependencies", {})))


def wheel_tag() -> str:
    """python-abi-platform for this interpreter: the extension is built for it alone."""
    if sys.implementation.name != "cpython":
        raise RuntimeError(f"ferrite's extension is built for CPython, not {sys.implementation.name}")
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{py}-{py}{sys.abiflags}-{platform}"


def extension_suffixes() -> List[str]:
    return list(importlib.machinery.EXTENSION_SUFFIXES)
