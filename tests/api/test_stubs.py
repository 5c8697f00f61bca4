"""Every compiled module has a .pyi stub, and mypy's stubtest finds it faithful to the build."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

import cybpe
from support import TESTS_DIR

# The package under test (the source tree in a development install, site-packages in CI's wheel
# runs): its stubs ship beside its compiled modules.
PACKAGE = Path(cybpe.__file__).resolve().parent
ROOT = PACKAGE.parent


def _compiled_modules() -> list[str]:
    """Every compiled module: a .pyx source (a checkout) or an extension file (a wheel)."""
    found = set()
    for path in PACKAGE.rglob("*"):
        name = path.name
        if path.suffix == ".pyx":
            found.add(path.relative_to(ROOT).with_suffix(""))
        for suffix in sorted(EXTENSION_SUFFIXES, key=len, reverse=True):  # the full tag first
            if name.endswith(suffix):
                found.add(path.relative_to(ROOT).with_name(name[: -len(suffix)]))
                break
    return sorted(".".join(module.parts) for module in found)


COMPILED = _compiled_modules()


@pytest.mark.parametrize("module", COMPILED)
def test_every_compiled_module_has_a_stub(module):
    stub = ROOT / (module.replace(".", "/") + ".pyi")
    assert stub.is_file(), f"{module} has no stub {stub.relative_to(ROOT)}"


@pytest.mark.slow  # runs mypy's stubtest over the compiled modules: tens of seconds
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
    allowlist = TESTS_DIR / "stubtest_allowlist.txt"
    out = subprocess.run([sys.executable, "-m", "mypy.stubtest", "--ignore-disjoint-bases", "--allowlist", str(allowlist),
                          *COMPILED], capture_output=True, text=True,
                         cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
