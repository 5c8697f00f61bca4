"""Loading a vocabulary: cybpe.Tokenizer.from_tiktoken vs tiktoken (load ranks + build Encoding).

python -m pytest bench/test_bench_load.py --benchmark-group-by=group
"""

from __future__ import annotations

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
