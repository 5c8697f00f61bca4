"""The compiled chunk counter counts exactly what ``Counter(pretokenizer.split(text))`` counts.

Oracle: the pre-tokenizer's regex path (``with_regex_only()``), counted with ``collections.Counter``
and encoded to UTF-8. Inputs: tests/data, the shared evaluation files (when present), hypothesis
text, hostile strings and raw bytes, for every scanner kind; plus merging, pickling, huge counts,
empty input and the ChunkCounts wrapper (compiled path == regex path).
"""

from __future__ import annotations

import pickle
import random
import sys
import threading
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cybpe
from cybpe.training.chunk_counter import ChunkCounter, _rebuild
from cybpe.training.corpus import _count_block_of
from cybpe.pretokenize.scanner import SCANNER_NAMES, Scanner
from cybpe.errors import InvalidParameterError
from support import DATA_DIR, UDHR_DIR, examples, shared_path

TEXTS = {p.name: p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))}
TEXTS["python_sample.txt"] = (DATA_DIR / "python_sample.txt").read_text(encoding="utf-8")
kinds = pytest.mark.parametrize("name", SCANNER_NAMES)


def pretokenizer(name: str) -> cybpe.PreTokenizer:
    if name.startswith("gpt4-digits") and name[-1].isdigit():
        return cybpe.get_pretokenizer("gpt4-digits", digits=int(name[-1]))
    return cybpe.get_pretokenizer(name)


_ORACLES: dict[str, cybpe.PreTokenizer] = {}


def expected(name: str, *texts: str) -> dict[bytes, int]:
    """The reference counts: Counter over the regex split, keys as (surrogatepass) UTF-8."""
    if name not in _ORACLES:
        _ORACLES[name] = pretokenizer(name).with_regex_only()
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(_ORACLES[name].split(text))
    return {k.encode("utf-8", "surrogatepass"): n for k, n in counts.items()}


def counted(counter: ChunkCounter) -> dict[bytes, int]:
    items = counter.items()
    as_dict = dict(items)
    assert len(as_dict) == len(items) == len(counter), "a chunk is stored twice"
    assert counter.total == sum(as_dict.values())
    return as_dict


# -- agreement with Counter(split) ------------------------------------------------------------

@kinds
def test_real_texts(name):
    counter = ChunkCounter(name)
    for text in TEXTS.values():
        counter.add_text(text)
    assert counted(counter) == expected(name, *TEXTS.values())


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cl100k", "o200k", "gpt4-digits-rtl", "abugida"])
def test_shared_eval_files(name, shared_dir):
    paths = sorted((shared_dir / "corpora" / "eval").rglob("*.txt"))
    assert paths, "no evaluation files under the shared folder"
    texts = [p.read_text(encoding="utf-8")[:30_000] for p in paths]
    counter = ChunkCounter(name)
    for text in texts:
        counter.add_utf8(text.encode("utf-8"))
    assert counted(counter) == expected(name, *texts)


@kinds
@settings(max_examples=examples(150), deadline=None)
@given(texts=st.lists(st.text(), max_size=4))
def test_hypothesis_texts(name, texts):
    counter = ChunkCounter(name)
    for text in texts:
        counter.add_text(text)
    assert counted(counter) == expected(name, *texts)


@kinds
@settings(max_examples=examples(100), deadline=None)
@given(text=st.text(st.characters(codec=None, exclude_categories=()), max_size=40))
def test_hypothesis_surrogates_through_bytes(name, text):
    """Lone surrogates: add_text refuses them before counting; their surrogatepass bytes count."""
    counter = ChunkCounter(name)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            counter.add_text(text)
        assert len(counter) == 0
    counter.add_utf8(text.encode("utf-8", "surrogatepass"))
    assert counted(counter) == expected(name, text)


HOSTILE_ATOMS = [
    " ", "  ", "\t", "\n", "\r\n", "\n\n", "\u3000", "\xa0", "\u2028", "'s", "'LL", "'ſ", "'",
    "a", "Z", "ǅ", "ſ", "中文", "한", "ж", "ʰ", "\u0301", "\u093f", "हिन्दी", "ภาษาไทย", "😀",
    "👨\u200d👩\u200d👧", "\u200d", "0", "12", "1234567", "١٢٣", "½", "!", "//", "—", "\x00",
    "\ufeff", "\U0010ffff",
]


@kinds
def test_hostile_strings(name):
    rng = random.Random(SCANNER_NAMES.index(name))
    texts = ["".join(rng.choice(HOSTILE_ATOMS) for _ in range(rng.randrange(1, 30)))
             for _ in range(1500)]
    counter = ChunkCounter(name)
    for text in texts:
        counter.add_text(text)
    assert counted(counter) == expected(name, *texts)
    long_runs = ["a" * 100_000, " " * 70_000 + "x", "7" * 50_001, "\n" * 40_000, "中" * 30_000]
    counter = ChunkCounter(name)
    for text in long_runs:
        counter.add_text(text)
    assert counted(counter) == expected(name, *long_runs)


@kinds
def test_invalid_utf8_bytes_never_fault(name):
    """Any bytes: the pieces are exactly the scanner's own piece ends, and cover the input."""
    rng = random.Random(7)
    data = bytes(rng.choice([0x80, 0xBF, 0xC0, 0xE0, 0xED, 0xF0, 0xF4, 0xFF, 0x20, 0x61, 0x31, 0x0A])
                 for _ in range(20_000))
    counter = ChunkCounter(name)
    counter.add_utf8(data)
    ends = Scanner(name).split_utf8(data).tolist()
    want = Counter(data[s:e] for s, e in zip([0] + ends, ends))
    assert counted(counter) == dict(want)
    assert sum(len(chunk) * n for chunk, n in counter.items()) == len(data)


# -- the table itself -------------------------------------------------------------------------

def test_empty_input():
    counter = ChunkCounter("cl100k")
    counter.add_text("")
    counter.add_utf8(b"")
    counter.add_counts({})
    assert len(counter) == 0 and counter.total == 0
    assert counter.items() == [] and counter.items(sort=True) == []
    assert counter == ChunkCounter() and pickle.loads(pickle.dumps(counter)) == counter
    assert len(cybpe.ChunkCounts("cl100k").update(["", ""])) == 0


def test_growth_and_sorting_with_long_shared_prefixes():
    words = [f"prefix{i:07d}" for i in range(60_000)] + [f"p{i}" for i in range(3000)]
    text = " ".join(words * 2)
    counter = ChunkCounter("cl100k")
    counter.add_text(text)
    assert counted(counter) == expected("cl100k", text)
    ordered = counter.items(sort=True)
    assert [c for c, _ in ordered] == sorted(c for c, _ in ordered)


@settings(max_examples=examples(200), deadline=None)
@given(pairs=st.lists(st.tuples(st.binary(max_size=20), st.integers(0, 2**40)), max_size=60))
def test_add_counts_and_sort_on_arbitrary_bytes(pairs):
    counter = ChunkCounter()
    counter.add_counts(pairs)
    want: Counter[bytes] = Counter()
    for chunk, n in pairs:
        want[chunk] += n
    assert counted(counter) == +want
    assert counter.items(sort=True) == sorted((+want).items())
    for chunk, n in (+want).items():
        assert counter.get(chunk) == n


def test_merge_copy_and_equality():
    texts = list(TEXTS.values())
    whole = ChunkCounter("o200k")
    for text in texts:
        whole.add_text(text)
    halves = [ChunkCounter("o200k"), ChunkCounter("o200k")]
    for i, text in enumerate(texts):
        halves[i % 2].add_text(text)
    merged = halves[0].copy()
    merged.merge(halves[1])
    assert merged == whole and counted(merged) == counted(whole)
    assert counted(halves[0]) != counted(merged)  # the copy is independent
    doubled = whole.copy()
    doubled.merge(doubled)  # merging with itself doubles
    assert counted(doubled) == {c: 2 * n for c, n in counted(whole).items()}
    assert doubled != whole
    other = ChunkCounter()
    other.add_counts({b"a": 1, b"b": 2})
    same_total = ChunkCounter()
    same_total.add_counts({b"a": 2, b"b": 1})
    assert other != same_total and other == pickle.loads(pickle.dumps(other))


def test_huge_counts():
    counter = ChunkCounter()
    counter.add_counts({b"x": 2**62, "é": 2**61})
    counter.add_counts([(b"x", 2**61 - 1)])
    assert counter.get(b"x") == 2**62 + 2**61 - 1 and counter.get("é".encode()) == 2**61
    assert counter.total == 2**63 - 1  # the largest int64
    with pytest.raises(OverflowError):
        counter.add_counts({b"y": 1})  # the total would pass 2**63 - 1
    assert counter.get(b"y", None) is None and counter.total == 2**63 - 1
    with pytest.raises(OverflowError):
        ChunkCounter().add_counts({b"z": 2**63})
    with pytest.raises(ValueError):
        ChunkCounter().add_counts({b"z": -1})
    again = pickle.loads(pickle.dumps(counter))
    assert again == counter and again.get(b"x") == 2**62 + 2**61 - 1


def test_pickle_state_is_checked_and_byte_order_independent():
    counter = ChunkCounter("gpt2")
    counter.add_text(TEXTS["en.txt"])
    fn, (kind, arena, offsets, counts, order) = counter.__reduce__()
    assert fn is _rebuild and kind == Scanner("gpt2") and order == sys.byteorder
    assert _rebuild(0, arena, offsets, counts, order).kind == 0  # older pickles: a kind number
    import array
    swapped = [array.array("q", x) for x in (offsets, counts)]
    for a in swapped:
        a.byteswap()
    other_order = "big" if sys.byteorder == "little" else "little"
    assert _rebuild(kind, arena, swapped[0].tobytes(), swapped[1].tobytes(), other_order) == counter
    with pytest.raises(ValueError):
        _rebuild(kind, arena[:-1], offsets, counts, order)
    with pytest.raises(ValueError):
        _rebuild(kind, arena, offsets[:-8], counts, order)


def test_kinds_and_errors():
    assert ChunkCounter().kind == -1
    assert [ChunkCounter(n).kind for n in SCANNER_NAMES] == list(range(len(SCANNER_NAMES)))
    assert ChunkCounter(Scanner("o200k")).kind == ChunkCounter(2).kind == 2
    with pytest.raises(ValueError):
        ChunkCounter("no-such-scanner")
    with pytest.raises(ValueError):
        ChunkCounter().add_text("no scanner")
    counter = ChunkCounter()
    counter.add_text("one two", kind="gpt2")
    assert counted(counter) == {b"one": 1, b" two": 1}


def test_threads_count_in_parallel():
    texts = list(TEXTS.values())
    counters = [ChunkCounter("cl100k") for _ in range(2)]

    def work(c: ChunkCounter) -> None:
        for _ in range(3):
            for text in texts:
                c.add_text(text)

    threads = [threading.Thread(target=work, args=(c,)) for c in counters]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want = {k: 3 * n for k, n in expected("cl100k", *texts).items()}
    assert counted(counters[0]) == counted(counters[1]) == want


# -- ChunkCounts on top of it -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["cl100k", "gpt4-digits-rtl", "abugida"])
def test_chunk_counts_compiled_equals_regex_path(name, force_regex):
    texts = list(TEXTS.values()) + ["a<|eot|>b \ud800 c<|eot|><|eot|>  12345 x\udfff", "<|eot|>"]
    pt = pretokenizer(name)
    assert pt.uses_scanner
    compiled = cybpe.ChunkCounts(pt, ["<|eot|>"]).update(texts)
    force_regex(True)
    assert not pt.uses_scanner
    by_regex = cybpe.ChunkCounts(pt, ["<|eot|>"]).update(texts)
    assert compiled == by_regex and list(compiled.items()) == list(by_regex.items())
    assert not any(b"<|eot|>" in c for c, _ in compiled.items())
    assert any("\ufffd".encode() in c for c, _ in compiled.items())  # surrogates replaced


def test_chunk_counts_reading_api_matches_counter():
    text = TEXTS["en.txt"] + TEXTS["python_sample.txt"][:20_000]
    counts = cybpe.ChunkCounts("cl100k").update(text)
    ref = Counter(pretokenizer("cl100k").with_regex_only().split(text))
    assert list(counts.items()) == sorted((k.encode(), n) for k, n in ref.items())
    assert counts.most_common(25) == [(k.encode(), n) for k, n in ref.most_common(25)]
    assert counts.most_common() == [(k.encode(), n) for k, n in ref.most_common()]
    assert counts.total == sum(ref.values()) and len(counts) == len(ref)


def test_chunk_counts_legacy_state_and_add_counts():
    counts = cybpe.ChunkCounts("cl100k").update(["hello world", "hello"])
    old_style = cybpe.ChunkCounts.__new__(cybpe.ChunkCounts)
    old_style.__setstate__({"spec": counts.pretokenizer.spec(), "special_tokens": (),
                            "counts": {"hello": 2, " world": 1}})
    assert old_style == counts
    more = cybpe.ChunkCounts("cl100k")
    more.add_counts(Counter({"hello": 2}))
    more.add_counts({b" world": 1})
    assert more == counts
    with pytest.raises(InvalidParameterError):
        more.add_counts({"x": -3})


def test_sorted_arrays_equal_sorted_items():
    counts = cybpe.ChunkCounts("cl100k").update(list(TEXTS.values()))
    chunks, weights = counts.sorted_arrays()
    assert weights.dtype == np.int64
    assert list(zip(chunks, weights.tolist())) == list(counts.items())
    empty_chunks, empty_weights = cybpe.ChunkCounts("cl100k").sorted_arrays()
    assert empty_chunks == [] and empty_weights.shape == (0,)


def test_worker_block_returns_a_counter():
    counts = cybpe.ChunkCounts("cl100k", ["<s>"])
    table = _count_block_of(counts.pretokenizer.spec(), counts.special_tokens, ["a<s>b", "c d"])
    assert isinstance(table, ChunkCounter)
    counts.add_counts(pickle.loads(pickle.dumps(table)))
    assert dict(counts.items()) == {b"a": 1, b"b": 1, b"c": 1, b" d": 1}


def test_shared_path_helper_is_consistent(shared_dir):
    assert shared_path() == shared_dir


@kinds
def test_add_texts_equals_add_text_per_text(name):
    texts = list(TEXTS.values()) + ["", "a", "x 'll", "中文 ١٢٣"]
    one, many = ChunkCounter(name), ChunkCounter(name)
    for text in texts:
        one.add_text(text)
    many.add_texts(texts)
    assert many == one
    with pytest.raises(UnicodeEncodeError):
        many.add_texts(["fine", "bad \ud800"])
    assert many == one  # nothing was counted


def test_update_with_a_list_falls_back_per_text_on_surrogates_and_bad_items():
    counts = cybpe.ChunkCounts("cl100k").update(["a b", "c \ud800 d"])
    assert dict(counts.items())[" \ufffd".encode()] == 1
    with pytest.raises(InvalidParameterError, match="not int"):
        cybpe.ChunkCounts("cl100k").update(["a", 3])


# -- custom patterns: counted through the compiled pattern matcher ---------------------------

CUSTOM_PATTERNS = {
    "cl100k-string": cybpe.get_pretokenizer("cl100k").pattern,
    "digits-of-four": r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,4}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "quadratic-on-spaces": r"\s*y|\s|.",  # backtracks past the step budget on long space runs
}


@pytest.mark.parametrize("label", list(CUSTOM_PATTERNS))
def test_add_texts_matched_equals_counter_of_the_regex_split(label):
    pre = cybpe.get_pretokenizer("regex", pattern=CUSTOM_PATTERNS[label])
    matcher = pre.scanner
    assert type(matcher).__name__ == "PatternScanner"
    texts = list(TEXTS.values()) + ["", "a", " " * 5000 + "x", "中文 ١٢٣\n\n"]
    counter = ChunkCounter()
    counter.add_texts_matched(texts, matcher)
    oracle = pre.with_regex_only()
    reference: Counter[str] = Counter()
    for text in texts:
        reference.update(oracle.split(text))
    assert counted(counter) == {k.encode("utf-8"): n for k, n in reference.items()}
    before = counter.copy()
    with pytest.raises(UnicodeEncodeError):
        counter.add_texts_matched(["fine", "bad \ud800"], matcher)
    assert counter == before  # nothing was counted


def test_chunk_counts_custom_pattern_equals_regex_path(force_regex):
    texts = list(TEXTS.values()) + ["a<|eot|>b \ud800 c<|eot|><|eot|>  12345 x\udfff", "<|eot|>"]
    pt = cybpe.get_pretokenizer("regex", pattern=CUSTOM_PATTERNS["digits-of-four"])
    compiled = cybpe.ChunkCounts(pt, ["<|eot|>"]).update(texts)
    plain = cybpe.ChunkCounts(pt).update(texts)
    force_regex(True)
    assert not pt.uses_scanner
    assert compiled == cybpe.ChunkCounts(pt, ["<|eot|>"]).update(texts)
    assert plain == cybpe.ChunkCounts(pt).update(texts)
