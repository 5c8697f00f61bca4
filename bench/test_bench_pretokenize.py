"""Pre-tokenization throughput: compiled scanner vs the regex module, per pattern and text kind.

python -m pytest bench/test_bench_pretokenize.py --benchmark-group-by=group
"""

from __future__ import annotations

import pytest
import regex

import cybpe
from bench_support import text_samples

TEXTS = text_samples()
PATTERNS = ["cl100k", "o200k", "gpt2", "abugida"]


@pytest.mark.parametrize("kind", list(TEXTS))
@pytest.mark.parametrize("name", PATTERNS)
@pytest.mark.parametrize("path", ["scanner", "regex"])
def test_split(benchmark, path, name, kind):
    pre = cybpe.get_pretokenizer(name)
    text = TEXTS[kind][:2_000_000]
    benchmark.group = f"split {name} {kind}"
    benchmark.extra_info["MB"] = len(text.encode()) / 1e6
    if path == "scanner":
        if pre.scanner is None:
            pytest.skip("no compiled scanner")
        data = text.encode()
        benchmark.pedantic(pre.scanner.split_utf8, args=(data,), rounds=3, iterations=1)
    else:
        compiled = regex.compile(pre.pattern)
        benchmark.pedantic(lambda: [m.span() for m in compiled.finditer(text)], rounds=3, iterations=1)
