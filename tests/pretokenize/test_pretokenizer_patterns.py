"""The built-in patterns: exact strings, equivalent forms, parity with regex.findall, the variants."""

from __future__ import annotations

import json
import random

import pytest
import regex

import cybpe
from cybpe_pretokenizers import abugida, cl100k, gpt2, gpt4_digits, llama3, o200k, qwen2

from support import DATA_DIR, UDHR_DIR, shared_path

UDHR = sorted(UDHR_DIR.glob("*.txt"))


def sample_texts() -> list[tuple[str, str]]:
    """Real text: the bundled samples, plus every eval file of ../shared when present."""
    texts = [(p.name, p.read_text(encoding="utf-8")) for p in UDHR]
    texts.append(("python_sample", (DATA_DIR / "python_sample.txt").read_text(encoding="utf-8")))
    shared = shared_path()
    if shared is not None:
        for path in sorted((shared / "corpora" / "eval").rglob("*.txt")):
            texts.append((str(path.relative_to(shared)), path.read_text(encoding="utf-8")[:300_000]))
    return texts


TEXTS = sample_texts()


def fuzz(seed: int, n: int = 500) -> list[str]:
    rng = random.Random(seed)
    alphabet = list(" \t\n\r\x0b\x0c\x85\xa0\u2028\u3000aAzZ'sStTlLvVeErRdDmM019_./-!?ſKǅि्ก็中😀\u200d🏽١½")
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(n)]


def test_patterns_match_the_reference_strings(shared_dir):
    known = json.loads((shared_dir / "vocab" / "tiktoken_encodings.json").read_text())
    assert llama3.PATTERN == known["cl100k_base"]["pat_str"]  # the original cl100k string
    assert o200k.PATTERN == known["o200k_base"]["pat_str"]
    assert gpt2.PATTERN == known["gpt2"]["pat_str_original_gpt2"]
    assert gpt2.PATTERN_R50K == known["gpt2"]["pat_str"]


def test_patterns_match_tiktoken_package():
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    source = open(openai_public.__file__, encoding="utf-8").read()
    assert repr(cl100k.PATTERN)[1:-1].replace("\\\\", "\\") in source
    assert gpt2.PATTERN_R50K in source


@pytest.mark.parametrize(
    "first, second",
    [(gpt2.PATTERN, gpt2.PATTERN_R50K), (cl100k.PATTERN, llama3.PATTERN)],
    ids=["gpt2-vs-r50k", "cl100k-current-vs-original"],
)
def test_equivalent_forms_give_identical_pieces(first, second):
    a, b = regex.compile(first), regex.compile(second)
    for name, text in TEXTS:
        assert a.findall(text) == b.findall(text), name
    # Fuzzed text ends in a letter: the two cl100k strings differ only on whitespace that ends the
    # text (see the next test), which real documents hardly ever exercise.
    for text in fuzz(7):
        assert a.findall(text + "x") == b.findall(text + "x"), repr(text)


def test_cl100k_current_and_original_differ_only_at_the_end_of_text():
    """tiktoken's 2024 string has ``\\s++$``: ``"a\\r "`` ends in one piece, not two."""
    current, original = regex.compile(cl100k.PATTERN), regex.compile(llama3.PATTERN)
    assert current.findall("a\r ") == ["a", "\r "]
    assert original.findall("a\r ") == ["a", "\r", " "]


@pytest.mark.slow
@pytest.mark.parametrize("name, pattern", [
    ("gpt2", gpt2.PATTERN), ("cl100k", cl100k.PATTERN), ("o200k", o200k.PATTERN),
    ("llama3", llama3.PATTERN), ("qwen2", qwen2.PATTERN), ("abugida", abugida.PATTERN),
])
def test_split_is_regex_findall_on_real_text(name, pattern):
    pre = cybpe.get_pretokenizer(name)  # the default path: the compiled scanner when there is one
    compiled = regex.compile(pattern)
    for label, text in TEXTS:
        assert pre.split(text) == compiled.findall(text), label


def test_qwen2_splits_single_digits():
    assert cybpe.get_pretokenizer("qwen2").split("v2026 12") == ["v", "2", "0", "2", "6", " ", "1", "2"]


@pytest.mark.parametrize("digits", [1, 2, 3])
def test_digit_groups_left_to_right(digits):
    pre = cybpe.get_pretokenizer("gpt4-digits", digits=digits)
    pieces = pre.split("x 1234567 y")
    number = [p for p in pieces if p.isdigit()]
    assert "".join(number) == "1234567"
    assert [len(p) for p in number] == [digits] * (7 // digits) + ([7 % digits] if 7 % digits else [])
    assert pre.pattern == gpt4_digits.pattern(digits)
    if digits == 3:
        assert pre.split(TEXTS[0][1]) == cybpe.get_pretokenizer("cl100k").split(TEXTS[0][1])


def test_digit_groups_right_to_left():
    pre = cybpe.get_pretokenizer("gpt4-digits-rtl")
    assert pre.split("1234567") == ["1", "234", "567"]
    assert pre.split("123456") == ["123", "456"]
    assert pre.split("12") == ["12"]
    assert pre.split("abc1234567xyz") == ["abc", "1", "234", "567", "xyz"]
    # non-ASCII digits are \p{N} and group the same way; so do other numbers such as ½
    assert pre.split("١٢٣٤") == ["١", "٢٣٤"]
    assert pre.split("x 12½3") == ["x", " ", "1", "2½3"]


def test_digit_groups_right_to_left_property():
    rtl = cybpe.get_pretokenizer("gpt4-digits-rtl")
    base = cybpe.get_pretokenizer("cl100k")
    rng = random.Random(3)
    for _ in range(300):
        text = "".join(rng.choice("0123456789 ab.,\n") for _ in range(rng.randint(0, 50)))
        ours = rtl.split(text)
        assert "".join(ours) == text
        # outside number runs nothing changes; each number run is cut into threes from the right
        merged, pending = [], ""
        for piece in ours:
            if piece.isdigit():
                pending += piece
                continue
            if pending:
                merged.append(pending)
                pending = ""
            merged.append(piece)
        if pending:
            merged.append(pending)
        expected_runs = regex.findall(r"\p{N}+", text)
        assert [p for p in merged if p.isdigit()] == expected_runs
        assert [p for p in base.split(text) if not p.isdigit()] == [p for p in ours if not p.isdigit()]
        groups = [p for p in ours if p.isdigit()]
        for run in expected_runs:
            lengths = []
            while sum(lengths) < len(run):
                lengths.append(len(groups.pop(0)))
            assert lengths == ([len(run) % 3] if len(run) % 3 else []) + [3] * (len(run) // 3)


ABUGIDA_WORDS = ["हिन्दी", "नेपाली", "ที่นี่", "தமிழ்", "বাংলা", "မြန်မာ", "ខ្មែរ", "ಕನ್ನಡ"]


@pytest.mark.parametrize("word", ABUGIDA_WORDS)
def test_abugida_keeps_marks_inside_words(word):
    pre = cybpe.get_pretokenizer("abugida")
    assert pre.split(" " + word) == [" " + word]
    assert pre.split("x " + word + ".") == ["x", " " + word, "."]
    assert len(cybpe.get_pretokenizer("cl100k").split(" " + word)) > 1


def test_abugida_shatters_less_on_real_abugida_text():
    pre, base = cybpe.get_pretokenizer("abugida"), cybpe.get_pretokenizer("cl100k")
    for lang in ["hi", "ne", "ta", "th", "my", "bn"]:
        text = (UDHR_DIR / f"{lang}.txt").read_text(encoding="utf-8")
        assert len(base.split(text)) > 1.4 * len(pre.split(text)), lang


@pytest.mark.parametrize("lang", ["en", "zh-Hans", "zh-Hant", "ru", "uk", "ja", "ko"])
def test_abugida_is_cl100k_on_scripts_without_marks(lang):
    import unicodedata

    text = (UDHR_DIR / f"{lang}.txt").read_text(encoding="utf-8")
    text = "".join(c for c in text if not unicodedata.category(c).startswith("M"))
    assert cybpe.get_pretokenizer("abugida").split(text) == cybpe.get_pretokenizer("cl100k").split(text)


QWEN35 = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)


def test_abugida_words_are_qwen35_words():
    """Qwen3.5's mark-aware string (single digits aside) cuts words exactly like ``abugida``."""
    ours, theirs = regex.compile(abugida.PATTERN), regex.compile(QWEN35)
    for label, text in TEXTS + [("fuzz", t + "x") for t in fuzz(11)]:
        text = regex.sub(r"\p{N}", "0", text)
        mine = [p for p in ours.findall(text) if not p.isdigit()]
        other = [p for p in theirs.findall(text) if not p.isdigit()]
        assert mine == other, label


@pytest.mark.parametrize("name", sorted(set(i["name"] for i in cybpe.list_pretokenizers()) - {"regex"}))
def test_every_builtin_pattern_matches_every_character(name):
    """A pattern with a gap would silently drop text; the built-ins must cover any input."""
    compiled = regex.compile(cybpe.get_pretokenizer(name).pattern)
    for text in fuzz(5) + [t for _, t in TEXTS[:5]]:
        assert sum(map(len, compiled.findall(text))) == len(text), repr(text[:80])
