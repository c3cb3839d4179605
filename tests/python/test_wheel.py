"""The in-tree build backend (bindings/python/backend, pyproject.toml): it
writes a valid wheel, and `pip install .` in a fresh virtualenv works offline
and runs an unchanged llama-cpp-python program.

Both reuse this build's folder (the backend's build-dir setting), so they
only bring `_ferrite` up to date instead of compiling the engine; a full
`pip install .` is the manual check in the README."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO
from script_check import check_script_output

BACKEND = REPO / "bindings" / "python" / "backend"
SCRIPT = Path(__file__).resolve().parent / "llama_cpp_script.py"


@pytest.fixture(scope="module")
def build_dir() -> Path:
    """The build folder whose python/ this test imports ferrite from."""
    import ferrite

    folder = Path(ferrite.__file__).resolve().parents[2]
    if not (folder / "CMakeCache.txt").is_file():
        pytest.fail(f"ferrite is not imported from a CMake build folder's python/ ({ferrite.__file__})")
    return folder


def _check_record(wheel: zipfile.ZipFile, dist_info: str) -> None:
    """RECORD lists every other file with its SHA-256 (urlsafe base64, no padding) and size."""
    record = list(csv.reader(io.StringIO(wheel.read(f"{dist_info}/RECORD").decode())))
    assert sorted(r[0] for r in record) == sorted(wheel.namelist())
    for name, digest, size in record:
        if name == f"{dist_info}/RECORD":
            assert digest == size == ""
            continue
        data = wheel.read(name)
        want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert digest == f"sha256={want}" and int(size) == len(data)


def _check_wheel(path: Path) -> zipfile.ZipFile:
    wheel = zipfile.ZipFile(path)
    names = wheel.namelist()
    import ferrite

    dist_info = f"ferrite-{ferrite.__version__}.dist-info"
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert path.name.startswith(f"ferrite-{ferrite.__version__}-{py}-{py}-linux_")
    _check_record(wheel, dist_info)
    meta = wheel.read(f"{dist_info}/METADATA").decode()
    assert "Metadata-Version: 2.1\n" in meta and "Name: ferrite\n" in meta
    assert f"Version: {ferrite.__version__}\n" in meta
    info = wheel.read(f"{dist_info}/WHEEL").decode()
    assert "Root-Is-Purelib: false\n" in info and f"Tag: {path.name[:-4].split('-', 2)[2]}\n" in info
    for needed in ("ferrite/__init__.py", "ferrite/llama.py", "ferrite/py.typed", "llama_cpp/__init__.py",
                   "llama_cpp/llama_cache.py"):
        assert needed in names
    assert any(n.startswith("ferrite/_ferrite.cpython-") and n.endswith(".so") for n in names)
    return wheel


def test_backend_writes_a_valid_wheel(build_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # PEP 517 hooks run in the project's folder
    monkeypatch.syspath_prepend(str(BACKEND))
    monkeypatch.setenv("FERRITE_BUILD_DIR", str(build_dir))
    import ferrite_build

    assert ferrite_build.get_requires_for_build_wheel() == []
    name = ferrite_build.build_wheel(str(tmp_path))
    _check_wheel(tmp_path / name)
    meta_dir = tmp_path / "meta"
    meta_dir.mkdir()
    dist_info = ferrite_build.prepare_metadata_for_build_wheel(str(meta_dir))
    wheel = zipfile.ZipFile(tmp_path / name)
    assert (meta_dir / dist_info / "METADATA").read_bytes() == wheel.read(f"{dist_info}/METADATA")

    # The editable wheel: one .pth naming the folder CMake assembles the packages in.
    (tmp_path / "editable").mkdir()
    editable = zipfile.ZipFile(tmp_path / "editable" / ferrite_build.build_editable(str(tmp_path / "editable")))
    _check_record(editable, dist_info)
    assert editable.read("ferrite_editable.pth").decode() == f"{build_dir / 'python'}\n"


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_"))}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INDEX="1", PYTHONNOUSERSITE="1")
    return env


def test_pip_install_in_a_fresh_venv_offline(build_dir, tmp_path, stories_path, tiny_bert):
    # --without-pip: the venv runs Debian's pip (python3-pip) from the system
    # site packages; putting a copy of pip in (ensurepip) costs ~20 s here.
    venv = tmp_path / "venv"
    env = _clean_env()
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                   check=True, env=env, timeout=300)
    python = str(venv / "bin" / "python")
    pip = subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-cache-dir", "--config-settings",
                          f"build-dir={build_dir}", str(REPO)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    where = subprocess.run([python, "-c", "import llama_cpp, ferrite; print(llama_cpp.__file__); "
                            "print(ferrite._ferrite.__file__)"], capture_output=True, text=True, env=env,
                           cwd=tmp_path, timeout=60)
    assert where.returncode == 0, where.stderr
    assert all(line.startswith(str(venv)) for line in where.stdout.split()), where.stdout
    run = subprocess.run([python, str(SCRIPT), stories_path, tiny_bert.path], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    check_script_output(run.stdout, tiny_bert)
