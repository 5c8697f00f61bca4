"""A third-party pre-tokenizer plugin with a COMPILED scanner (tests/compiled_plugin_example/).

The example package cimports cybpe's public scanner contract (cybpe/pretokenize/scanner_api.pxd),
subclasses BaseScanner in Cython and registers its scanner through the ``cybpe.pretokenizers``
entry point. It is built and installed here (pip, no network, no build isolation: the test
environment has cython, setuptools and cybpe itself), then used by train, encode, encode_batch
and counting; every result must equal the same pattern run by the ``regex`` module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import UDHR_DIR, COMPILED_PLUGIN_EXAMPLE_DIR, DATA_DIR

PLUGIN_DIR = COMPILED_PLUGIN_EXAMPLE_DIR
DATA = DATA_DIR


@pytest.fixture(scope="module")
def installed_compiled_plugin(tmp_path_factory):
    """The compiled example plugin, built and installed into a private target folder."""
    target = tmp_path_factory.mktemp("compiled-site")
    build = tmp_path_factory.mktemp("compiled-src")
    subprocess.run(  # build from a copy: the source tree stays free of build products
        [sys.executable, "-c", "import shutil, sys; shutil.copytree(sys.argv[1], sys.argv[2], dirs_exist_ok=True)",
         str(PLUGIN_DIR), str(build)],
        check=True,
    )
    out = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(target), str(build)],
        capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return target


CHECK = r'''
import json, sys
import cybpe
from cybpe.pretokenize.scanner_api import BaseScanner
from cybpe.training.counts import ChunkCounts
from cybpe.training.chunk_counter import ChunkCounter

compiled = cybpe.get_pretokenizer("ascii-words")
oracle = compiled.with_regex_only()
texts = [open(p, encoding="utf-8").read() for p in sys.argv[1:]]
hostile = ["", " ", "   x", "a  b", "1234567 89", "x\u00e9y \u4e2d\u6587 !!", "\ud800 lone", "\n\n  \t",
           "'s  ABC def9 ", "\U0001f642\U0001f642 ok", "a" * 5000]
corpus = texts + hostile
result = {
    "scanner_type": type(compiled.scanner).__module__ + "." + type(compiled.scanner).__name__,
    "is_base": isinstance(compiled.scanner, BaseScanner),
    "uses_scanner": compiled.uses_scanner and not oracle.uses_scanner,
    "distribution": {i["name"]: i for i in cybpe.list_pretokenizers()}["ascii-words"]["distribution"],
    "spans_equal": all(compiled.split_spans(t) == oracle.split_spans(t) for t in corpus),
}
fast = cybpe.train(texts, 400, pretokenizer=compiled)
slow = cybpe.train(texts, 400, pretokenizer=oracle)
result["same_training"] = fast.vocab == slow.vocab and len(fast.vocab.tokens) == 400
result["same_ids"] = all(fast.encode(t) == slow.encode(t) for t in corpus)
result["same_batch"] = fast.encode_batch(corpus, num_threads=2) == [slow.encode(t) for t in corpus]
result["same_ordinary_batch"] = (fast.encode_ordinary_batch(corpus, num_threads=2)
                                 == [slow.encode_ordinary(t) for t in corpus])
result["same_counts"] = (dict(ChunkCounts(compiled).update(corpus).items())
                         == dict(ChunkCounts(oracle).update(corpus).items()))
counter = ChunkCounter(compiled.scanner)
counter.add_text(texts[0])
result["counter_pickles"] = __import__("pickle").loads(__import__("pickle").dumps(counter)) == counter
result["n_tokens"] = len(fast.encode(texts[0]))
print(json.dumps(result))
'''


@pytest.mark.slow  # compiles a Cython plugin first: tens of seconds
def test_compiled_third_party_scanner_trains_and_encodes_like_its_regex(installed_compiled_plugin):
    samples = [str(DATA / "python_sample.txt")] + sorted(str(p) for p in UDHR_DIR.glob("*.txt"))[:6]
    result = json.loads(_run(installed_compiled_plugin, samples))
    assert result["scanner_type"] == "cybpe_ascii_words.scanner.AsciiWordScanner"
    assert result["is_base"] and result["uses_scanner"]
    assert result["distribution"] == "cybpe-ascii-words-plugin"
    assert result["spans_equal"]
    assert result["same_training"]
    assert result["same_ids"] and result["same_batch"] and result["same_ordinary_batch"]
    assert result["same_counts"] and result["counter_pickles"]
    assert result["n_tokens"] > 0


def _run(target: Path, samples: list[str]) -> str:
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")]))
    environ.pop("CYBPE_FORCE_REGEX", None)
    out = subprocess.run([sys.executable, "-c", CHECK, *samples], capture_output=True, text=True, env=environ)
    assert out.returncode == 0, out.stderr
    return out.stdout
