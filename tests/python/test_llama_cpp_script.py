"""An unchanged llama-cpp-python program runs on the llama_cpp package of
this build (test_wheel.py runs it again from an installed wheel)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from script_check import check_script_output

SCRIPT = Path(__file__).resolve().parent / "llama_cpp_script.py"


def test_llama_cpp_script(stories_path, tiny_bert):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # the build's packages, as this test sees them
    proc = subprocess.run([sys.executable, str(SCRIPT), stories_path, tiny_bert.path], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    check_script_output(proc.stdout, tiny_bert)
