"""Every compiled module has a .pyi stub, and mypy's stubtest finds it faithful to the build."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cybpe"
COMPILED = sorted(p.stem for p in PACKAGE.glob("*.pyx"))


@pytest.mark.parametrize("module", COMPILED)
def test_every_compiled_module_has_a_stub(module):
    assert (PACKAGE / f"{module}.pyi").is_file(), f"cybpe/{module}.pyx has no cybpe/{module}.pyi"


def test_stubtest_agrees_with_the_compiled_modules(tmp_path):
    pytest.importorskip("mypy")
    modules = [f"cybpe.{m}" for m in COMPILED]
    out = subprocess.run([sys.executable, "-m", "mypy.stubtest", *modules], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
