"""Language names, scripts and script groups for the report's tables and figures.

A report lists languages by script group (Latin, Cyrillic, Arabic, the Han/Kana/Hangul scripts,
Devanagari, the other Indic scripts, the South-East Asian scripts, Tibetan), then by cost within a
group: ranking across scripts mixes what the script costs in UTF-8 with what the tokenizer does.
Codes not listed here keep their code as the name and go to the last group, "other".

``spaced``: whether the language separates words with spaces, so that tokens per word of the
language itself (fertility) means something; for Chinese, Japanese, Thai, Lao, Khmer, Burmese,
Tibetan and Dzongkha whitespace "words" are phrases or whole sentences.

Internal: the public API is the top-level ``cybpe`` package.
"""

from __future__ import annotations

from typing import NamedTuple


class Language(NamedTuple):
    name: str
    script: str
    group: str
    spaced: bool


#: Script groups in the order the report lists them.
GROUP_ORDER = ("Latin", "Cyrillic", "Arabic", "Han/Kana/Hangul", "Devanagari", "other Indic",
               "SE Asian", "Tibetan", "other")

LANGUAGES: dict[str, Language] = {
    "en": Language("English", "Latin", "Latin", True),
    "de": Language("German", "Latin", "Latin", True),
    "fr": Language("French", "Latin", "Latin", True),
    "es": Language("Spanish", "Latin", "Latin", True),
    "ru": Language("Russian", "Cyrillic", "Cyrillic", True),
    "uk": Language("Ukrainian", "Cyrillic", "Cyrillic", True),
    "ar": Language("Arabic", "Arabic", "Arabic", True),
    "zh-Hans": Language("Chinese (Simplified)", "Han", "Han/Kana/Hangul", False),
    "zh-Hant": Language("Chinese (Traditional)", "Han", "Han/Kana/Hangul", False),
    "ja": Language("Japanese", "Han + Kana", "Han/Kana/Hangul", False),
    "ko": Language("Korean", "Hangul", "Han/Kana/Hangul", True),
    "hi": Language("Hindi", "Devanagari", "Devanagari", True),
    "mr": Language("Marathi", "Devanagari", "Devanagari", True),
    "ne": Language("Nepali", "Devanagari", "Devanagari", True),
    "bn": Language("Bengali", "Bengali", "other Indic", True),
    "gu": Language("Gujarati", "Gujarati", "other Indic", True),
    "pa": Language("Punjabi", "Gurmukhi", "other Indic", True),
    "si": Language("Sinhala", "Sinhala", "other Indic", True),
    "ta": Language("Tamil", "Tamil", "other Indic", True),
    "te": Language("Telugu", "Telugu", "other Indic", True),
    "kn": Language("Kannada", "Kannada", "other Indic", True),
    "ml": Language("Malayalam", "Malayalam", "other Indic", True),
    "th": Language("Thai", "Thai", "SE Asian", False),
    "lo": Language("Lao", "Lao", "SE Asian", False),
    "my": Language("Burmese", "Myanmar", "SE Asian", False),
    "km": Language("Khmer", "Khmer", "SE Asian", False),
    "bo": Language("Tibetan", "Tibetan", "Tibetan", False),
    "dz": Language("Dzongkha", "Tibetan", "Tibetan", False),
}


def info(code: str) -> Language:
    """The language's name, script, group and whether it spaces words (unknown codes: ``other``)."""
    return LANGUAGES.get(code, Language(code, "?", "other", True))


def name(code: str) -> str:
    return info(code).name


def group_rank(code: str) -> int:
    return GROUP_ORDER.index(info(code).group)


def ordered(codes, cost=None) -> list[str]:
    """``codes`` by script group, then by ``cost(code)`` (ascending) within a group, then by code."""
    return sorted(codes, key=lambda c: (group_rank(c), cost(c) if cost is not None else 0.0, c))
