"""Every compiled module has a .pyi stub, and mypy's stubtest finds it faithful to the build."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cybpe"
ROOT = PACKAGE.parent
COMPILED = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts) for p in PACKAGE.glob("**/*.pyx"))


@pytest.mark.parametrize("module", COMPILED)
def test_every_compiled_module_has_a_stub(module):
    stub = ROOT / (module.replace(".", "/") + ".pyi")
    assert stub.is_file(), f"{module} has no stub {stub.relative_to(ROOT)}"


def test_stubtest_agrees_with_the_compiled_modules(tmp_path):
    pytest.importorskip("mypy")
    assert COMPILED, "no compiled modules found"
    # A tree of only the stubs (and empty package stubs), so mypy checks the stubs against the
    # installed build without type-checking the package's Python sources too.
    stubs = tmp_path / "stubs"
    for module in COMPILED:
        parts = module.split(".")
        for depth in range(1, len(parts)):
            package = stubs.joinpath(*parts[:depth])
            package.mkdir(parents=True, exist_ok=True)
            (package / "__init__.pyi").touch()
        stub = ROOT.joinpath(*parts[:-1], parts[-1] + ".pyi")
        (stubs.joinpath(*parts[:-1]) / stub.name).write_text(stub.read_text(encoding="utf-8"), encoding="utf-8")
    env = dict(os.environ, MYPYPATH=str(stubs))
    allowlist = Path(__file__).resolve().parent / "stubtest_allowlist.txt"
    out = subprocess.run([sys.executable, "-m", "mypy.stubtest", "--ignore-disjoint-bases", "--allowlist", str(allowlist),
                          *COMPILED], capture_output=True, text=True,
                         cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
