"""Pattern translation between Python ``regex`` and Oniguruma: exact or refused.

Every accepted translation is checked against HF ``tokenizers`` itself (its ``Split``
pre-tokenizer runs Oniguruma) on hostile text, on every code point, and on the eval corpora;
every refusal names the construct.
"""

from __future__ import annotations

import random
import unicodedata

import pytest
import regex

import cybpe
from cybpe.formats.oniguruma import PatternSyntaxError, from_oniguruma, to_oniguruma
from cybpe.errors import ExportError, FormatError

tokenizers = pytest.importorskip("tokenizers")

#: Every code point assigned in Unicode 3.2 (95k characters), in lines of 64. Characters
#: assigned later than the Unicode version of Oniguruma's tables (14 in tokenizers 0.23) have
#: no properties there yet, so they split differently for every pattern, tiktoken's included.
_ASSIGNED = [chr(c) for c in range(0x110000) if unicodedata.ucd_3_2_0.category(chr(c)) != "Cn"
             and not 0xD800 <= c <= 0xDFFF]
ALL_CODE_POINTS = "\n".join("".join(_ASSIGNED[k:k + 64]) for k in range(0, len(_ASSIGNED), 64))
HOSTILE = [
    "", " ", "\n", "a\n", "\n\n", "x\nx\n", "12345 1234567 9876543210 1 12 123 ١٢٣٤ ½¾ Ⅻ",
    "İi̇ıIißssSSẞﬆstSTKkKſsǅǆǄΣσςΐ", "I'LL we'Re they'VE it'S x'ſt",
    "\t\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\u200b\ufeff",
    "हिन्दी ภาษาไทย 中文 日本語 한국어 👨\u200d👩\u200d👧 👍🏽 e\u0301 _x_ a-b a&&b [x] {y} #c",
    "abc123def 3.14 $9 <tag> 'q' \"r\" path/to/file.py:12",
]


def hf_split(pattern: str, text: str) -> list[str]:
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(pattern), "isolated")
    return [piece for piece, _ in split.pre_tokenize_str(text)]


def py_split(pattern: str, text: str) -> list[str]:
    """Matches and the gaps between them, as HF's Split(behavior=Isolated) returns them."""
    out, pos = [], 0
    for m in regex.finditer(pattern, text):
        if m.start() > pos:
            out.append(text[pos:m.start()])
        if m.group():
            out.append(m.group())
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def fuzz(seed: int, n: int = 150) -> list[str]:
    rng = random.Random(seed)
    alphabet = list("aZ'sSlL09 \n\t\r.,_-{}[]&#") + ["İ", "ß", "ſ", "K", "١", "½", "Ⅻ", "中",
                                                     "\u0301", "\u200d", "\x1c", "\x85", "é"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(n)]


def corpus_texts(shared_dir, size: int = 20_000) -> list[str]:
    files = sorted((shared_dir / "corpora" / "eval" / "docs").glob("*.txt"))
    files += sorted((shared_dir / "corpora" / "eval" / "code").glob("*.txt"))
    assert files, "no evaluation corpora found"
    return [f.read_text(encoding="utf-8")[:size] for f in files]


# Python patterns that translate; each is checked against Oniguruma below.
TRANSLATED = [
    r"\pL+|\pN+|\s+|.",  # \pL: Oniguruma would read the letters "pL"
    r"\U0001F600|\u00e9|\x41|\N{DIGIT ONE}|.",  # code point escapes, written \x{...}
    r"\p{Script=Latin}+|\p{sc=Greek}+|\p{Script=Han}+|.",  # Oniguruma cannot load Script=
    r"\w+|\W",  # regex's \w has Join_Control, Oniguruma's does not
    r"[\w.-]+|.",
    r"(?i)[a-hj-z]+|(?i:'s|'t|ll)|.",  # ASCII but i under (?i) folds alike (K, ſ included)
    r"\p{N}{1,3}+|\D+",  # possessive interval: a nested repeat in Oniguruma
    r"ab$|a|b|[^ab]", r"^a|a+|[^a]", r"x\Z|x+|[^x]", r"x\z|x+|[^x]", r"(?s:a.)|.|\n",
    r"[a&&b]+|.",  # Python regex reads && as text; Oniguruma as an intersection
    r"[]a]+|\]+|\}|.",
    r"(?P<word>\p{L}+)|(?#comment)\p{N}|.",
    r"(?<=a)b|(?<!x)y|.|\n",
]

# (pattern, construct named in the refusal)
REFUSED_TO_ONIG = [
    (r"(?i)İ|.", "İ"), (r"(?i:ß)|.", "ß"), (r"(?i)\p{Lu}", r"\p{Lu}"), (r"(?i)[a-z]", "a-z"),
    (r"(?i:xi)", "i"), (r"\p{Han}", r"\p{Han}"), (r"[[:alpha:]]+|.", "[:alpha:]"),
    (r"qq{e<=1}|.", "{e<=1}"), (r"\bx|.", r"\b"), 
    (r"\X|.", r"\X"), (r"(a)\1", r"\1"), (r"(?x) a", "(?x)"), (r"(?V1)[a--b]", "(?V1)"),
    (r"a(?i)b", "(?i)"), (r"(?<=a+)b", "+"), (r"\p{Alphabetic}", r"\p{Alphabetic}"),
    (r"\G", r"\G"), (r"(?|a)", "(?|"), (r"(*FAIL)", "(*FAIL)"), (r"\m", r"\m"),
]

# Oniguruma patterns that translate to Python regex, and ones that are refused.
FROM_ONIG = [r"\p{N}{1,3}+|\D+", r"ab$|a|b|[^ab]", r"^a|a+|[^a]", r"x\Z|x+|[^x]", r"x\z|x+|[^x]",
             r"(?m:a.)|.|\n", r"\p{Latin}+|\p{L}|.", r"\x{1F600}|a{,2}|.", r"x{y}|."]
REFUSED_FROM_ONIG = [(r"\pL", r"\pL"), (r"\w+", r"\w"), (r"\h+|.", r"\h"), (r"(?i)\p{Lu}+|.", r"\p{Lu}"),
                     (r"\X|.", r"\X"), (r"[a-z&&[^aeiou]]+|.", "&&"), (r"\p{Script=Latin}", "Script")]


@pytest.mark.slow
@pytest.mark.parametrize("pattern", TRANSLATED)
def test_translation_to_oniguruma_splits_alike(pattern):
    onig = to_oniguruma(pattern)
    for text in HOSTILE + fuzz(len(pattern)) + [ALL_CODE_POINTS]:
        assert hf_split(onig, text) == py_split(pattern, text), (pattern, onig, text[:80])


@pytest.mark.parametrize("pattern,construct", REFUSED_TO_ONIG)
def test_untranslatable_python_syntax_is_refused(pattern, construct):
    with pytest.raises(PatternSyntaxError) as info:
        to_oniguruma(pattern)
    assert construct in str(info.value)


@pytest.mark.parametrize("pattern", FROM_ONIG)
def test_translation_from_oniguruma_splits_alike(pattern):
    python_pattern = from_oniguruma(pattern)
    for text in HOSTILE + fuzz(len(pattern)) + [ALL_CODE_POINTS]:
        assert py_split(python_pattern, text) == hf_split(pattern, text), (pattern, text[:80])


@pytest.mark.parametrize("pattern,construct", REFUSED_FROM_ONIG)
def test_oniguruma_only_syntax_is_refused(pattern, construct):
    with pytest.raises(PatternSyntaxError) as info:
        from_oniguruma(pattern)
    assert construct in str(info.value)


def test_every_builtin_pretokenizer_exports_exactly(shared_dir):
    """The export pattern of each built-in splits in Oniguruma as the pre-tokenizer does."""
    texts = HOSTILE + fuzz(1) + corpus_texts(shared_dir) + [ALL_CODE_POINTS]
    for info in cybpe.list_pretokenizers():
        if info["name"] == "regex":
            continue
        pre = cybpe.get_pretokenizer(info["name"])
        assert pre.export_pattern is not None, info["name"]
        onig = to_oniguruma(pre.export_pattern)
        for text in texts:
            assert hf_split(onig, text) == pre.split(text), (info["name"], text[:80])


def test_rtl_digits_export_pattern_equals_refine(shared_dir):
    pre = cybpe.get_pretokenizer("gpt4-digits-rtl")
    assert pre.refine is not None and pre.export_pattern != pre.pattern
    for text in HOSTILE + corpus_texts(shared_dir) + ["1234", "1234567890123", "x12345y"]:
        assert py_split(pre.export_pattern, text) == pre.split(text)
    assert hf_split(to_oniguruma(pre.export_pattern), "1234") == ["1", "234"]


def test_compiled_matcher_leaves_fuzzy_syntax_to_regex():
    pre = cybpe.get_pretokenizer("regex", pattern=r"qq{e<=1}|.")
    assert pre.scanner is None  # the stdlib parser would read {e<=1} as text
    assert pre.split("qq") == ["qq"] and pre.split("qa") == ["qa"]


def test_to_hf_refuses_and_writes_nothing(tmp_path):
    ranks = [bytes([b]) for b in range(256)]
    for pattern in [r"(?i)İ|.|\n", r"q{e<=1}|.|\n", r"\b\w+|.|\n"]:
        tok = cybpe.Tokenizer(cybpe.Vocab(ranks), cybpe.get_pretokenizer("regex", pattern=pattern))
        with pytest.raises(ExportError):
            tok.to_hf(tmp_path / "tokenizer.json")
        assert not (tmp_path / "tokenizer.json").exists()


def test_from_hf_refuses_oniguruma_only_syntax(tmp_path, shared_dir):
    import json

    doc = json.loads((shared_dir / "vocab" / "gpt4o-hf" / "tokenizer.json").read_text())
    doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"\h+|\X|."
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=r"\\h"):
        cybpe.Tokenizer.from_hf(path)
