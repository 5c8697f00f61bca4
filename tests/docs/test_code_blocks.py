"""Every fenced ``python`` and ``sh`` block of README.md and docs/**/*.md runs, as written.

Each block runs on its own, in a fresh process, from a fresh folder that holds what a clone's
root holds for the examples: ``cybpe/data/udhr/*.txt`` (the UDHR sample that ships with cybpe)
and ``tests/data/python_sample.txt``. So a reader can copy any one block into a terminal or a
file in the clone's root and get what the page says.

* A ``python`` block runs as a script; one that starts with ``>>>`` runs as a doctest, so its
  shown output is checked too.
* An ``sh`` block runs under ``bash -euo pipefail`` with this interpreter's ``bin`` folder first
  on ``PATH`` (the ``cybpe`` command of the cybpe under test).
* A block right after ``<!-- needs: shared vocab -->`` loads the real vocabularies from
  ``$CYBPE_SHARED/vocab`` (as ``CYBPE_ENCODINGS_DIR``) and skips, saying why, without them.
* A block right after ``<!-- needs: pyspark -->`` skips without pyspark and java (the main
  suite); .ci/stage-spark.sh installs both and runs it.
* A block right after ``<!-- not-run: REASON -->`` is not run; :data:`NOT_RUN` lists every such
  block (and the README's first ``sh`` block, which CI runs itself), and the test checks the
  list matches the pages and stays short.

Other fences (``toml``, ``text``, ``console``) are shown, never run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from support import DATA_DIR, REPO_DIR, UDHR_DIR, shared_path

DOCS_DIR = REPO_DIR / "docs"

#: Every block that is not run, by (page, its first line that is not an import), with the reason.
#: Keep it short.
NOT_RUN = {
    ("README.md", "# 1. install, train a 2,000-token tokenizer on the bundled UDHR sample (25 languages), "
                  "encode with it"):
        "CI runs it itself (.ci/run reads the README's first sh block), in a brand-new venv",
    ("docs/guide/scale.md", 'client = Client("tcp://scheduler:8786")'):
        "needs a running Dask scheduler at a remote address",
    ("docs/guide/formats.md", "cybpe.download(\"cl100k_base\")   # fetches cl100k_base.tiktoken into tiktoken's cache"):
        "downloads from the network (tests never do)",
}
MAX_NOT_RUN = 5
#: Seconds one block may take (they are meant to take one or two).
TIMEOUT = 120

_FENCE = re.compile(r"^(\s*)```+\s*([\w+-]*)")
_MARKER = re.compile(r"^\s*<!--\s*(not-run|needs):\s*(.*?)\s*-->\s*$")


class Block(NamedTuple):
    page: str  # path relative to the repository, e.g. "docs/guide/training.md"
    line: int  # 1-based line of the opening fence
    lang: str  # "python" or "sh"
    code: str
    marker: tuple[str, str] | None  # ("not-run", reason) or ("needs", what)


def _pages() -> list[Path]:
    pages = [REPO_DIR / "README.md"]
    if DOCS_DIR.is_dir():
        pages += sorted(DOCS_DIR.rglob("*.md"))
    return pages


def blocks_of(path: Path) -> list[Block]:
    """The ``python`` and ``sh`` fenced blocks of one markdown file, with their markers."""
    page = path.relative_to(REPO_DIR).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2).lower()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```+\s*$", lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        i += 1
        if lang not in ("python", "sh"):
            continue
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = _MARKER.match(before)
        found.append(Block(page, start + 1, lang, "\n".join(body) + "\n",
                           (marker.group(1), marker.group(2)) if marker else None))
    return found


def _all_blocks() -> list[Block]:
    return [block for page in _pages() for block in blocks_of(page)]


def _first_line(block: Block) -> str:
    """The block's first line that is not blank or an import: what names it in NOT_RUN."""
    lines = [line.strip() for line in block.code.splitlines() if line.strip()]
    return next((line for line in lines if not line.startswith(("import ", "from "))), lines[0])


def _not_run_reason(block: Block) -> str | None:
    if block.marker and block.marker[0] == "not-run":
        return block.marker[1]
    readme_blocks = [b for b in blocks_of(REPO_DIR / "README.md") if b.lang == "sh"]
    if block.page == "README.md" and readme_blocks and block.line == readme_blocks[0].line:
        return NOT_RUN[(block.page, _first_line(block))]
    return None


BLOCKS = _all_blocks()


def test_the_pages_have_blocks_and_the_docs_are_here():
    if not DOCS_DIR.is_dir():
        pytest.skip("docs/ is not beside tests/ (a suite folder without the documentation sources)")
    pages = {b.page for b in BLOCKS}
    assert "README.md" in pages and any(p.startswith("docs/") for p in pages)


def test_the_not_run_blocks_are_the_listed_ones_and_few():
    """Every block that is not run is in NOT_RUN with its reason, and NOT_RUN names no other."""
    if not DOCS_DIR.is_dir():
        pytest.skip("docs/ is not beside tests/ (a suite folder without the documentation sources)")
    marked = {(b.page, _first_line(b)): _not_run_reason(b) for b in BLOCKS if _not_run_reason(b)}
    assert set(marked) == set(NOT_RUN), (
        f"marked in the pages but not listed: {sorted(set(marked) - set(NOT_RUN))}; "
        f"listed but not marked: {sorted(set(NOT_RUN) - set(marked))}")
    for key, reason in marked.items():
        assert reason and len(reason) > 10, f"{key}: say why the block is not run"
        assert reason == NOT_RUN[key], f"{key}: the page says {reason!r}, NOT_RUN {NOT_RUN[key]!r}"
    assert len(NOT_RUN) <= MAX_NOT_RUN, "too many blocks are not run: make them runnable"


def test_the_readme_first_block_is_the_ci_one():
    """The README's first sh block holds the two commands .ci/run reads (kept as they are)."""
    first = [b for b in blocks_of(REPO_DIR / "README.md") if b.lang == "sh"][0]
    commands = [line for line in first.code.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert len(commands) == 2 and commands[1].startswith('pip install -e ".[test]"'), commands


@pytest.fixture
def clone_root(tmp_path: Path) -> Path:
    """A folder holding the sample files the examples read, where the clone's root holds them.

    Its ``cybpe/`` folder has no ``__init__.py``; were it on ``sys.path`` it would still shadow an
    editable install as a namespace package, so the scripts run from another folder and never
    put the working folder on ``sys.path`` (see :func:`_run`)."""
    root = tmp_path / "root"
    shutil.copytree(UDHR_DIR, root / "cybpe" / "data" / "udhr")
    (root / "tests" / "data").mkdir(parents=True)
    shutil.copy(DATA_DIR / "python_sample.txt", root / "tests" / "data" / "python_sample.txt")
    return root


def _env(block: Block) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.pop("CYBPE_ENCODINGS_DIR", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONSAFEPATH"] = "1"  # Python 3.11+: no working folder on sys.path (python -m, -c)
    if block.marker and block.marker[0] == "needs" and block.marker[1] == "pyspark":
        pytest.importorskip("pyspark", reason=f"{block.page}:{block.line} needs pyspark (.ci/stage-spark.sh runs it)")
        if shutil.which("java") is None:
            pytest.skip(f"{block.page}:{block.line} needs java for Spark")
        return env
    if block.marker and block.marker[0] == "needs":
        shared = shared_path()
        if shared is None or not (shared / "vocab").is_dir():
            pytest.skip(f"{block.page}:{block.line} needs the real vocabularies "
                        "($CYBPE_SHARED/vocab, absent here)")
        env["CYBPE_ENCODINGS_DIR"] = str(shared / "vocab")
    return env


_DOCTEST_RUNNER = """\
import doctest, sys
failed, tried = doctest.testfile(sys.argv[1], module_relative=False,
                                 optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
sys.exit(1 if failed or not tried else 0)
"""


def _run(block: Block, cwd: Path) -> subprocess.CompletedProcess:
    env = _env(block)
    scripts = cwd.parent / "scripts"  # a script's folder goes first on sys.path: not cwd
    scripts.mkdir(exist_ok=True)
    if block.lang == "sh":
        script = scripts / "block.sh"
        script.write_text(block.code, encoding="utf-8")
        cmd = ["bash", "-euo", "pipefail", str(script)]
    elif block.code.lstrip().startswith(">>>"):
        script = scripts / "block.txt"
        script.write_text(block.code, encoding="utf-8")
        runner = scripts / "run_doctest.py"
        runner.write_text(_DOCTEST_RUNNER, encoding="utf-8")
        cmd = [sys.executable, str(runner), str(script)]
    else:
        script = scripts / "block.py"
        script.write_text(block.code, encoding="utf-8")
        cmd = [sys.executable, str(script)]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, errors="replace", timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("block", BLOCKS, ids=[f"{b.page}:{b.line}" for b in BLOCKS])
def test_block_runs_as_written(block: Block, clone_root: Path):
    reason = _not_run_reason(block)
    if reason:
        pytest.skip(f"not run: {reason}")
    done = _run(block, clone_root)
    assert done.returncode == 0, (
        f"{block.page}:{block.line} ({block.lang}) exited with {done.returncode}\n"
        f"--- block ---\n{block.code}--- stdout ---\n{done.stdout[-3000:]}\n--- stderr ---\n{done.stderr[-3000:]}")


def test_the_compare_page_shows_the_metric_definitions():
    """docs/guide/compare.md holds the metric table exactly as ``cybpe bench --help`` defines it
    (tests/report/test_bench_report.py checks the README's copy)."""
    page = DOCS_DIR / "guide" / "compare.md"
    if not page.is_file():
        pytest.skip("docs/ is not beside tests/ (a suite folder without the documentation sources)")
    from cybpe.report.metrics import definition_table

    assert definition_table(markdown=True) in page.read_text(encoding="utf-8")


def test_the_readme_is_short_and_links_every_guide_page():
    readme = (REPO_DIR / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    if DOCS_DIR.is_dir():
        for page in sorted((DOCS_DIR / "guide").glob("*.md")) + [DOCS_DIR / "performance.md", DOCS_DIR / "history.md"]:
            assert f"]({page.relative_to(REPO_DIR).as_posix()})" in readme, f"the README does not link {page.name}"
