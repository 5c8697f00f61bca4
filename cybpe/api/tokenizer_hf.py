"""The transformers-shaped surface of :class:`cybpe.Tokenizer`: ``tok(text_or_batch, ...)``,
``len``, ``vocab_size``, ``get_vocab``, ``tokenize``, ``convert_ids_to_tokens``,
``convert_tokens_to_ids``, ``batch_decode``, ``all_special_tokens`` / ``all_special_ids``, and
transformers' settings as attributes (``chat_template``, ``padding_side``...).

The answers are transformers' (5.x, ``AutoTokenizer`` on the same ``tokenizer.json`` folder):
tokens are HF's byte-level strings, added tokens appear as their content, and text is encoded as
transformers encodes it (every added token matched: ``encode(text, allowed_special="all")``).
tests/compat/test_transformers_surface.py compares each call with ``AutoTokenizer`` on the Llama 3,
Qwen 3 and GPT-4o folders.

The post-processor of the ``tokenizer.json`` (Llama 3's BOS) is applied where transformers
applies it: ``tok(...)`` and ``tokenize(...)`` with ``add_special_tokens=True``, pairs included
(cybpe/formats/hf_post.py). The transformers config's settings (``padding_side``,
``truncation_side``, ``split_special_tokens``, ``model_input_names``,
``clean_up_tokenization_spaces``) are attributes here, honoured as transformers 5 honours them
and saved by ``save_pretrained``. tests/compat/test_transformers_roundtrip.py checks all of it
against transformers 5.x and 4.x.

What differs from transformers: ``vocab_size`` counts the ordinary tokens (transformers counts
the model's vocabulary, which for some files, GPT-4o's, also holds the added tokens);
``all_special_tokens`` lists the role tokens, then the config's ``additional_special_tokens``
(or, for a tokenizer not read from a transformers folder, every other special added token);
``return_tensors="pt"`` needs torch; stride and overflowing tokens are not offered.
Thread safety: every method here only reads the tokenizer, as :meth:`~cybpe.Tokenizer.encode`;
the setters replace one value each.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from cybpe.errors import FormatError, InvalidParameterError, InvalidTokenError, ParameterTypeError, describe

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

    def tokenize(self, text: str, pair: Optional[str] = None, add_special_tokens: bool = False,
                 **kwargs: Any) -> list[str]:
        """The HF token strings of ``text`` (and ``pair``), added tokens matched (unless
        :attr:`split_special_tokens`), the post-processor's tokens with ``add_special_tokens``,
        as transformers' ``tokenize``."""
        if not isinstance(text, str) or not (pair is None or isinstance(pair, str)):
            raise ParameterTypeError(f"tokenize() takes a str (and a str pair), not "
                                     f"{type(text if not isinstance(text, str) else pair).__name__}")
        backward = self._hf_strings()[1]
        ids = self(text, pair, add_special_tokens=add_special_tokens, return_attention_mask=False,
                   return_token_type_ids=False, **kwargs)["input_ids"]
        return [backward[i] for i in ids]

    @property
    def all_special_tokens(self) -> list[str]:
        """The role tokens (bos, eos, unk, pad; each once), then the config's
        ``additional_special_tokens`` (as transformers), or, for a tokenizer that was not read
        from a transformers folder, every other special added token in id order."""
        roles = self.roles  # type: ignore[attr-defined]
        out: list[str] = []
        for role in _ROLE_ORDER:
            token = roles.get(role)
            if token is not None and token not in out:
                out.append(token)
        extras = self._hf_settings.extras  # type: ignore[attr-defined]
        if extras is not None and all(t in self.vocab.special_tokens and t not in self.non_special_tokens
                                      for t in extras):
            return out + [t for t in dict.fromkeys(extras) if t not in out]
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
        return [self.decode(ids, skip_special_tokens=skip_special_tokens, **kwargs)  # type: ignore[attr-defined]
                for ids in sequences]

    # -- transformers' settings (tokenizer_config.json; kept by from_pretrained / save_pretrained)
    @property
    def post_processor(self) -> Any:
        """tokenizer.json's post-processor (:class:`cybpe.formats.hf_post.PostProcessor`) or
        None: what ``tok(..., add_special_tokens=True)`` adds (Llama 3's BOS). The tiktoken-shaped
        :meth:`encode` never adds anything."""
        return self._post_processor  # type: ignore[attr-defined]

    @property
    def chat_template(self) -> Any:
        """The chat template(s) of the transformers config: None, a Jinja string, or a dict of
        name -> template. Kept and saved by :meth:`save_pretrained` (cybpe does not render it:
        transformers' ``apply_chat_template`` does)."""
        return self._hf_settings.chat_template  # type: ignore[attr-defined]

    @chat_template.setter
    def chat_template(self, value: Any) -> None:
        from cybpe.formats.transformers_dir import check_chat_template

        self._hf_settings.chat_template = check_chat_template(value, "chat_template")  # type: ignore[attr-defined]

    @property
    def padding_side(self) -> str:
        """``"right"`` or ``"left"``: where ``tok(..., padding=...)`` pads unless told."""
        return self._hf_settings.padding_side  # type: ignore[attr-defined]

    @padding_side.setter
    def padding_side(self, value: str) -> None:
        from cybpe.formats.transformers_dir import check_side

        self._hf_settings.padding_side = check_side(value, "padding_side")  # type: ignore[attr-defined]

    @property
    def truncation_side(self) -> str:
        """``"right"`` or ``"left"``: which end ``tok(..., truncation=True)`` cuts."""
        return self._hf_settings.truncation_side  # type: ignore[attr-defined]

    @truncation_side.setter
    def truncation_side(self, value: str) -> None:
        from cybpe.formats.transformers_dir import check_side

        self._hf_settings.truncation_side = check_side(value, "truncation_side")  # type: ignore[attr-defined]

    @property
    def split_special_tokens(self) -> bool:
        """Whether ``tok(...)`` and :meth:`tokenize` read special tokens' strings as text (the
        non-special added tokens are still matched), as transformers' setting."""
        return self._hf_settings.split_special_tokens  # type: ignore[attr-defined]

    @split_special_tokens.setter
    def split_special_tokens(self, value: bool) -> None:
        from cybpe.formats.transformers_dir import check_flag

        self._hf_settings.split_special_tokens = check_flag(value, "split_special_tokens")  # type: ignore[attr-defined]

    @property
    def clean_up_tokenization_spaces(self) -> bool:
        """transformers' setting, kept and saved. As transformers 5 does, :meth:`decode` applies
        it to this byte-level BPE only when ``clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output``
        is set in the config too (transformers 4.x applies it alone)."""
        return self._hf_settings.clean_up_tokenization_spaces  # type: ignore[attr-defined]

    @clean_up_tokenization_spaces.setter
    def clean_up_tokenization_spaces(self, value: bool) -> None:
        from cybpe.formats.transformers_dir import check_flag

        self._hf_settings.clean_up_tokenization_spaces = check_flag(value, "clean_up_tokenization_spaces")  # type: ignore[attr-defined]

    @property
    def model_input_names(self) -> list[str]:
        """The keys ``tok(...)`` returns by default besides ``input_ids``: ``attention_mask`` and
        ``token_type_ids`` when listed (default: ``["input_ids", "attention_mask"]``)."""
        return list(self._hf_settings.model_input_names)  # type: ignore[attr-defined]

    @model_input_names.setter
    def model_input_names(self, value: Sequence[str]) -> None:
        from cybpe.formats.transformers_dir import check_input_names

        self._hf_settings.model_input_names = check_input_names(value, "model_input_names")  # type: ignore[attr-defined]

    @property
    def tokenizer_class(self) -> str:
        """The config's ``tokenizer_class``, kept and saved (default ``PreTrainedTokenizerFast``)."""
        return self._hf_settings.tokenizer_class  # type: ignore[attr-defined]

    def _adds(self, role: str, first: bool) -> bool:
        post = self._post_processor  # type: ignore[attr-defined]
        token_id = self._role_id(role)  # type: ignore[attr-defined]
        if post is None or token_id is None:
            return False
        template = post.single
        kind, name, _ = template[0] if first else template[-1]
        return kind == "special" and post.pieces[name] == (token_id,)

    @property
    def add_bos_token(self) -> bool:
        """Whether ``tok(text)`` starts with the ``bos_token`` (the post-processor's template).
        Setting it rebuilds the post-processor as transformers 5 does (``bos:0 $A:0 eos:0``,
        pairs ``... bos:1 $B:1 eos:1``) and records the flag for the config."""
        return self._adds("bos_token", True)

    @add_bos_token.setter
    def add_bos_token(self, value: bool) -> None:
        self._set_flags(value, self.add_eos_token, "add_bos_token")

    @property
    def add_eos_token(self) -> bool:
        """Whether ``tok(text)`` ends with the ``eos_token`` (see :attr:`add_bos_token`)."""
        return self._adds("eos_token", False)

    @add_eos_token.setter
    def add_eos_token(self, value: bool) -> None:
        self._set_flags(self.add_bos_token, value, "add_eos_token")

    def _set_flags(self, bos: bool, eos: bool, name: str) -> None:
        from cybpe.formats.hf_post import template_for_flags
        from cybpe.formats.transformers_dir import check_flag

        check_flag(bos if name == "add_bos_token" else eos, name)
        pieces = []
        for flag, role in ((bos, "bos_token"), (eos, "eos_token")):
            token = self.roles[role] if flag else None  # type: ignore[attr-defined]
            if flag and token is None:
                raise InvalidParameterError(f"{name}: there is no {role} (set one with set_roles)")
            pieces.append(None if token is None else (token, self.vocab.special_tokens[token]))
        self._post_processor = template_for_flags(*pieces)  # type: ignore[attr-defined]
        setattr(self._hf_settings, name, bos if name == "add_bos_token" else eos)  # type: ignore[attr-defined]

    def _check_bos_eos_flags(self, where: str) -> None:
        """A config's ``add_bos_token`` / ``add_eos_token`` must say what the post-processor
        does: transformers 5 (and 4.x's generic class) follow tokenizer.json and ignore the
        flags beside it, while 4.x's Llama classes rebuild the post-processor from them, so
        where the two disagree no answer equals every transformers' (FormatError)."""
        settings = self._hf_settings  # type: ignore[attr-defined]
        for flag, role, first in (("add_bos_token", "bos_token", True), ("add_eos_token", "eos_token", False)):
            said = getattr(settings, flag)
            # (without the role transformers adds nothing for the flag either)
            if said is not None and self.roles[role] is not None and said != self._adds(role, first):  # type: ignore[attr-defined]
                raise FormatError(
                    f"{where}: tokenizer_config.json says {flag}={str(said).lower()}, but tokenizer.json's "
                    f"post-processor {'adds' if not said else 'does not add'} the {role}: transformers "
                    f"versions and classes disagree on which applies, so cybpe refuses the folder "
                    f"(make the two agree)")

    # -- encoding ------------------------------------------------------------------------------
    def _hf_encode(self, text: str, split_special: Optional[bool] = None) -> list[int]:
        split = self.split_special_tokens if split_special is None else split_special
        if split:
            return self.encode(text, disallowed_special=())  # type: ignore[attr-defined]
        return self.encode(text, allowed_special="all")  # type: ignore[attr-defined]

    def _hf_encode_offsets(self, text: str, split: bool) -> tuple[list[int], list[tuple[int, int]]]:
        if split:
            return self.encode_with_offsets(text, disallowed_special=())  # type: ignore[attr-defined]
        return self.encode_with_offsets(text, allowed_special="all")  # type: ignore[attr-defined]

    def _hf_sequence(self, text: str, split: bool, offsets: bool) -> tuple[list[int], Optional[list[tuple[int, int]]]]:
        if not offsets:
            return self._hf_encode(text, split), None
        ids, spans = self._hf_encode_offsets(text, split)
        post = self._post_processor  # type: ignore[attr-defined]
        if post is not None and post.trim is not None:
            from cybpe.formats.hf_post import trim_offsets

            backward = self._hf_strings()[1]
            spans = trim_offsets([backward.get(i, "") for i in ids], spans, post.trim)
        return ids, spans

    def __call__(self, text: Union[str, Sequence[str]], text_pair: Union[str, Sequence[str], None] = None, *,
                 add_special_tokens: bool = True,
                 padding: Union[bool, str] = False, truncation: Union[bool, str, None] = None,
                 max_length: Optional[int] = None, pad_to_multiple_of: Optional[int] = None,
                 padding_side: Optional[str] = None, return_tensors: Optional[str] = None,
                 return_token_type_ids: Optional[bool] = None,
                 return_attention_mask: Optional[bool] = None,
                 return_offsets_mapping: bool = False, return_special_tokens_mask: bool = False,
                 return_length: bool = False, split_special_tokens: Optional[bool] = None,
                 **kwargs: Any) -> BatchEncoding:
        """Encode a text, a pair, or a batch of either as transformers' ``tokenizer(...)`` does: a
        :class:`BatchEncoding` with ``input_ids`` and the keys :attr:`model_input_names` lists
        (``attention_mask``, ``token_type_ids``) unless ``return_attention_mask`` /
        ``return_token_type_ids`` say otherwise, plus ``offset_mapping``,
        ``special_tokens_mask`` and ``length`` when asked. Lists (of lists for a batch) or, with
        ``return_tensors="np"``, int64 arrays (rows of different lengths: an object array of
        rows, as transformers 5).

        ``add_special_tokens``: apply the post-processor (:attr:`post_processor`: Llama 3's
        BOS). ``truncation`` (``True``/``"longest_first"``, ``"only_first"``, ``"only_second"``)
        cuts to ``max_length`` (else ``model_max_length``), the added special tokens included, on
        :attr:`truncation_side`, as HF tokenizers splits the cut between the two texts of a
        pair. ``padding`` (``True``/``"longest"``, ``"max_length"``) pads with ``pad_token`` on
        ``padding_side`` (default :attr:`padding_side`), to a multiple of ``pad_to_multiple_of``
        when given. ``split_special_tokens`` (default: the setting) reads special tokens as
        text."""
        if kwargs:
            raise InvalidParameterError(f"unsupported argument(s): {', '.join(sorted(kwargs))}")
        for flag_name, flag in (("add_special_tokens", add_special_tokens),
                                ("return_offsets_mapping", return_offsets_mapping),
                                ("return_special_tokens_mask", return_special_tokens_mask),
                                ("return_length", return_length)):
            if not isinstance(flag, bool):
                raise ParameterTypeError(f"{flag_name} must be True or False")
        batched = not isinstance(text, str)
        texts = _texts(text, "text")
        pairs = None if text_pair is None else _texts(text_pair, "text_pair")
        if pairs is not None:
            if isinstance(text_pair, str) == batched:
                raise InvalidParameterError("text and text_pair must both be a str or both a batch")
            if len(pairs) != len(texts):
                raise InvalidParameterError(f"text has {len(texts)} items, text_pair {len(pairs)}")
        split = self.split_special_tokens if split_special_tokens is None else bool(split_special_tokens)
        mode = _padding_mode(padding)
        side = self.padding_side if padding_side is None else padding_side
        if side not in ("left", "right"):
            raise InvalidParameterError(f"padding_side must be 'left' or 'right', not {side!r}")
        strategy = _truncation_strategy(truncation)
        cut = None
        if strategy is not None:
            cut = max_length if max_length is not None else self.model_max_length  # type: ignore[attr-defined]
            if strategy == "only_second" and pairs is None:
                raise InvalidParameterError("truncation='only_second' needs text_pair")
        if (mode is not None and cut is not None and pad_to_multiple_of and max_length is not None
                and max_length % pad_to_multiple_of):
            raise InvalidParameterError(f"truncation and padding are both on, but max_length={max_length} is not a "
                                        f"multiple of pad_to_multiple_of={pad_to_multiple_of}")
        post = self._post_processor  # type: ignore[attr-defined]
        if post is None:
            from cybpe.formats.hf_post import PostProcessor

            post = PostProcessor(None)
        rows = []
        for j, first in enumerate(texts):
            a, a_off = self._hf_sequence(first, split, return_offsets_mapping)
            b, b_off = (None, None) if pairs is None else self._hf_sequence(pairs[j], split, return_offsets_mapping)
            if cut is not None:
                budget = cut - (post.added(b is not None) if add_special_tokens else 0)
                if budget >= 0:  # (a max_length below the added tokens' count cuts nothing, as HF)
                    a, a_off, b, b_off = _truncate(a, a_off, b, b_off, budget, strategy, self.truncation_side)
            rows.append(post.apply(a, b, add_special_tokens, a_off if return_offsets_mapping else None,
                                   b_off if return_offsets_mapping else None))
        columns: dict[str, list] = {"input_ids": [r[0] for r in rows]}
        names = self.model_input_names
        if (return_token_type_ids if return_token_type_ids is not None else "token_type_ids" in names):
            columns["token_type_ids"] = [r[1] for r in rows]
        if (return_attention_mask if return_attention_mask is not None else "attention_mask" in names):
            columns["attention_mask"] = [[1] * len(r[0]) for r in rows]
        if return_special_tokens_mask:
            columns["special_tokens_mask"] = [r[2] for r in rows]
        if return_offsets_mapping:
            columns["offset_mapping"] = [r[3] for r in rows]
        lengths = [len(r[0]) for r in rows]
        if mode is not None:
            if self.pad_token_id is None:  # type: ignore[attr-defined]
                raise InvalidParameterError("padding needs a pad_token: set one with set_roles(pad_token=...)")
            width = max_length if mode == "max_length" and max_length is not None else max(lengths, default=0)
            if pad_to_multiple_of:
                width = -(-width // pad_to_multiple_of) * pad_to_multiple_of
            fill = {"input_ids": self.pad_token_id, "token_type_ids": 0, "attention_mask": 0,  # type: ignore[attr-defined]
                    "special_tokens_mask": 1, "offset_mapping": (0, 0)}
            for key, values in columns.items():
                for j, row in enumerate(values):
                    extra = max(0, width - len(row))
                    values[j] = row + [fill[key]] * extra if side == "right" else [fill[key]] * extra + row
        if return_length:
            columns["length"] = [len(r) for r in columns["input_ids"]] if mode is not None else lengths
        # (a single text's length is still a list of one, as transformers gives it)
        out = BatchEncoding({k: (v if batched or k == "length" else v[0]) for k, v in columns.items()})
        if return_tensors is None:
            return out
        if return_tensors not in ("np", "pt"):
            raise InvalidParameterError(f"return_tensors must be 'np', 'pt' or None, not {return_tensors!r}")
        if len({len(r) for r in columns["input_ids"]}) > 1:  # ragged: transformers 5 gives an object array of rows
            if return_tensors == "pt":
                raise InvalidParameterError("the rows have different lengths: pass padding=True to make a tensor")
            ragged = {}
            for key, value in out.items():
                if key == "length":
                    ragged[key] = np.array(value, dtype=np.int64)
                    continue
                ragged[key] = np.empty(len(value), dtype=object)
                for j, row in enumerate(value):
                    ragged[key][j] = np.array(row)  # (an empty row is float64 there too)
            return BatchEncoding(ragged)
        arrays = {k: np.array(v if batched or k == "length" else [v], dtype=np.int64) for k, v in out.items()}
        if return_tensors == "pt":
            try:
                import torch
            except ImportError:
                raise InvalidParameterError("return_tensors='pt' needs torch, which is not installed") from None
            return BatchEncoding({k: torch.from_numpy(a) for k, a in arrays.items()})
        return BatchEncoding(arrays)


def _texts(value: Any, name: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (bytes, bytearray)) or not hasattr(value, "__iter__"):
        raise ParameterTypeError(f"{name} must be a str or a sequence of str, not {type(value).__name__}")
    items = list(value)
    if not all(isinstance(t, str) for t in items):
        raise ParameterTypeError(f"tok(...) takes a str or a sequence of str as {name}")
    return items


def _truncation_strategy(truncation: Any) -> Optional[str]:
    if truncation in (False, None, "do_not_truncate"):
        return None
    if truncation is True or truncation == "longest_first":
        return "longest_first"
    if truncation in ("only_first", "only_second"):
        return truncation
    raise InvalidParameterError(f"truncation must be True, False, 'longest_first', 'only_first' or "
                                f"'only_second', not {truncation!r}")


def _cut(ids: list[int], offsets: Optional[list], n: int, side: str) -> tuple[list[int], Optional[list]]:
    if len(ids) <= n:
        return ids, offsets
    if side == "right":
        return ids[:n], None if offsets is None else offsets[:n]
    return ids[len(ids) - n:], None if offsets is None else offsets[len(ids) - n:]


def _truncate(a: list[int], a_off: Optional[list], b: Optional[list[int]], b_off: Optional[list],
              max_length: int, strategy: str, side: str) -> tuple:
    """HF tokenizers' ``truncate_encodings`` (stride 0) of one sequence or a pair, each cut to
    the length :func:`cybpe.formats.hf_truncation.kept_lengths` gives (InvalidParameterError
    where HF raises)."""
    from cybpe.formats.hf_truncation import kept_lengths

    n1, n2 = kept_lengths(len(a), None if b is None else len(b), max_length, strategy)
    a, a_off = _cut(a, a_off, n1, side)
    if b is not None:
        b, b_off = _cut(b, b_off, n2, side)  # type: ignore[arg-type]
    return a, a_off, b, b_off
