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
