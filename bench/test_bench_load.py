"""Loading a vocabulary: cybpe.Tokenizer.from_tiktoken vs tiktoken (load ranks + build Encoding),
and cybpe.Tokenizer.from_hf vs HF tokenizers, tokie and nanotok on the shared tokenizer.json files.

A first load in a fresh process (``test_first_load``) adds what a process pays once: the
pre-tokenizer registry, lazy imports, cold caches.

python -m pytest bench/test_bench_load.py --benchmark-group-by=group
"""

from __future__ import annotations

import statistics
import subprocess
import sys

import pytest

import cybpe
from bench_support import shared_path


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("lib", ["cybpe", "tiktoken"])
def test_load(benchmark, lib, name):
    shared = shared_path()
    if shared is None:
        pytest.skip("needs $CYBPE_SHARED/vocab")
    path = shared / "vocab" / f"{name}.tiktoken"
    benchmark.group = f"load {name}"
    if lib == "cybpe":
        benchmark.pedantic(cybpe.Tokenizer.from_tiktoken, args=(path,), rounds=5, iterations=1)
        return
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    pattern = cybpe.get_pretokenizer({"cl100k_base": "cl100k", "o200k_base": "o200k"}[name]).pattern

    def load():
        return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=load_tiktoken_bpe(str(path)),
                                 special_tokens={})

    benchmark.pedantic(load, rounds=5, iterations=1)


@pytest.mark.parametrize("name", ["llama3", "qwen3", "gpt4o-hf"])
@pytest.mark.parametrize("lib", ["cybpe", "hf", "tokie", "nanotok"])
def test_load_tokenizer_json(benchmark, lib, name):
    """A ``tokenizer.json``: cybpe.Tokenizer.from_hf vs HF tokenizers', tokie's and nanotok's
    own loaders."""
    shared = shared_path()
    if shared is None:
        pytest.skip("needs $CYBPE_SHARED/vocab")
    path = str(shared / "vocab" / name / "tokenizer.json")
    benchmark.group = f"load {name} tokenizer.json"
    if lib == "cybpe":
        load = cybpe.Tokenizer.from_hf
    elif lib == "hf":
        load = pytest.importorskip("tokenizers").Tokenizer.from_file
    elif lib == "tokie":
        load = pytest.importorskip("tokie").Tokenizer.from_json
    else:
        load = pytest.importorskip("nanotok").Tokenizer.from_file
    benchmark.pedantic(load, args=(path,), rounds=5, iterations=1)


# The loader's own time, inside a fresh interpreter, after its library is imported.
_FIRST_LOAD = {
    "cybpe": "import cybpe; load = cybpe.Tokenizer.from_hf",
    "hf": "import tokenizers; load = tokenizers.Tokenizer.from_file",
    "tokie": "import tokie; load = tokie.Tokenizer.from_json",
}
_TIMED = "import sys, time; {setup}; t = time.perf_counter(); load(sys.argv[1]); print(time.perf_counter() - t)"


@pytest.mark.parametrize("name", ["llama3", "qwen3", "gpt4o-hf"])
@pytest.mark.parametrize("lib", list(_FIRST_LOAD))
def test_first_load(benchmark, lib, name):
    """The first ``tokenizer.json`` load in a fresh process. The row times the whole process
    (start, import, load); ``extra_info`` has the load alone, min and median of the rounds."""
    shared = shared_path()
    if shared is None:
        pytest.skip("needs $CYBPE_SHARED/vocab")
    if lib != "cybpe":
        pytest.importorskip({"hf": "tokenizers"}.get(lib, lib))
    path = str(shared / "vocab" / name / "tokenizer.json")
    benchmark.group = f"first load of {name} tokenizer.json in a fresh process"
    loads: list[float] = []

    def run() -> None:
        done = subprocess.run([sys.executable, "-c", _TIMED.format(setup=_FIRST_LOAD[lib]), path],
                              capture_output=True, text=True, check=True)
        loads.append(float(done.stdout))

    benchmark.pedantic(run, rounds=5, iterations=1)
    benchmark.extra_info["load_min_ms"] = round(min(loads) * 1e3, 1)
    benchmark.extra_info["load_median_ms"] = round(statistics.median(loads) * 1e3, 1)
