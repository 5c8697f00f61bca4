"""Bits per byte: a language-model loss made comparable across tokenizers.

A model's cross-entropy is reported per token, so a tokenizer with longer tokens looks better
for free. Dividing by the bytes each token covers, and converting nats to bits, gives a
per-byte figure that does not depend on the tokenization::

    bits/byte = loss_nats_per_token / (ln 2 * bytes_per_token)

where ``bytes_per_token`` = UTF-8 bytes of the evaluation text / tokens of that text under the
tokenizer the model was trained with. Compare such figures only between models of the same
tokenization family: a lower bits/byte does not always mean better downstream results.
"""

from __future__ import annotations

import math

from cybpe.errors import InvalidParameterError, ParameterTypeError, describe


def bits_per_byte(loss_nats_per_token: float, bytes_per_token: float) -> float:
    """``loss_nats_per_token / (ln 2 * bytes_per_token)``: a per-token loss in nats as bits/byte."""
    try:
        loss, width = float(loss_nats_per_token), float(bytes_per_token)
    except (TypeError, ValueError):
        raise ParameterTypeError(
            f"bits_per_byte() takes two numbers, not {describe(loss_nats_per_token)} and "
            f"{describe(bytes_per_token)}"
        ) from None
    if not math.isfinite(loss) or loss < 0:
        raise InvalidParameterError(f"the loss must be a finite number of nats/token >= 0, not {loss_nats_per_token!r}")
    if not math.isfinite(width) or width <= 0:
        raise InvalidParameterError(f"bytes per token must be a finite number > 0, not {bytes_per_token!r}")
    return loss / (math.log(2) * width)


def bytes_per_token(tokenizer, text: str) -> float:
    """UTF-8 bytes of ``text`` per token of ``tokenizer`` (special strings count as text)."""
    n_tokens = tokenizer.count(text)
    if n_tokens == 0:
        raise InvalidParameterError("the text is empty: bytes per token is undefined")
    return len(text.encode("utf-8")) / n_tokens


#: Every figure ``cybpe bench`` reports, defined once: ``name -> (label, definition)``. The
#: ``--help`` epilog, the README table and the HTML report's glossary are all made from it.
#: "bytes" are UTF-8 bytes, "chars" Unicode code points, "words" as the word basis says.
DEFINITIONS: dict[str, tuple[str, str]] = {
    "pieces_per_word": ("pieces per word", "pre-tokenization pieces / words; BPE never merges across "
                        "pieces, so this is a floor under tokens per word whatever the vocabulary"),
    "bytes_per_piece": ("bytes per piece", "UTF-8 bytes of the text / pre-tokenization pieces"),
    "tokens_per_word": ("cost (tokens per word)", "tokens / words; on parallel texts the words are the "
                        "reference (English) text's, the same number for every language: tokens per "
                        "English-word equivalent, the absolute cost, comparable across scripts"),
    "fertility": ("fertility", "tokens / whitespace words of the language's own text (Rust et al. 2021); "
                  "only for languages that separate words with spaces"),
    "chars_per_token": ("chars per token", "code points of the text / tokens; compare tokenizers on one "
                        "language, not languages: a character is a different amount of text in each script"),
    "bytes_per_token": ("bytes per token", "UTF-8 bytes of the text / tokens; comparable within a language"),
    "premium": ("premium", "tokens of a language / tokens of the reference language on the same "
                "parallel text (Petrov et al. 2023, the tokenization premium); 1 = costs what the "
                "reference costs with the same tokenizer, so it hides what the reference itself costs"),
    "byte_premium": ("byte premium", "UTF-8 bytes of a language / UTF-8 bytes of the reference on the same "
                     "parallel text: the premium of a tokenizer that emits one token per byte (the baseline)"),
    "char_premium": ("char premium", "code points of a language / code points of the reference on the "
                     "same parallel text"),
    "mean_cost": ("mean cost", "the mean of the languages' costs (tokens per English-word equivalent)"),
    "mean_premium": ("mean premium", "the mean premium over the languages other than the reference"),
    "worst_premium": ("worst premium", "the largest premium, and its language"),
    "gini": ("Gini (tokens)", "Gini coefficient of the languages' costs, per tokenizer: mean absolute "
             "difference of all pairs / (2 x mean); 0 = every language costs the same. It measures "
             "relative spread only: a tokenizer cheaper in every language can have the higher Gini, so "
             "read it with the mean cost and the worst premium"),
    "cv": ("CV", "coefficient of variation of the languages' costs: standard deviation / mean (a second "
           "relative inequality measure, more sensitive to the worst-off languages than the Gini)"),
    "gini_pieces": ("Gini (pieces)", "the same Gini over pieces per word"),
    "encode_mb_s": ("encode MB/s", "MB of UTF-8 text per second through Tokenizer.encode_ordinary (the "
                    "compiled path: one GIL-free split + encode pass), on the throughput sample"),
    "train_seconds": ("training s", "wall-clock seconds to train the variant's tokenizer on the training corpus"),
    "regex_mb_s": ("split MB/s regex", "MB/s of PreTokenizer.split with the regex module"),
    "compiled_mb_s": ("split MB/s compiled", "MB/s of the compiled scanner's split on UTF-8 bytes"),
}

#: Where the measures' names come from, for the report's glossary.
LITERATURE = {
    "premium": "Petrov, La Malfa, Torr, Bibi (2023), Language Model Tokenizers Introduce Unfairness "
               "Between Languages (NeurIPS 2023; arXiv 2305.15425)",
    "fertility": "Rust, Pfeiffer, Vulić, Ruder, Gurevych (2021), How Good is Your Tokenizer? On the "
                 "Monolingual Performance of Multilingual Language Models (ACL 2021)",
    "gini": "as in parity-aware BPE (arXiv 2508.04796), over per-language token costs",
}


def definition_table(markdown: bool = False, width: int = 100) -> str:
    """The metric definitions as a markdown table or as plain ``name: definition`` lines."""
    if markdown:
        rows = [f"| `{name}` | {label} | {text} |" for name, (label, text) in DEFINITIONS.items()]
        return "\n".join(["| metric | label | definition |", "|---|---|---|", *rows])
    import textwrap

    lines = []
    for name, (_label, text) in DEFINITIONS.items():
        lines += textwrap.wrap(f"{name}: {text}", width, subsequent_indent="    ")
    return "\n".join(lines)
