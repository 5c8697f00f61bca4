"""Loading a vocabulary: cybpe.Tokenizer.from_tiktoken vs tiktoken (load ranks + build Encoding),
and cybpe.Tokenizer.from_hf vs HF tokenizers, tokie and nanotok on the shared tokenizer.json files.

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
