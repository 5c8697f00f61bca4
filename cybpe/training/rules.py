"""Merge vetoes for training: predicates on the two parts' bytes that refuse a merge.

A veto is any callable ``veto(left: bytes, right: bytes) -> bool`` (true refuses). It must depend
on its arguments only: the trainers ask it once per pair and remember the answer. Vetoes only take
candidates away, so the trained merge list still encodes with the ordinary rank encoder and exports
to tiktoken and HF unchanged.

Built in (by name, ``train(..., merge_veto="scripts")``): :func:`no_merges_across_scripts`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Optional, Union

import regex

from cybpe.errors import InvalidParameterError, ParameterTypeError, describe

MergeVeto = Callable[[bytes, bytes], object]

# Unicode script names (long form). Names the installed ``regex`` does not know are skipped; a
# character in none of them is "Unknown" (unassigned and private-use code points).
_SCRIPT_NAMES = """
Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum Bassa_Vah Batak Bengali
Bhaiksuki Bopomofo Brahmi Braille Buginese Buhid Canadian_Aboriginal Carian Caucasian_Albanian
Chakma Cham Cherokee Chorasmian Coptic Cuneiform Cypriot Cypro_Minoan Cyrillic Deseret Devanagari
Dives_Akuru Dogra Duployan Egyptian_Hieroglyphs Elbasan Elymaic Ethiopic Garay Georgian Glagolitic
Gothic Grantha Greek Gujarati Gunjala_Gondi Gurmukhi Gurung_Khema Han Hangul Hanifi_Rohingya
Hanunoo Hatran Hebrew Hiragana Imperial_Aramaic Inscriptional_Pahlavi Inscriptional_Parthian
Javanese Kaithi Kannada Katakana Kawi Kayah_Li Kharoshthi Khitan_Small_Script Khmer Khojki
Khudawadi Kirat_Rai Lao Latin Lepcha Limbu Linear_A Linear_B Lisu Lycian Lydian Mahajani Makasar
Malayalam Mandaic Manichaean Marchen Masaram_Gondi Medefaidrin Meetei_Mayek Mende_Kikakui
Meroitic_Cursive Meroitic_Hieroglyphs Miao Modi Mongolian Mro Multani Myanmar Nabataean
Nag_Mundari Nandinagari New_Tai_Lue Newa Nko Nushu Nyiakeng_Puachue_Hmong Ogham Ol_Chiki Ol_Onal
Old_Hungarian Old_Italic Old_North_Arabian Old_Permic Old_Persian Old_Sogdian Old_South_Arabian
Old_Turkic Old_Uyghur Oriya Osage Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau Phags_Pa Phoenician
Psalter_Pahlavi Rejang Runic Samaritan Saurashtra Sharada Shavian Siddham SignWriting Sinhala
Sogdian Sora_Sompeng Soyombo Sundanese Sunuwar Syloti_Nagri Syriac Tagalog Tagbanwa Tai_Le Tai_Tham
Tai_Viet Takri Tamil Tangsa Tangut Telugu Thaana Thai Tibetan Tifinagh Tirhuta Todhri Toto
Tulu_Tigalari Ugaritic Vai Vithkuqi Wancho Warang_Citi Yezidi Yi Zanabazar_Square
Common Inherited
""".split()

# Scripts one writing system mixes inside words (Unicode TR24's Jpan, Kore and Hanb).
_WRITING_SYSTEMS = (frozenset({"Han", "Hiragana", "Katakana"}), frozenset({"Han", "Hangul"}),
                    frozenset({"Han", "Bopomofo"}))
_NEUTRAL = frozenset({"Common", "Inherited"})


def _known_scripts() -> list[str]:
    known = []
    for name in _SCRIPT_NAMES:
        try:
            regex.compile(rf"\p{{Script={name}}}")
        except regex.error:
            continue
        known.append(name)
    return known


@lru_cache(maxsize=1)
def _script_matcher() -> regex.Pattern:
    """One group per known script. Built on first use, not at import: ``import cybpe``
    spent 11 ms on it (-X importtime, 2026-12-03: its own modules 82-88 ms -> 72-77 ms,
    the whole import 182-195 ms -> 175-216 ms), for the few users of
    ``merge_veto="scripts"``. lru_cache keeps the first build for the process (two threads
    racing build equal matchers)."""
    return regex.compile("|".join(rf"(?P<{name}>\p{{Script={name}}})" for name in _known_scripts()))


@lru_cache(maxsize=1 << 16)
def script_of(char: str) -> str:
    """The Unicode script of one character (``"Unknown"`` when none of the known ones)."""
    match = _script_matcher().match(char)
    return match.lastgroup if match is not None and match.lastgroup else "Unknown"


def _sequence_length(lead: int) -> int:
    """Bytes in the UTF-8 sequence a lead byte starts (0 if it is not a lead byte)."""
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0


def _is_continuation(part: bytes) -> bool:
    return all(0x80 <= b <= 0xBF for b in part)


def _decodes(part: bytes) -> Optional[str]:
    try:
        return part.decode("utf-8")
    except UnicodeDecodeError:
        return None


def no_merges_across_scripts(left: bytes, right: bytes) -> bool:
    """Refuse a merge that would mix Unicode scripts or cut characters unevenly (SCRIPT-BPE).

    * Whole characters with whole characters: allowed when the characters' scripts, leaving out
      Common (spaces, punctuation, digits) and Inherited (combining marks), are one script, or
      one writing system's set (Han with Hiragana/Katakana, with Hangul, or with Bopomofo).
    * Inside one character: the start of a character (a lead byte and some of its continuation
      bytes) may take more of its continuation bytes, up to the whole character.
    * Anything else (a whole character with part of one, two runs of continuation bytes) is
      refused, so every token is either whole characters or the start of one character.
    """
    left_text, right_text = _decodes(left), _decodes(right)
    if left_text is not None and right_text is not None:
        scripts = {script_of(c) for c in left_text + right_text} - _NEUTRAL
        return len(scripts) > 1 and not any(scripts <= system for system in _WRITING_SYSTEMS)
    need = _sequence_length(left[0])
    return not (need and len(left) < need and _is_continuation(left[1:])
                and _is_continuation(right) and len(left) + len(right) <= need)


def superbpe_vetoes(left: bytes, right: bytes) -> bool:
    """SuperBPE's stage-2 rules (the released ``_mw4_colon`` tokenizers): refuse a token that holds
    ``": "`` or more than four words (non-empty pieces between spaces)."""
    merged = left + right
    return b": " in merged or sum(1 for word in merged.split(b" ") if word) > 4


def either(*vetoes: Optional[MergeVeto]) -> Optional[MergeVeto]:
    """One veto that refuses what any of ``vetoes`` refuses (None when there is none)."""
    active = [v for v in vetoes if v is not None]
    if len(active) <= 1:
        return active[0] if active else None
    return lambda left, right: any(v(left, right) for v in active)


BUILTIN_VETOES: dict[str, MergeVeto] = {"scripts": no_merges_across_scripts,
                                        "superbpe": superbpe_vetoes}


def resolve_veto(merge_veto: Union[None, str, MergeVeto]) -> tuple[Optional[MergeVeto], Optional[str]]:
    """``(predicate, name recorded in the training report)`` for ``train(merge_veto=...)``."""
    if merge_veto is None:
        return None, None
    if isinstance(merge_veto, str):
        if merge_veto not in BUILTIN_VETOES:
            raise InvalidParameterError(
                f"merge_veto must be a callable or one of {sorted(BUILTIN_VETOES)}; "
                f"got {describe(merge_veto)}")
        return BUILTIN_VETOES[merge_veto], merge_veto
    if not callable(merge_veto):
        raise ParameterTypeError(f"merge_veto must be callable or a name; got {describe(merge_veto)}")
    return merge_veto, getattr(merge_veto, "__qualname__", "custom")
