"""The API reference: every public member has a docstring, and pdoc builds the reference from
them (so it cannot rot). ``python -m pdoc cybpe -o docs/api`` builds the same pages by hand."""

from __future__ import annotations

import inspect
import subprocess
import sys
import types

import pytest

import cybpe


def _public_objects():
    """(qualified name, object) of everything cybpe re-exports, and of each public class's
    public methods and properties."""
    for name, obj in sorted(vars(cybpe).items()):
        if name.startswith("_") or isinstance(obj, types.ModuleType) and name != "errors":
            continue
        if isinstance(obj, types.ModuleType):  # cybpe.errors: every error class
            for err_name, err in sorted(vars(obj).items()):
                if inspect.isclass(err) and issubclass(err, Exception) and err.__module__ == obj.__name__:
                    yield f"errors.{err_name}", err
            continue
        if not (inspect.isclass(obj) or callable(obj)):
            continue
        yield name, obj
        if inspect.isclass(obj):
            for member_name, member in sorted(vars(obj).items()):
                if member_name.startswith("_"):
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if callable(member) or isinstance(member, property):
                    yield f"{name}.{member_name}", member


def test_every_public_member_has_a_docstring():
    missing = [name for name, obj in _public_objects() if not (inspect.getdoc(obj) or "").strip()]
    assert not missing, "public members without a docstring:\n" + "\n".join(missing)


def test_pdoc_builds_the_api_reference(tmp_path):
    pytest.importorskip("pdoc", reason="pdoc is in the test extra")
    out = subprocess.run([sys.executable, "-m", "pdoc", "cybpe", "-o", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    page = (tmp_path / "cybpe.html").read_text(encoding="utf-8")
    for name in ("Tokenizer", "train", "ChunkCounts", "PreTokenizer", "get_encoding", "load"):
        assert f'id="{name}"' in page, f"{name} is not in the API reference"
    assert (tmp_path / "cybpe" / "errors.html").is_file()
