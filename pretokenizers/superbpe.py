r"""SuperBPE's stage-2 pre-tokenizer: only numbers split the text (arXiv 2503.13423).

Stage 2 of SuperBPE learns superword tokens, so spaces, punctuation and newlines no longer cut
pieces. Number runs (``\p{N}``) are their own pieces, cut into groups of three from the right
(``1234567`` -> ``1|234|567``), as in the paper's released tokenizers; everything between two
numbers is one piece.

The cut is written three ways. The compiled scanner ``Scanner("superbpe")`` emits the groups
itself (counting and encoding use it); the pattern matches whole number runs and a refine step
cuts them (linear time: the regex path, the scanner's oracle in the tests); the export pattern
writes the cut as a lookahead, one regex that tiktoken and HF ``tokenizer.json`` read with the
same spans. The lookahead alone is quadratic on a long number run (each group looks at the rest
of the run): a million digits ran past the regex time bound.
"""

from cybpe.hookspecs import hookimpl
from cybpe.pretokenize.scanner import Scanner
from cybpe_pretokenizers.gpt4_digits_rtl import group_digits_right_to_left

PATTERN = r"""\p{N}++|[^\p{N}]++"""

#: The same spans from one regex, for libraries without a refine step.
EXPORT_PATTERN = r"""\p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N}))|[^\p{N}]+"""


@hookimpl
def cybpe_register_pretokenizers(register):
    """SuperBPE stage 2: only numbers split (groups of three from the right); words may merge."""
    register(
        "superbpe",
        PATTERN,
        scanner=Scanner("superbpe"),  # emits the right-to-left groups itself
        refine=group_digits_right_to_left,
        export_pattern=EXPORT_PATTERN,
    )
