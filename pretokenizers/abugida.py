r"""Abugida-safe GPT-4 pattern: combining marks stay inside words.

Under cl100k, ``\\p{L}+`` stops at every vowel sign and virama (they are ``\\p{M}``), which then
fall into the punctuation branch: ``हिन्दी`` becomes ``ह|िन|्द|ी``. Here the word branch is
``[\\p{L}\\p{M}]++`` and ``\\p{M}`` is taken out of the punctuation branch, as in Qwen3.5 and
"Vowel Signs Are Not Letters" (arXiv 2608.26449). Text without combining marks (Latin, CJK,
Cyrillic in NFC) splits exactly as under cl100k.

The one-character prefix class leaves out ``\p{M}`` as well: with the possessive ``?+`` a mark
taken as a prefix could not be given back, and a lone mark before a non-letter would match no
branch at all. Without it, pieces are exactly Qwen3.5's (whose prefix is not possessive).
"""

from cybpe.pretokenize.scanner import Scanner
from cybpe.hookspecs import hookimpl

PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{M}\p{N}]?+[\p{L}\p{M}]++|\p{N}{1,3}+"""
    r"""| ?[^\s\p{L}\p{M}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)


@hookimpl
def cybpe_register_pretokenizers(register):
    """GPT-4 rules with combining marks (Indic vowel signs, viramas, Thai/Myanmar marks) kept in words."""
    register("abugida", PATTERN, scanner=Scanner("abugida"))
