r"""The GPT-4 pattern with numbers grouped in threes from the right, aligned with thousands.

A number run is every maximal run of ``\\p{N}`` characters (so non-ASCII digits such as
``١٢٣`` or ``१२३``, and other numbers such as ``½`` or ``Ⅻ``, count as digits; a run may mix
scripts). Letters never join a number: in ``abc1234567xyz`` the run ``1234567`` is its own
piece between ``abc`` and ``xyz``, exactly as under cl100k, and is then cut right to left:
``1``, ``234``, ``567``. A leftmost regex cannot express this cut, so the regex matches the
whole run (``\\p{N}++``) and :func:`group_digits_right_to_left` refines the spans.
"""

import regex

from cybpe.pretokenize.scanner import Scanner
from cybpe.hookspecs import hookimpl

PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}++"""
    r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

_NUMBER_RUN = regex.compile(r"\p{N}+")


def group_digits_right_to_left(text, spans):
    """Cut every all-number span into groups of three counted from its right end."""
    out = []
    for start, end in spans:
        if end - start > 3 and _NUMBER_RUN.fullmatch(text, start, end):
            head = (end - start) % 3
            if head:
                out.append((start, start + head))
            for s in range(start + head, end, 3):
                out.append((s, s + 3))
        else:
            out.append((start, end))
    return out


@hookimpl
def cybpe_register_pretokenizers(register):
    """GPT-4 rules with numbers grouped in threes from the right (1234567 -> 1|234|567)."""
    register(
        "gpt4-digits-rtl",
        PATTERN,
        scanner=Scanner("gpt4-digits-rtl"),  # emits the right-to-left groups itself
        refine=group_digits_right_to_left,
    )
