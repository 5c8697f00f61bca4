"""tiktoken's o200k_base pre-tokenizer (GPT-4o)."""

from cybpe.pretokenize.scanner import Scanner
from cybpe.hookspecs import hookimpl

#: tiktoken ``openai_public.py`` ``o200k_base``: seven alternatives joined with ``|``.
PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


@hookimpl
def cybpe_register_pretokenizers(register):
    """GPT-4o (o200k_base): case-aware words with marks, contraction suffixes, digits in threes."""
    register("o200k", PATTERN, scanner=Scanner("o200k"))
