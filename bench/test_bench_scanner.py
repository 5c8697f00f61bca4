"""Every hand-written scanner (``cybpe.pretokenize.scanner.SCANNER_NAMES``, the gpt4-digits
variants included) against the regex module's ``finditer`` on its pattern, per text kind.
test_bench_pretokenize.py compares the scanner, compiled matcher and regex paths of the main
pre-tokenizers; this covers every scanner; test_bench_encode.py has tiktoken.

python -m pytest bench/test_bench_scanner.py --benchmark-group-by=group
"""

from __future__ import annotations

import pytest
import regex

import cybpe
from bench_support import text_samples
from cybpe.pretokenize.scanner import SCANNER_NAMES, Scanner

TEXTS = text_samples()


def _pretokenizer(name: str) -> cybpe.PreTokenizer:
    """The registered pre-tokenizer a scanner name stands for ("gpt4-digits2": digits=2)."""
    if name.startswith("gpt4-digits") and name[-1].isdigit():
        return cybpe.get_pretokenizer("gpt4-digits", digits=int(name[-1]))
    return cybpe.get_pretokenizer(name)


@pytest.mark.parametrize("kind", list(TEXTS))
@pytest.mark.parametrize("name", SCANNER_NAMES)
@pytest.mark.parametrize("path", ["scanner", "regex"])
def test_scan(benchmark, path, name, kind):
    text = TEXTS[kind]
    benchmark.group = f"scan {name} {kind}"
    if path == "scanner":
        data = text.encode("utf-8")
        benchmark.extra_info["MB"] = len(data) / 1e6
        benchmark.pedantic(Scanner(name).split_utf8, args=(data,), rounds=5, iterations=1)
    else:
        head = text[:1_000_000]  # the regex module is far slower: its first 1 M characters only
        benchmark.extra_info["MB"] = len(head.encode("utf-8")) / 1e6
        compiled = regex.compile(_pretokenizer(name).pattern)
        benchmark.pedantic(lambda: [m.span() for m in compiled.finditer(head)], rounds=2, iterations=1)
