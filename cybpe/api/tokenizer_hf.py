"""The transformers-shaped surface of :class:`cybpe.Tokenizer`: ``tok(text_or_batch, ...)``,
``len``, ``vocab_size``, ``get_vocab``, ``tokenize``, ``convert_ids_to_tokens``,
``convert_tokens_to_ids``, ``batch_decode``, ``all_special_tokens`` / ``all_special_ids``.

The answers are transformers' (5.x, ``AutoTokenizer`` on the same ``tokenizer.json`` folder):
tokens are HF's byte-level strings, added tokens appear as their content, and text is encoded as
transformers encodes it (every added token matched: ``encode(text, allowed_special="all")``).
tests/compat/test_transformers_surface.py compares each call with ``AutoTokenizer`` on the Llama 3,
Qwen 3 and GPT-4o folders.

What differs from transformers: cybpe reads no post-processor, so ``add_special_tokens=True``
adds nothing (none of those three folders has one); ``vocab_size`` counts the ordinary tokens
(transformers counts the model's vocabulary, which for some files, GPT-4o's, also holds the
added tokens); ``all_special_tokens`` lists the role tokens, then every other special added
token (transformers lists only the extras its config names); ``return_tensors="pt"`` needs
torch; offsets are not offered here (see :meth:`cybpe.Tokenizer.encode_with_offsets`).
Thread safety: every method here only reads the tokenizer, as :meth:`~cybpe.Tokenizer.encode`.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from cybpe.errors import InvalidParameterError, InvalidTokenError, ParameterTypeError, describe

_ROLE_ORDER = ("bos_token", "eos_token", "unk_token", "pad_token")


class BatchEncoding(dict):
    """What ``tok(...)`` returns: a dict (``input_ids``, ``attention_mask``) whose keys are also
    attributes, as transformers' ``BatchEncoding``."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _padding_mode(padding: Any) -> Optional[str]:
    if padding is False or padding is None or padding == "do_not_pad":
        return None
    if padding is True or padding == "longest":
        return "longest"
    if padding == "max_length":
        return "max_length"
    raise InvalidParameterError(f"padding must be True, False, 'longest', 'max_length' or "
                                f"'do_not_pad', not {padding!r}")


class TransformersMethods:
    """Mixed into :class:`cybpe.Tokenizer` (see the module docstring)."""

    # (provided by Tokenizer)
    vocab: Any
    non_special_tokens: frozenset

    def _hf_strings(self) -> tuple[dict[str, int], dict[int, str]]:
        """(HF token string -> id, id -> HF token string), built once."""
        found = self.__dict__.get("_hf_string_cache")
        if found is None:
            from cybpe.formats.bytelevel import bytes_to_bytelevel

            forward = {bytes_to_bytelevel(t): i for i, t in enumerate(self.vocab.tokens) if t is not None}
            forward.update(self.vocab.special_tokens)
            backward = {i: s for s, i in forward.items() if i < len(self.vocab.tokens)}
            backward.update(self.vocab.special_decoder())
            found = self.__dict__["_hf_string_cache"] = (forward, backward)
        return found

    def __len__(self) -> int:
        """The number of tokens, added tokens included (transformers' ``len(tokenizer)``)."""
        return len(self.vocab.tokens) - len(self.vocab.gaps) + len(self.vocab.special_tokens)

    @property
    def vocab_size(self) -> int:
        """The number of ordinary tokens (added tokens not counted)."""
        return len(self.vocab.tokens) - len(self.vocab.gaps)

    def get_vocab(self) -> dict[str, int]:
        """HF's byte-level token string -> id, added tokens included (a new dict)."""
        return dict(self._hf_strings()[0])

    def convert_ids_to_tokens(self, ids: Union[int, Sequence[int]],
                              skip_special_tokens: bool = False) -> Union[Optional[str], list[Optional[str]]]:
        """The HF token string of an id (or of each id of a list); None for an id that is no
        token, as transformers."""
        backward = self._hf_strings()[1]
        if isinstance(ids, (int, np.integer)) and not isinstance(ids, bool):
            return backward.get(int(ids))
        if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
            raise ParameterTypeError(f"ids must be an int or a sequence of ints, not {type(ids).__name__}")
        skipped = self._skipped_ids() if skip_special_tokens else frozenset()
        out = []
        for i in (ids.tolist() if isinstance(ids, np.ndarray) else ids):
            if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
                raise InvalidTokenError(f"token id {describe(i)} is not an integer")
            if int(i) not in skipped:
                out.append(backward.get(int(i)))
        return out

    def convert_tokens_to_ids(self, tokens: Union[str, Sequence[str]]) -> Union[Optional[int], list[Optional[int]]]:
        """The id of an HF token string (or of each string of a list): the ``unk_token``'s id,
        else None, for a string that is no token, as transformers."""
        forward = self._hf_strings()[0]
        unk = self.unk_token_id  # type: ignore[attr-defined]
        if isinstance(tokens, str):
            return forward.get(tokens, unk)
        if not hasattr(tokens, "__iter__"):
            raise ParameterTypeError(f"tokens must be a str or a sequence of str, not {type(tokens).__name__}")
        tokens = list(tokens)
        for t in tokens:
            if not isinstance(t, str):
                raise ParameterTypeError(f"a token must be a str, not {type(t).__name__}")
        return [forward.get(t, unk) for t in tokens]

    def tokenize(self, text: str, **kwargs: Any) -> list[str]:
        """The HF token strings of ``text`` (added tokens matched, as transformers)."""
        backward = self._hf_strings()[1]
        return [backward[i] for i in self._hf_encode(text)]

    @property
    def all_special_tokens(self) -> list[str]:
        """The role tokens (bos, eos, unk, pad; each once), then every other special added token
        in id order."""
        roles = self.roles  # type: ignore[attr-defined]
        out: list[str] = []
        for role in _ROLE_ORDER:
            token = roles.get(role)
            if token is not None and token not in out:
                out.append(token)
        for token, _ in sorted(self.vocab.special_tokens.items(), key=lambda kv: kv[1]):
            if token not in out and token not in self.non_special_tokens:
                out.append(token)
        return out

    @property
    def all_special_ids(self) -> list[int]:
        """The ids of :attr:`all_special_tokens`, in the same order."""
        return [self.vocab.special_tokens[t] for t in self.all_special_tokens]

    def _skipped_ids(self) -> frozenset[int]:
        """What ``skip_special_tokens=True`` drops: every special added token (not the
        non-special ones), as transformers."""
        return frozenset(i for s, i in self.vocab.special_tokens.items() if s not in self.non_special_tokens)

    def batch_decode(self, sequences: Sequence[Sequence[int]], skip_special_tokens: bool = False,
                     **kwargs: Any) -> list[str]:
        """:meth:`decode` of each id sequence (transformers' ``batch_decode``)."""
        if isinstance(sequences, np.ndarray):
            sequences = sequences.tolist()
        if isinstance(sequences, (str, bytes)) or not hasattr(sequences, "__iter__"):
            raise ParameterTypeError(f"batch_decode() takes a sequence of id sequences, not {type(sequences).__name__}")
        return [self.decode(ids, skip_special_tokens=skip_special_tokens) for ids in sequences]  # type: ignore[attr-defined]

    def _hf_encode(self, text: str) -> list[int]:
        return self.encode(text, allowed_special="all")  # type: ignore[attr-defined]

    def __call__(self, text: Union[str, Sequence[str]], *, add_special_tokens: bool = True,
                 padding: Union[bool, str] = False, truncation: Union[bool, str] = False,
                 max_length: Optional[int] = None, pad_to_multiple_of: Optional[int] = None,
                 padding_side: Optional[str] = None, return_tensors: Optional[str] = None,
                 return_attention_mask: Optional[bool] = None, **kwargs: Any) -> BatchEncoding:
        """Encode a text or a batch as transformers' ``tokenizer(...)`` does: a
        :class:`BatchEncoding` with ``input_ids`` and (unless ``return_attention_mask=False``)
        ``attention_mask``, lists (of lists for a batch) or, with ``return_tensors="np"``,
        int64 arrays (rows of different lengths: an object array of int64 rows, as transformers
        5). ``truncation`` cuts to ``max_length`` (else ``model_max_length``) on the
        right; ``padding`` (``True``/``"longest"``, ``"max_length"``) pads with ``pad_token`` on
        ``padding_side`` (default right), to a multiple of ``pad_to_multiple_of`` when given.
        ``add_special_tokens`` is accepted: cybpe applies no post-processor."""
        if kwargs:
            raise InvalidParameterError(f"unsupported argument(s): {', '.join(sorted(kwargs))}")
        if not isinstance(add_special_tokens, bool):
            raise ParameterTypeError("add_special_tokens must be True or False")
        batched = not isinstance(text, str)
        texts = list(text) if batched else [text]
        if batched and not all(isinstance(t, str) for t in texts):
            raise ParameterTypeError("tok(...) takes a str or a sequence of str")
        mode = _padding_mode(padding)
        side = "right" if padding_side is None else padding_side
        if side not in ("left", "right"):
            raise InvalidParameterError(f"padding_side must be 'left' or 'right', not {side!r}")
        cut = None
        if truncation not in (False, None, "do_not_truncate"):
            if truncation not in (True, "longest_first", "only_first"):
                raise InvalidParameterError(f"truncation must be True, False or 'longest_first', not {truncation!r}")
            cut = max_length if max_length is not None else self.model_max_length  # type: ignore[attr-defined]
        if (mode is not None and cut is not None and pad_to_multiple_of and max_length is not None
                and max_length % pad_to_multiple_of):
            raise InvalidParameterError(f"truncation and padding are both on, but max_length={max_length} is not a "
                                        f"multiple of pad_to_multiple_of={pad_to_multiple_of}")
        rows = [self._hf_encode(t) for t in texts]
        if cut is not None:
            rows = [r[:cut] for r in rows]
        masks = [[1] * len(r) for r in rows]
        if mode is not None:
            if self.pad_token_id is None:  # type: ignore[attr-defined]
                raise InvalidParameterError("padding needs a pad_token: set one with set_roles(pad_token=...)")
            width = max_length if mode == "max_length" and max_length is not None else max((len(r) for r in rows), default=0)
            if pad_to_multiple_of:
                width = -(-width // pad_to_multiple_of) * pad_to_multiple_of
            pad = self.pad_token_id  # type: ignore[attr-defined]
            for j, row in enumerate(rows):
                extra = max(0, width - len(row))
                if side == "right":
                    rows[j], masks[j] = row + [pad] * extra, masks[j] + [0] * extra
                else:
                    rows[j], masks[j] = [pad] * extra + row, [0] * extra + masks[j]
        out = BatchEncoding(input_ids=rows if batched else rows[0])
        if return_attention_mask is not False:
            out["attention_mask"] = masks if batched else masks[0]
        if return_tensors is None:
            return out
        if return_tensors not in ("np", "pt"):
            raise InvalidParameterError(f"return_tensors must be 'np', 'pt' or None, not {return_tensors!r}")
        if len({len(r) for r in rows}) > 1:  # ragged: transformers 5 gives an object array of rows
            if return_tensors == "pt":
                raise InvalidParameterError("the rows have different lengths: pass padding=True to make a tensor")
            ragged = {}
            for key, value in out.items():
                ragged[key] = np.empty(len(value), dtype=object)
                for j, row in enumerate(value):
                    ragged[key][j] = np.array(row)  # (an empty row is float64 there too)
            return BatchEncoding(ragged)
        arrays = {k: np.array(v if batched else [v], dtype=np.int64) for k, v in out.items()}
        if return_tensors == "pt":
            try:
                import torch
            except ImportError:
                raise InvalidParameterError("return_tensors='pt' needs torch, which is not installed") from None
            return BatchEncoding({k: torch.from_numpy(a) for k, a in arrays.items()})
        return BatchEncoding(arrays)
