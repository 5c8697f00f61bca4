"""Pre-tokenization throughput per pattern and text kind: the hand-written scanner, the compiled
pattern matcher (what a custom pattern gets) and the regex module.

python -m pytest bench/test_bench_pretokenize.py --benchmark-group-by=group
"""

from __future__ import annotations

import pytest
import regex

import cybpe
from bench_support import text_samples
from cybpe.pretokenize.pattern_scanner import compile_scanner

TEXTS = text_samples()
PATTERNS = ["cl100k", "o200k", "gpt2", "abugida"]


@pytest.mark.parametrize("kind", list(TEXTS))
@pytest.mark.parametrize("name", PATTERNS)
@pytest.mark.parametrize("path", ["scanner", "pattern", "regex"])
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
    elif path == "pattern":
        matcher = compile_scanner(pre.pattern)
        assert matcher is not None, "every built-in pattern compiles"
        benchmark.pedantic(matcher.split_utf8, args=(text.encode(),), rounds=3, iterations=1)
    else:
        compiled = regex.compile(pre.pattern)
        benchmark.pedantic(lambda: [m.span() for m in compiled.finditer(text)], rounds=3, iterations=1)
