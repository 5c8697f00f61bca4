"""The GPT-4 pattern with numbers cut left to right into groups of 1, 2 or 3 digits."""

from cybpe.pretokenize.scanner import Scanner
from cybpe.hookspecs import hookimpl


def pattern(digits: int = 3) -> str:
    """The cl100k pattern with ``\\p{N}{1,digits}+`` as its number branch."""
    return (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,%d}+"""
        r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""" % digits
    )


@hookimpl
def cybpe_register_pretokenizers(register):
    """GPT-4 rules with numbers in left-to-right groups of `digits` (1, 2 or 3; 3 is cl100k)."""
    register(
        "gpt4-digits",
        pattern,
        params={"digits": (3, (1, 2, 3))},
        scanner=lambda digits: Scanner(f"gpt4-digits{digits}"),
    )
