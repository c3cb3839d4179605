"""ferrite's PEP 517 build backend, in the Python standard library alone.

Why in-tree: pip builds in an isolated environment and installs the
backend's requirements there from an index, so any backend named in
``requires`` is downloaded, which fails offline. Debian 12 packages no
CMake-driving backend (python3-scikit-build-core and scikit-build are not in
bookworm; python3-mesonpy drives Meson), and even a packaged one is not
visible inside pip's isolated environment. With ``requires = []`` and
``backend-path``, ``pip install .`` and ``pip wheel .`` need nothing but
pip, CMake, Ninja and the Debian packages scripts/setup installs.

Settings (``pip install . -C key=value``, or the environment):
  build-dir  (FERRITE_BUILD_DIR)   an existing build folder to bring up to
             date and take `_ferrite` from (default: <root>/build-python,
             configured for Release on first use)
  cmake-args (FERRITE_CMAKE_ARGS)  extra configure arguments, e.g. -DFERRITE_CUDA=ON
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional

from .cmake import build_extension, find_extension
from .project import PACKAGE_FILE_SUFFIXES, PACKAGES, read_project, source_root, wheel_tag
from .sdist import write_sdist
from .wheel import WheelWriter, wheel_file_text

ConfigSettings = Optional[Dict[str, object]]


def get_requires_for_build_wheel(config_settings: ConfigSettings = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: ConfigSettings = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: ConfigSettings = None) -> List[str]:
    return []


def _write_metadata(metadata_directory: str) -> str:
    project = read_project(source_root())
    folder = os.path.join(metadata_directory, project.dist_info)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "METADATA"), "w", encoding="utf-8") as f:
        f.write(project.metadata())
    with open(os.path.join(folder, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(wheel_file_text(wheel_tag()))
    return project.dist_info


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: ConfigSettings = None) -> str:
    return _write_metadata(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory: str, config_settings: ConfigSettings = None) -> str:
    return _write_metadata(metadata_directory)


def _package_files(root: str) -> List[str]:
    """Paths (relative to bindings/python) of the packages' Python files."""
    base = os.path.join(root, "bindings", "python")
    out = []
    for package in PACKAGES:
        for name in sorted(os.listdir(os.path.join(base, package))):
            if name.endswith(PACKAGE_FILE_SUFFIXES):
                out.append(f"{package}/{name}")
    return out


def _wheel_name(project, tag: str) -> str:
    return f"{project.name.replace('-', '_')}-{project.version}-{tag}.whl"


def build_wheel(wheel_directory: str, config_settings: ConfigSettings = None,
                metadata_directory: Optional[str] = None) -> str:
    root = source_root()
    project = read_project(root)
    extension = find_extension(build_extension(root, config_settings))
    tag = wheel_tag()
    name = _wheel_name(project, tag)
    writer = WheelWriter(os.path.join(wheel_directory, name), project.dist_info)
    for rel in _package_files(root):
        writer.add_file(rel, os.path.join(root, "bindings", "python", rel))
    writer.add_file(f"ferrite/{os.path.basename(extension)}", extension)
    writer.close(project.metadata(), tag)
    return name


def build_editable(wheel_directory: str, config_settings: ConfigSettings = None,
                   metadata_directory: Optional[str] = None) -> str:
    """A wheel holding one .pth file that puts <build>/python (where CMake
    assembles both packages) on sys.path: source edits show after
    `cmake --build <build> --target ferrite_python`."""
    root = source_root()
    project = read_project(root)
    python_dir = build_extension(root, config_settings)
    find_extension(python_dir)
    tag = wheel_tag()
    name = _wheel_name(project, tag)
    writer = WheelWriter(os.path.join(wheel_directory, name), project.dist_info)
    writer.add_bytes("ferrite_editable.pth", (os.path.abspath(python_dir) + "\n").encode("utf-8"))
    writer.close(project.metadata(), tag)
    return name


def build_sdist(sdist_directory: str, config_settings: ConfigSettings = None) -> str:
    root = source_root()
    project = read_project(root)
    return write_sdist(root, sdist_directory, f"{project.name}-{project.version}", project.metadata())
