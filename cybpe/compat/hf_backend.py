"""The patched backend: :class:`CybpeBackend` stands where a transformers fast tokenizer keeps
its ``tokenizers.Tokenizer`` and answers its encode and decode calls with cybpe, with HF's
results; everything else goes to the original Rust tokenizer it wraps.

How a call is answered:

* ``encode`` / ``encode_batch`` / ``encode_batch_fast`` of text (a str, or a pair of str): the
  ids of each text come from cybpe (:class:`Engine`); truncation, the post-processor and
  padding are then applied as HF applies them (:mod:`cybpe.compat.hf_encoding`,
  :mod:`cybpe.compat.hf_postprocessors`), reading the live settings of the Rust tokenizer
  (``truncation``, ``padding``, ``post_processor``, ``encode_special_tokens``) at each call. The :class:`~cybpe.compat.hf_encoding.Encoding`
  returned computes ``tokens``, ``offsets`` and ``word_ids`` only when they are read.
* ``decode`` / ``decode_batch``: cybpe's decode (HF's ByteLevel decoder gives the same text).
* Anything else (vocabulary look-ups, ``add_tokens``, ``save``, ``to_str``, the components...)
  is the Rust tokenizer's own method, reached through ``__getattr__``; setting a component
  (``post_processor = ...``) sets it on the Rust tokenizer.

A call goes to the Rust tokenizer instead, with the same arguments (so its result, or its
error, is HF's own), when cybpe cannot reproduce it: pre-tokenized input, a text with a lone
surrogate or that is not a ``str``, a post-processor other than ByteLevel / TemplateProcessing /
a Sequence of them, truncation HF would refuse, ``encode_special_tokens`` when a special token
overlaps a non-special one, ids that are not all tokens (decode), or a tokenizer whose
``tokenizer.json`` cybpe does not read exactly (logged once at debug level, with the reason).

The cybpe engine is built on the first encode or decode, from the Rust tokenizer's
``to_str()``, and shared by every backend of the same tokenizer in the process; adding tokens
or replacing the model, normalizer, pre-tokenizer or decoder through the backend rebuilds it.
Changing a component *in place* (``backend.pre_tokenizer[0] = ...``) after the first encode is
not seen: call :meth:`CybpeBackend.refresh` after doing that.

Thread safety: every encode and decode method may be called from several threads at once (the
engine is built under a lock, once). Changing settings while another thread encodes is racy
exactly as it is with HF's own tokenizer.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import threading
import weakref
from functools import partial
from operator import attrgetter
from typing import Any, Optional

from cybpe.compat.hf_encoding import Encoding, Unsupported, fill_from, pad_encodings, truncate_encodings
from cybpe.compat.hf_postprocessors import SingleLayout, default_process, parse_post_processor, process
from cybpe.compat.light_encoding import light_encodings

logger = logging.getLogger("cybpe.compat.transformers")

#: Engines by the hash of the tokenizer's JSON (from "added_tokens" on): every backend of one
#: tokenizer (copies, unpickled copies, tokenizers loaded twice) shares one while any holds it.
_ENGINES: "weakref.WeakValueDictionary[str, Engine]" = weakref.WeakValueDictionary()
_ENGINES_LOCK = threading.Lock()

#: Components whose replacement changes what the engine encodes.
_ENGINE_COMPONENTS = frozenset({"model", "normalizer", "pre_tokenizer", "decoder"})
#: The backend's own attributes (everything else is the Rust tokenizer's).
_OWN = frozenset({"_inner", "_engine", "_lock", "_pp_cache", "__weakref__"})
_UNSET = object()
#: the layouts of a tokenizer without post-processor, by add_special_tokens (the same either way)
_NO_PP_LAYOUTS = {False: SingleLayout.of(None, False), True: SingleLayout.of(None, True)}


def _overlap(a: str, b: str) -> bool:
    if a in b or b in a:
        return True
    return any(a.endswith(b[:k]) or b.endswith(a[:k]) for k in range(1, min(len(a), len(b))))


def _utf8_ok(text: str) -> bool:
    """Whether ``text`` has no lone surrogate (HF cannot take such a str). Cheap after cybpe
    has encoded the text: the engine leaves the str holding its UTF-8 form (up to
    ``CACHED_UTF8_CHARS`` characters), which ``str.encode`` then copies instead of converting."""
    if text.isascii():
        return True
    try:
        str.encode(text, "utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _all_utf8(texts: list) -> bool:
    """Whether no text has a lone surrogate (ASCII texts checked without a Python call each)."""
    return all(map(str.isascii, texts)) or all(map(_utf8_ok, texts))


class Engine:
    """cybpe's side of one HF tokenizer: the cybpe :class:`~cybpe.Tokenizer` of its JSON, the
    added tokens as HF matches them, and the token strings. Raises :class:`Unsupported` (with
    the reason) for a tokenizer cybpe does not reproduce exactly. Read-only once built: safe
    from any number of threads."""

    def __init__(self, doc: dict) -> None:
        from cybpe.api.tokenizer import Tokenizer
        from cybpe.errors import CybpeError
        from cybpe.formats.bytelevel import bytelevel_to_bytes
        from cybpe.formats.hf import load_hf_tokenizer_doc

        model = doc.get("model") if isinstance(doc, dict) else None
        if not isinstance(model, dict) or model.get("type", "BPE") != "BPE":
            raise Unsupported(f"model type {model.get('type') if isinstance(model, dict) else None!r} (cybpe reads BPE)")
        # The engine encodes the text only: truncation, padding and the post-processor are the
        # backend's (read live at each call), so the loader, which refuses what it cannot apply
        # itself, is not shown them.
        doc = {**doc, "truncation": None, "padding": None, "post_processor": None}
        try:
            vocab, info = load_hf_tokenizer_doc(doc, "the tokenizer", rank_if_all_splits=True)
            self.tokenizer = Tokenizer(**Tokenizer._hf_parts_of(vocab, info), source="the tokenizer")
        except (CybpeError, ValueError) as exc:
            raise Unsupported(str(exc)) from None
        added = [e for e in doc.get("added_tokens") or [] if isinstance(e, dict)]
        specials = self.tokenizer.vocab.special_tokens
        for entry in added:  # the live ids, which the loader's numbering rule must give back
            if specials.get(entry.get("content")) != entry.get("id"):
                raise Unsupported(f"added token {entry.get('content')!r} has id {entry.get('id')}, "
                                  f"cybpe would number it {specials.get(entry.get('content'))}")
        self.added: dict[str, int] = dict(specials)
        special = {e["content"] for e in added if e.get("special")}
        plain = set(self.added) - special
        #: encode_special_tokens=True skips the special tokens' matches; cybpe then still matches
        #: the non-special ones everywhere, which is HF's result unless the two overlap
        self.split_ok = not any(_overlap(s, p) for s in special for p in plain)
        self._all = self.tokenizer._splitter(set(self.added)) if self.added else None
        self._plain = self.tokenizer._splitter(plain) if plain else None
        # token strings: the model's (for tokens of ordinary text), then id_to_token's (added first)
        strings = model.get("vocab") or {}
        size = max([*strings.values(), *self.added.values(), -1]) + 1
        self.model_strings: list = [None] * size
        for s, i in strings.items():
            self.model_strings[i] = s
        # decode: HF maps every token string through the ByteLevel decoder; an added token's
        # content made only of ByteLevel characters is mapped too (to other bytes, unless it is
        # printable ASCII): cybpe decodes it as its content, so such a tokenizer decodes on HF.
        decoder = doc.get("decoder")
        self.decode_ok = isinstance(decoder, dict) and decoder.get("type") == "ByteLevel"
        for content in self.added:
            try:
                mapped = bytelevel_to_bytes(content)
            except ValueError:
                continue  # a character outside the ByteLevel alphabet: HF keeps the UTF-8 bytes
            if mapped != content.encode("utf-8"):
                self.decode_ok = False
        self._encoder = self.tokenizer._encoder
        self._pretokenizer = self.tokenizer.pretokenizer
        self._normalizer = self.tokenizer.normalizer
        self._ordinary = self.tokenizer.encode_ordinary

    # -- ids (the light path) ------------------------------------------------------------------
    def ids(self, text: str, split_special: bool) -> list:
        """HF's ids of ``text`` (its added tokens matched as HF matches them)."""
        splitter = self._plain if split_special else self._all
        if splitter is None or splitter.first(text) is None:
            return self._ordinary(text)
        tok = self.tokenizer
        return tok._encoder.ids_list(tok._encode_array(text, splitter.specials, ()))

    def ids_batch(self, texts: list, split_special: bool) -> list:
        """:meth:`ids` of each text; the texts without added tokens in one batch call (GIL-free
        on cybpe's threads)."""
        if len(texts) == 1:
            return [self.ids(texts[0], split_special)]
        splitter = self._plain if split_special else self._all
        if splitter is None or splitter.none_in(texts):
            return self.tokenizer.encode_ordinary_batch(texts)
        marked = [k for k, t in enumerate(texts) if splitter.first(t) is not None]
        if not marked:
            return self.tokenizer.encode_ordinary_batch(texts)
        out: list = [None] * len(texts)
        marked_set = set(marked)
        rest = [k for k in range(len(texts)) if k not in marked_set]
        for k, ids in zip(rest, self.tokenizer.encode_ordinary_batch([texts[k] for k in rest])):
            out[k] = ids
        for k in marked:
            out[k] = self.ids(texts[k], split_special)
        return out

    # -- the full fields -----------------------------------------------------------------------
    def full(self, text: str, split_special: bool, type_id: int, fast: bool) -> Encoding:
        """The encoding HF's model step gives ``text``, with every field: ids, tokens (the model's
        strings; an added token's content), character offsets, word ids (the index of the split
        the token comes from: an added token, or a pre-tokenizer piece), type ids."""
        from cybpe.encode.spans import ordinary_spans

        splitter = self._plain if split_special else self._all
        parts = splitter.parts(text) if splitter is not None else ([(text, False)] if text else [])
        ids: list = []
        tokens: list = []
        offsets: list = []
        words: list = []
        pos = word = 0
        for part, special in parts:
            if special:
                ids.append(self.added[part])
                tokens.append(part)
                offsets.append((pos, pos + len(part)))
                words.append(word)
                word += 1
            else:
                scanned = self._scanned(part)
                if scanned is not None:  # the common case: one compiled pass gives all three
                    part_ids, spans, pieces = scanned
                    part_ids = self._encoder.ids_list(part_ids)
                    part_words = (pieces + word).tolist()
                else:
                    part_ids, spans = ordinary_spans(self._encoder, self._pretokenizer, self._normalizer, part)
                    part_ids = self._encoder.ids_list(part_ids)
                    part_words = self._word_ids(part, len(part_ids), word)
                words.extend(part_words)
                word = part_words[-1] + 1 if part_words else word
                ids.extend(part_ids)
                strings = self.model_strings
                tokens.extend([strings[i] for i in part_ids])
                offsets.extend(map(tuple, (spans + pos).tolist()))  # (HF's offsets are tuples)
            pos += len(part)
        n = len(ids)
        if fast:  # encode_batch_fast: HF fills neither tokens, offsets nor words, and type id 0
            return Encoding._make(ids, [0] * n, [""] * n, [None] * n, [(0, 0)] * n, [0] * n, [1] * n)
        return Encoding._make(ids, [type_id] * n, tokens, words, offsets, [0] * n, [1] * n)

    def _scanned(self, part: str) -> Optional[tuple]:
        """(ids, character spans, piece index of each id) of ``part`` from one compiled pass, or
        None where that pass does not apply: no compiled scanner, a lone surrogate, NFC changing
        the text (the spans must point into ``part``, the pieces are NFC's), the scanner giving
        up."""
        from cybpe._c.nfc import nfc
        from cybpe.encode.fastpath import encode_scanned_words

        if not self._pretokenizer.uses_scanner or (self._normalizer and nfc(part) is not part):
            return None
        try:
            data = str.encode(part, "utf-8")
        except UnicodeEncodeError:
            return None
        return encode_scanned_words(self._encoder, self._pretokenizer.scanner, data)

    def _word_ids(self, part: str, n_ids: int, first: int) -> list:
        """The word id of each of ``part``'s ``n_ids`` ids where ``_scanned`` does not apply:
        ``first`` plus the index of the pre-tokenizer piece (of the normalized text) it comes
        from, by encoding each piece on its own."""
        from cybpe._c.nfc import nfc

        normalized = nfc(part) if self._normalizer else part  # (NFC: the one normalizer read)
        counts = [len(self._encoder.encode_str_pieces([p])) for p in self._pretokenizer.split(normalized)]
        if sum(counts) != n_ids:
            raise RuntimeError("cybpe: the pieces do not add up to the text's ids (a bug)")
        out: list = []
        for k, c in enumerate(counts):
            out.extend([first + k] * c)
        return out

    def decode(self, ids: Any, skip_special_tokens: bool) -> str:
        """HF's ByteLevel decode of ``ids`` (raises for an id that is no token)."""
        return self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)


def _light(ids: list, type_id: int, fast: bool) -> Encoding:
    n = len(ids)
    return Encoding._make(ids, [0 if fast else type_id] * n, None, None, None, [0] * n, [1] * n)


def _set_window_filler(e: Encoding, filler: Any) -> None:
    """``filler`` for every overflowing window of ``e``, at any depth."""
    for o in e._overflowing:
        o._filler = filler
        _set_window_filler(o, filler)


def _engine_key(raw: str) -> Optional[str]:
    """The part of ``to_str()`` that the engine reads (truncation and padding come before it)."""
    at = raw.find('"added_tokens"')
    return None if at < 0 else hashlib.sha256(raw[at:].encode("utf-8", "surrogatepass")).hexdigest()


class CybpeBackend:
    """A ``tokenizers.Tokenizer`` whose encode and decode calls run on cybpe (the module
    docstring says which and how); every other attribute is the wrapped tokenizer's.

    Thread safety: ``encode``, ``encode_batch``, ``encode_batch_fast``, ``decode``,
    ``decode_batch``, ``accelerated`` and ``refresh`` may run in several threads at once (the
    engine is built once, under a lock). The settings (``enable_truncation``, ``enable_padding``,
    ``encode_special_tokens``, components, ``add_tokens``) belong to the shared Rust tokenizer:
    changing them while another thread encodes races as on HF's own tokenizer."""

    def __init__(self, inner: Any) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_engine", None)  # None: not built yet; False: unsupported
        object.__setattr__(self, "_lock", threading.Lock())
        object.__setattr__(self, "_pp_cache", (None, None, {}))

    # -- delegation ----------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name in _OWN:
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "_inner"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)
        if name in _ENGINE_COMPONENTS:
            self.refresh()

    def __repr__(self) -> str:
        return f"CybpeBackend({self._inner!r})"

    @property
    def backend(self) -> Any:
        """The wrapped ``tokenizers.Tokenizer``."""
        return self._inner

    @property
    def accelerated(self) -> bool:
        """Whether cybpe encodes for this tokenizer (builds the engine if needed)."""
        return self._engine_or_none() is not None

    def refresh(self) -> None:
        """Forget the engine: the next call rebuilds it from the tokenizer as it is now."""
        object.__setattr__(self, "_engine", None)

    def _engine_or_none(self) -> Optional[Engine]:
        engine = self._engine
        if engine is None:
            with self._lock:
                engine = self._engine
                if engine is None:
                    engine = self._build()
                    object.__setattr__(self, "_engine", engine)
        return engine or None

    def _build(self) -> Any:
        inner = self._inner
        model = type(inner.model).__name__
        if model != "BPE":
            logger.debug("cybpe.patch_transformers: kept on HF's engine: model %s (cybpe reads byte-level BPE)", model)
            return False
        raw = inner.to_str()
        key = _engine_key(raw)
        with _ENGINES_LOCK:
            found = _ENGINES.get(key) if key else None
        if found is not None:
            return found
        try:
            engine = Engine(_loads(raw))
        except Unsupported as exc:
            logger.debug("cybpe.patch_transformers: kept on HF's engine: %s", exc)
            return False
        if key:
            with _ENGINES_LOCK:
                engine = _ENGINES.setdefault(key, engine)
        return engine

    # -- mutations that change the engine ------------------------------------------------------
    def add_tokens(self, tokens: Any) -> int:
        """The Rust tokenizer's ``add_tokens``; the engine is rebuilt on the next call."""
        try:
            return self._inner.add_tokens(tokens)
        finally:
            self.refresh()

    def add_special_tokens(self, tokens: Any) -> int:
        """The Rust tokenizer's ``add_special_tokens``; the engine is rebuilt on the next call."""
        try:
            return self._inner.add_special_tokens(tokens)
        finally:
            self.refresh()

    def train(self, *args: Any, **kwargs: Any) -> Any:
        """The Rust tokenizer's ``train`` (the engine is rebuilt on the next call)."""
        try:
            return self._inner.train(*args, **kwargs)
        finally:
            self.refresh()

    def train_from_iterator(self, *args: Any, **kwargs: Any) -> Any:
        """The Rust tokenizer's ``train_from_iterator`` (the engine is rebuilt on the next call)."""
        try:
            return self._inner.train_from_iterator(*args, **kwargs)
        finally:
            self.refresh()

    # -- copies and pickling: a backend of a copy of the Rust tokenizer ------------------------
    def __reduce__(self) -> tuple:
        return (CybpeBackend, (self._inner,))

    def __copy__(self) -> "CybpeBackend":
        return CybpeBackend(self._inner)

    def __deepcopy__(self, memo: dict) -> "CybpeBackend":
        return CybpeBackend(copy.deepcopy(self._inner, memo))

    # -- what transformers reads at every call: the Rust tokenizer's, without a Python frame -----
    truncation = property(attrgetter("_inner.truncation"))
    padding = property(attrgetter("_inner.padding"))
    encode_special_tokens = property(attrgetter("_inner.encode_special_tokens"))
    post_processor = property(attrgetter("_inner.post_processor"))
    no_truncation = property(attrgetter("_inner.no_truncation"))
    no_padding = property(attrgetter("_inner.no_padding"))
    enable_truncation = property(attrgetter("_inner.enable_truncation"))
    enable_padding = property(attrgetter("_inner.enable_padding"))
    token_to_id = property(attrgetter("_inner.token_to_id"))
    id_to_token = property(attrgetter("_inner.id_to_token"))

    # -- encoding ------------------------------------------------------------------------------
    def _parse_post_processor(self, state: bytes) -> tuple[Any, dict]:
        """The post-processor of ``state`` (its ``__getstate__()``), parsed, or Unsupported,
        and the (empty) layouts of its single template (:class:`SingleLayout`, by
        ``add_special_tokens``); kept for the next call, which parses again only when the
        state differs."""
        try:
            parsed = parse_post_processor(state)
        except (Unsupported, ValueError, KeyError, TypeError) as exc:
            parsed = Unsupported(f"post-processor: {exc}")
        layouts: dict = {}
        object.__setattr__(self, "_pp_cache", (state, parsed, layouts))
        return parsed, layouts

    def _encode(self, inputs: Any, is_pretokenized: bool, add_special_tokens: bool, fast: bool) -> Optional[list]:
        """The encodings of ``inputs`` as the Rust ``encode_batch`` (or ``encode_batch_fast``)
        gives them, or None when this call goes to HF (the reason logged). One text without
        truncation, padding or pairs, the common call, takes the short way (:class:`SingleLayout`)."""
        if is_pretokenized or not isinstance(inputs, (list, tuple)):
            return None
        if len(inputs) == 1 and type(inputs[0]) is str:
            firsts: list = [inputs[0]]
            seconds: Optional[list] = None
        else:
            split = _split(inputs)
            if split is None:
                return None
            firsts, seconds = split
        engine = self._engine
        if engine is None:
            engine = self._engine_or_none()
        if not engine:
            return None
        inner = self._inner
        split_special = bool(inner.encode_special_tokens)
        if split_special and not engine.split_ok:
            logger.debug("cybpe.patch_transformers: encode_special_tokens with a special token "
                         "overlapping a non-special one: this call runs on HF's engine")
            return None
        # The live post-processor, parsed once per state: its state is read at every call, as
        # it can be changed in place (``backend.post_processor.trim_offsets = True``).
        pp = inner.post_processor
        layouts = _NO_PP_LAYOUTS
        if pp is not None:
            state = pp.__getstate__()
            cached_state, pp, layouts = self._pp_cache
            if cached_state != state:
                pp, layouts = self._parse_post_processor(state)
            if isinstance(pp, Unsupported):
                logger.debug("cybpe.patch_transformers: this call runs on HF's engine: %s", pp)
                return None
        trunc = inner.truncation
        padding = inner.padding
        if trunc is not None:
            n_added = pp.added(seconds is not None) if (pp is not None and add_special_tokens) else 0
            if trunc["max_length"] < n_added:  # HF's unsigned subtraction would wrap
                return None
        add_special_tokens = bool(add_special_tokens)
        # The surrogate checks come after the engine, which leaves each str holding its UTF-8
        # form: they then copy that form rather than convert the text again.
        if len(firsts) == 1:
            first = firsts[0]
            ids_a = [engine.ids(first, split_special)]
            if not (first.isascii() or _utf8_ok(first)):
                return None  # HF raises on a lone surrogate
        else:
            ids_a = engine.ids_batch(firsts, split_special)
            if not _all_utf8(firsts):
                return None
        ids_b = None
        if seconds is not None:
            ids_b = engine.ids_batch(seconds, split_special)
            if not _all_utf8(seconds):
                return None
        filler = _CallFiller(engine, split_special, add_special_tokens, fast, trunc, pp, padding)
        layout = None
        if trunc is None and padding is None and seconds is None:
            layout = layouts.get(add_special_tokens, _UNSET)
            if layout is _UNSET:  # (a race makes equal layouts: either is kept)
                layout = layouts[add_special_tokens] = SingleLayout.of(pp, add_special_tokens)
        if layout is not None:
            return light_encodings(layout, ids_a, firsts, filler)  # (not seen by the collector)
        out = []
        try:
            for k, ids in enumerate(ids_a):
                a = _light(ids, 0, fast)
                b = _light(ids_b[k], 1, fast) if ids_b is not None else None
                out.append(_pipeline(a, b, add_special_tokens, trunc, pp, padding))
            if padding is not None:
                filler.target = pad_encodings(out, padding)
        except Unsupported as exc:
            logger.debug("cybpe.patch_transformers: this call runs on HF's engine: %s", exc)
            return None
        # The filler is shared by the call's encodings and given the encoding when it runs: it
        # holds none of them, so an encoding is in no reference cycle and is freed when
        # transformers drops it (a cycle left each call's lists to the collector).
        for k, e in enumerate(out):
            e._filler = filler
            e._source = firsts[k] if seconds is None else (firsts[k], seconds[k])
            if e._overflowing:  # a window fills its call's encoding (a cycle, for windows only)
                _set_window_filler(e, partial(_fill_window, e))
        return out

    def encode_batch(self, input: Any, is_pretokenized: bool = False, add_special_tokens: bool = True) -> list:
        """``tokenizers.Tokenizer.encode_batch`` (cybpe encodes text inputs)."""
        found = self._encode(input, is_pretokenized, add_special_tokens, False)
        if found is None:
            return self._inner.encode_batch(input, is_pretokenized=is_pretokenized,
                                            add_special_tokens=add_special_tokens)
        return found

    def encode_batch_fast(self, input: Any, is_pretokenized: bool = False, add_special_tokens: bool = True) -> list:
        """``tokenizers.Tokenizer.encode_batch_fast``: no offsets, tokens or words, as HF."""
        found = self._encode(input, is_pretokenized, add_special_tokens, True)
        if found is None:
            return self._inner.encode_batch_fast(input, is_pretokenized=is_pretokenized,
                                                 add_special_tokens=add_special_tokens)
        return found

    def encode(self, sequence: Any, pair: Any = None, is_pretokenized: bool = False,
               add_special_tokens: bool = True) -> Any:
        """``tokenizers.Tokenizer.encode`` (cybpe encodes a text or a pair of texts)."""
        if type(sequence) is str and (pair is None or type(pair) is str):
            found = self._encode([sequence] if pair is None else [(sequence, pair)], is_pretokenized,
                                 add_special_tokens, False)
            if found is not None:
                return found[0]
        return self._inner.encode(sequence, pair, is_pretokenized=is_pretokenized,
                                  add_special_tokens=add_special_tokens)

    # -- decoding ------------------------------------------------------------------------------
    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        """``tokenizers.Tokenizer.decode`` (cybpe decodes; ids that are not all tokens go to HF)."""
        engine = self._engine_or_none()
        if engine is not None and engine.decode_ok and isinstance(ids, list):
            try:
                return engine.decode(ids, bool(skip_special_tokens))
            except Exception:  # an id that is no token (HF skips it), a negative id...: HF answers
                pass
        return self._inner.decode(ids, skip_special_tokens=skip_special_tokens)

    def decode_batch(self, sequences: Any, skip_special_tokens: bool = True) -> list:
        """``tokenizers.Tokenizer.decode_batch``."""
        engine = self._engine_or_none()
        if engine is not None and engine.decode_ok and isinstance(sequences, list):
            try:
                return [engine.decode(ids, bool(skip_special_tokens)) if isinstance(ids, list) else _no()
                        for ids in sequences]
            except Exception:
                pass
        return self._inner.decode_batch(sequences, skip_special_tokens=skip_special_tokens)


def _split(inputs: Any) -> Optional[tuple[list, Optional[list]]]:
    """(first texts, second texts or None) when every input is a str or every input a pair
    of str; None otherwise."""
    kinds = set(map(type, inputs))  # no Python frame per input
    if not kinds or kinds == {str}:
        return list(inputs), None
    firsts, seconds = [], []
    for x in inputs:
        if not (isinstance(x, (tuple, list)) and len(x) == 2 and type(x[0]) is str and type(x[1]) is str):
            return None
        firsts.append(x[0])
        seconds.append(x[1])
    return firsts, seconds


def _no() -> Any:
    raise Unsupported("not a list of ids")


def _pipeline(a: Encoding, b: Optional[Encoding], add_special_tokens: bool, trunc: Optional[dict],
              pp: Any, padding: Optional[dict]) -> Encoding:
    """``Tokenizer::post_process`` of one input: truncation, post-processor, padding."""
    if trunc is not None:
        n_added = pp.added(b is not None) if pp is not None else 0
        max_length = trunc["max_length"] - n_added if (add_special_tokens and n_added > 0) else trunc["max_length"]
        truncate_encodings(a, b, max_length, trunc["stride"], trunc["strategy"], trunc["direction"])
    if pp is not None:
        enc = process(pp, a, b, add_special_tokens)
    else:
        enc = default_process([a] if b is None else [a, b])
    if padding is not None:
        pad_encodings([enc], padding)
    return enc


class _CallFiller:
    """Fills in the full fields of one call's encodings, each once, on first use: its input
    (the encoding's ``_source``) encoded again at full detail with the call's settings. One
    per call, shared by its encodings (which it does not hold).

    Thread safety: fills under its lock; any thread may call it."""

    __slots__ = ("lock", "engine", "split_special", "add_special_tokens", "fast", "trunc", "pp", "padding",
                 "target")

    def __init__(self, engine: Engine, split_special: bool, add_special_tokens: bool, fast: bool,
                 trunc: Optional[dict], pp: Any, padding: Optional[dict]) -> None:
        self.lock = threading.Lock()
        self.engine, self.split_special, self.add_special_tokens, self.fast = engine, split_special, add_special_tokens, fast
        self.trunc, self.pp, self.padding = trunc, pp, padding
        self.target: Optional[int] = None  # the length the call padded to

    def __call__(self, light: Encoding) -> None:
        with self.lock:
            if light._filler is None:
                return
            first, second = light._source if isinstance(light._source, tuple) else (light._source, None)
            a = self.engine.full(first, self.split_special, 0, self.fast)
            b = self.engine.full(second, self.split_special, 1, self.fast) if second is not None else None
            full = _pipeline(a, b, self.add_special_tokens, self.trunc, self.pp, self.padding)
            if self.padding is not None and self.target is not None:
                pad_encodings([full], {**self.padding, "length": self.target, "pad_to_multiple_of": None})
            fill_from(light, full)


def _fill_window(light: Encoding, window: Encoding) -> None:
    """A window's filler: fill in its call's encoding ``light``, which fills every window."""
    light._need_full()


def _loads(raw: str) -> Any:
    """``json.loads``, by orjson when it gives the same document (cybpe/io/atomic.py's rule)."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency
        return json.loads(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:  # what orjson refuses and json takes (lone surrogates...)
        return json.loads(raw)
