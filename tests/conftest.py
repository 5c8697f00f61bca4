"""Shared fixtures (paths live in ``support.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import cybpe
import support
from support import PLUGIN_EXAMPLE_DIR, SKIP_REASON, shared_path


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true", default=False,
                     help="also run the tests marked slow (the long differential and corpus tests); "
                          "CYBPE_FULL_TESTS=1 does the same")


def full_run(config) -> bool:
    """Whether this run includes the tests marked slow: ``--full``, ``CYBPE_FULL_TESTS=1``, or a
    ``-m`` expression (which then decides alone, e.g. ``-m slow`` runs only them)."""
    return (config.getoption("--full") or os.environ.get("CYBPE_FULL_TESTS", "") not in ("", "0")
            or bool(config.getoption("markexpr", "")))


def pytest_configure(config):
    support.FULL_RUN = full_run(config)  # before the test modules (and their @settings) load


def pytest_report_header(config):
    run = ("full run: the tests marked slow included, every property test at its full examples"
           if full_run(config) else
           "default run: the tests marked slow deselected, property tests at a fifth of their examples "
           "(--full or CYBPE_FULL_TESTS=1 runs everything)")
    return [f"cybpe {cybpe.__version__} (Unicode {cybpe.unicode_version}) from {Path(cybpe.__file__).parent}", run]


def pytest_terminal_summary(terminalreporter, config):
    # Said at the end too: with -q the header is not shown, and pytest-xdist's workers do not
    # report their deselections to the summary line.
    if not full_run(config):
        terminalreporter.write_line("default run: the tests marked slow were left out "
                                    "(pytest --full or CYBPE_FULL_TESTS=1 runs them)")


def pytest_collection_modifyitems(config, items):
    """The default run leaves out the tests marked slow: deselected (one count in the summary of
    a run without pytest-xdist), not skipped, so the summary does not fill with skips."""
    if full_run(config):
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]


def pytest_sessionstart(session):
    """With CYBPE_TEST_INSTALLED=1 (CI's wheel and sdist runs) the tests must exercise the
    installed package: a cybpe imported from a source tree on sys.path fails the run at once."""
    if os.environ.get("CYBPE_TEST_INSTALLED", "") in ("", "0"):
        return
    package = Path(cybpe.__file__).resolve().parent
    site = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
    if package.parent not in site:
        raise pytest.UsageError(f"CYBPE_TEST_INSTALLED is set but cybpe comes from {package}, "
                                f"not from site-packages ({', '.join(map(str, sorted(site)))})")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    path = shared_path()
    if path is None:
        pytest.skip(SKIP_REASON)
    return path


@pytest.fixture
def force_regex():
    """``force_regex(True)`` makes every pre-tokenizer split with its regex for this test
    (what ``CYBPE_FORCE_REGEX=1`` does at import); the setting is restored afterwards."""
    from cybpe.pretokenize.pretokenizer import set_force_regex

    before = set_force_regex(False)
    set_force_regex(before)
    yield set_force_regex
    set_force_regex(before)


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory) -> Path:
    """tests/plugin_example really installed by pip into a private folder (put it on PYTHONPATH).

    Offline and without build isolation, so the build uses this environment's setuptools: the
    ``test`` extra brings one new enough to build wheels (``python -m venv`` gives an older
    setuptools, or none from Python 3.12).
    """
    target = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(target), str(PLUGIN_EXAMPLE_DIR)],
        capture_output=True, text=True,
    )
    assert built.returncode == 0, f"pip could not install the example plugin:\n{built.stdout}{built.stderr}"
    return target
