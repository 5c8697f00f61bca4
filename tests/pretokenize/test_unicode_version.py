"""One Unicode version: the compiled tables, the regex module and cybpe.unicode_version agree,
and a regex with another Unicode version is refused at import with a typed error."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import regex

import cybpe
from cybpe._c.unicode_version import check_regex_unicode
from cybpe.errors import CybpeError, UnicodeVersionError

HEADER = Path(cybpe.__file__).parent / "_c" / "unicode_tables.h"


def test_the_header_states_cybpe_unicode_version():
    stated = re.search(r"which implements Unicode (\S+)\n", HEADER.read_text())
    assert stated is not None and stated.group(1) == cybpe.unicode_version


def test_the_installed_regex_states_the_same_version():
    check_regex_unicode()  # also ran at import; here it fails the test rather than the import


@pytest.mark.parametrize("other", ["17.0.0", "19.0.0", None])
def test_another_unicode_version_is_a_typed_error(other, monkeypatch):
    import cybpe._c.unicode_version as module

    monkeypatch.setattr(module, "regex_unicode_version", lambda: other)
    with pytest.raises(UnicodeVersionError) as caught:
        check_regex_unicode()
    assert isinstance(caught.value, CybpeError) and isinstance(caught.value, ImportError)
    message = str(caught.value)
    assert f"Unicode {cybpe.unicode_version} tables" in message and "pip install 'regex" in message
    assert (f"implements Unicode {other}" if other else "does not say which Unicode") in message
    if other == "19.0.0" and _installed_requirement() is not None:  # a newer Unicode: the floor release
        assert f"pip install 'regex=={_floor(_installed_requirement())}'" in message


def _installed_requirement():
    import importlib.metadata
    try:
        requires = importlib.metadata.requires("cybpe") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    return next((r for r in requires if re.match(r"regex\b", r)), None)


def _floor(requirement):
    return re.search(r">=\s*([0-9.]+)", requirement).group(1)


def test_the_regex_pin_is_a_floor_without_a_cap():
    """The policy (docs/platforms.md): regex from the first release with the tables' Unicode, no
    upper bound (installable beside packages that need a later regex); the import-time check keeps
    the answers exact. The installed regex satisfies the floor."""
    requirement = _installed_requirement()
    if requirement is None:
        pytest.skip("cybpe is not installed (a source tree on sys.path): no requirement to read")
    assert re.fullmatch(r"regex\s*>=\s*[0-9.]+", requirement.split(";")[0].strip()), requirement
    floor = tuple(int(x) for x in _floor(requirement).split("."))
    assert tuple(int(x) for x in re.findall(r"\d+", regex.__version__)[:3]) >= floor


def test_import_fails_when_regex_states_another_version(tmp_path):
    """A regex distribution whose metadata says Unicode 17.0.0 shadows the real one's metadata
    (the module stays the real one): ``import cybpe`` must raise, naming both versions."""
    dist_info = tmp_path / f"regex-{regex.__version__}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: regex\nVersion: {regex.__version__}\n\n"
        "This module supports Unicode 17.0.0. Full Unicode case-folding is supported.\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    code = "import cybpe"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode != 0
    assert "cybpe.errors.UnicodeVersionError" in out.stderr
    assert f"Unicode {cybpe.unicode_version} tables" in out.stderr and "implements Unicode 17.0.0" in out.stderr


def test_cli_version_states_the_unicode_version():
    out = subprocess.run([sys.executable, "-m", "cybpe", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith(f"cybpe {cybpe.__version__} (Unicode {cybpe.unicode_version}, regex {regex.__version__},")
