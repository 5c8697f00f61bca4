"""``cybpe.patch_transformers()`` differentially: every call of issue 43 (item 2) on a patched
transformers tokenizer equals the same call on the same tokenizer unpatched, on the shared
Llama 3 (with and without Meta's BOS template), Qwen3 and GPT-4o folders and a cybpe-trained
folder, over hostile strings and pieces of the shared evaluation documents. The default run
takes a few documents; the corpus sweep is marked slow. Runs under transformers 5.x (the test
extra) and 4.x (.ci/stage-transformers4.sh)."""

from __future__ import annotations

import itertools
import logging
import pickle

import pytest

import cybpe
from cybpe.compat.hf_backend import CybpeBackend
from cybpe.compat.hf_encoding import Encoding
from cybpe.compat.light_encoding import LightEncoding
from cybpe.compat.transformers_patch import backend_of, is_patched
from hfpatch_support import (FOLDERS, HOSTILE, accelerated, both, encoding_fields, eval_docs, folder_path, load,
                             transformers)

pytest.importorskip("transformers", reason="transformers is in the test extra")
pytest.importorskip("tokenizers")


@pytest.fixture(autouse=True)
def _unpatched_after():
    yield
    cybpe.unpatch_transformers()


@pytest.fixture(scope="module", params=FOLDERS)
def named(request, tmp_path_factory):
    folder = folder_path(request.param, tmp_path_factory.mktemp("folders"))
    if folder is None:
        pytest.skip("the shared vocabularies are absent (set CYBPE_SHARED)")
    return request.param, folder, load(folder)


@pytest.fixture(scope="module")
def texts():
    return HOSTILE + [d[i:i + 900] for d in eval_docs(4, 2700) for i in range(0, len(d), 900)]


def _raised(result) -> bool:
    return isinstance(result, tuple) and len(result) == 3 and result[0] == "raised"


def _same(tok, call):
    expected, got = both(tok, call)
    if _raised(expected) and _raised(got) and "PanicException" in (expected[1], got[1]):
        # A Rust panic inside HF's engine (it panics on some pair truncations, and the patch
        # hands those calls back to it) can leave that tokenizer's settings half-changed, so the
        # next call on it may raise a different error: both raising is the contract there.
        return got
    assert got == expected
    return got


def test_accelerated(named):
    name, _, tok = named
    assert accelerated(tok), name
    with cybpe.transformers_patched():
        assert isinstance(tok.backend_tokenizer, CybpeBackend)
        # cybpe's encodings, not HF's fallback (a batch's common call gives light ones)
        assert all(isinstance(e, (Encoding, LightEncoding)) for e in tok(["a b", "c"]).encodings)
    assert type(tok.backend_tokenizer).__name__ == "Tokenizer"


def test_backend_follows_the_rust_tokenizer_in_the_instance(named, texts):
    """The backend read through the descriptor is the one of the Rust tokenizer the instance
    holds now: one backend per instance while it stays (the compiled read), a new one when the
    instance's ``__dict__`` gets another Rust tokenizer behind the descriptor's back, none for
    None."""
    import copy

    _, _, tok = named
    with cybpe.transformers_patched():
        first = tok._tokenizer
        assert isinstance(first, CybpeBackend) and tok._tokenizer is first
        raw = tok.__dict__["_tokenizer"]
        other = copy.deepcopy(raw)
        tok.__dict__["_tokenizer"] = other
        try:
            second = tok._tokenizer
            assert isinstance(second, CybpeBackend) and second is not first
            assert second._inner is other and tok._tokenizer is second
            assert tok(texts[0]).input_ids == first.encode(texts[0]).ids
            tok.__dict__["_tokenizer"] = None
            assert tok._tokenizer is None
        finally:
            tok.__dict__["_tokenizer"] = raw
        assert tok._tokenizer._inner is raw


def test_call_single_and_batch(named, texts):
    _, _, tok = named
    for text in texts:
        _same(tok, lambda t: t(text))
        _same(tok, lambda t: t(text, add_special_tokens=False))
        _same(tok, lambda t: t.encode(text))
        _same(tok, lambda t: t.tokenize(text))
    _same(tok, lambda t: t(texts))
    _same(tok, lambda t: t(texts, return_offsets_mapping=True, return_special_tokens_mask=True,
                           return_token_type_ids=True, return_length=True))


def test_call_argument_grid(named, texts):
    _, _, tok = named
    batches = [texts[:1], texts[:7], texts[5:]]
    grid = itertools.product((True, "max_length", False), (True, False), (None, 5, 33), ("right", "left"),
                             (True, False))
    for padding, truncation, max_length, side, add in grid:
        if (padding == "max_length" or truncation) and max_length is None:
            continue
        kwargs = dict(padding=padding, truncation=truncation, max_length=max_length, padding_side=side,
                      add_special_tokens=add, return_offsets_mapping=True, return_special_tokens_mask=True,
                      return_attention_mask=True)
        for batch in batches:
            _same(tok, lambda t: t(batch, **kwargs))
        _same(tok, lambda t: t(texts[6], **kwargs))
    _same(tok, lambda t: t(texts[:9], padding=True, pad_to_multiple_of=8, return_tensors="np"))


def test_truncation_stride_overflow(named, texts):
    _, _, tok = named
    long_texts = [t for t in texts if len(t) > 40][:5] + ["short"]
    for max_length, stride, side in ((8, 0, "right"), (8, 3, "right"), (20, 7, "left"), (4, 2, "right")):
        tok.truncation_side = side
        try:
            _same(tok, lambda t: t(long_texts, truncation=True, max_length=max_length, stride=stride,
                                   return_overflowing_tokens=True, return_offsets_mapping=True,
                                   return_special_tokens_mask=True, padding=True))
            _same(tok, lambda t: t(long_texts[0], truncation=True, max_length=max_length, stride=stride,
                                   return_overflowing_tokens=True))
        finally:
            tok.truncation_side = "right"


def test_pairs(named, texts):
    _, _, tok = named
    firsts, seconds = texts[:8], texts[8:16]
    _same(tok, lambda t: t(firsts[2], seconds[3]))
    _same(tok, lambda t: t(firsts, seconds, return_offsets_mapping=True, return_token_type_ids=True,
                           return_special_tokens_mask=True))
    for strategy in ("longest_first", "only_first", "only_second"):
        _same(tok, lambda t: t(firsts, seconds, truncation=strategy, max_length=12, padding="max_length",
                               return_overflowing_tokens=True, stride=2, return_offsets_mapping=True))


def test_split_into_words_and_special_tokens(named, texts):
    _, _, tok = named
    _same(tok, lambda t: t([["Hello", " world"], ["a", "<|endoftext|>", "b"]], is_split_into_words=True))
    for text in texts[:12]:
        _same(tok, lambda t: t(text, split_special_tokens=True))
        _same(tok, lambda t: t.tokenize(text, split_special_tokens=True))


def test_ids_tokens_and_decode(named, texts):
    _, _, tok = named
    rows = [tok(t)["input_ids"] for t in texts]
    specials = sorted(tok.all_special_ids)
    rows.append(specials + rows[0] + specials[:3])
    rows.append([0, 1, 2, len(tok) + 5, 3])  # an id that is no token: HF skips it
    for row in rows:
        _same(tok, lambda t: t.convert_ids_to_tokens(row))
        for skip in (False, True):
            _same(tok, lambda t: t.decode(row, skip_special_tokens=skip))
    for skip in (False, True):
        _same(tok, lambda t: t.batch_decode(rows, skip_special_tokens=skip))
    _same(tok, lambda t: t.backend_tokenizer.decode_batch(rows[:4]))
    _same(tok, lambda t: t.decode(rows[1][:1] + [rows[1][1]] * 3))


def test_chat_template(named):
    name, _, tok = named
    if not tok.chat_template:
        pytest.skip(f"{name} has no chat template")
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi <|x|> 東京"},
            {"role": "assistant", "content": "Hello!"}]
    _same(tok, lambda t: t.apply_chat_template(chat, tokenize=True))
    _same(tok, lambda t: t.apply_chat_template(chat, tokenize=True, add_generation_prompt=True))


def test_backend_methods(named, texts):
    """The ``tokenizers.Tokenizer`` surface itself (what vLLM and others call directly)."""
    _, _, tok = named

    def direct(t):
        backend = t.backend_tokenizer
        backend.no_truncation()  # (what an earlier test's call left on the shared Rust tokenizer)
        backend.no_padding()
        out = [encoding_fields(backend.encode(texts[6])), encoding_fields(backend.encode(texts[1], texts[6]))]
        out += [encoding_fields(e) for e in backend.encode_batch(texts[:6])]
        out += [encoding_fields(e) for e in backend.encode_batch_fast(texts[:6], add_special_tokens=False)]
        backend.enable_truncation(6, stride=2)
        backend.enable_padding(pad_id=3, pad_token="<pad>", pad_to_multiple_of=4, direction="left")
        try:
            out += [encoding_fields(e) for e in backend.encode_batch([texts[6], (texts[5], texts[6]), ""])]
        finally:
            backend.no_truncation()
            backend.no_padding()
        out.append(backend.decode(t(texts[5])["input_ids"]))
        out.append(backend.get_vocab_size())
        out.append(backend.token_to_id(backend.id_to_token(7)))
        return out
    _same(tok, direct)


def test_numpy_tensors(named, texts):
    """``return_tensors="np"`` (torch is not needed): single texts, padded batches with every
    field, pairs, and a ragged batch (transformers' error, or its object arrays)."""
    _, _, tok = named
    _same(tok, lambda t: t(texts[6], return_tensors="np"))
    _same(tok, lambda t: t(texts[4], add_special_tokens=False, return_tensors="np", return_length=True))
    _same(tok, lambda t: t(texts[:10], padding=True, return_tensors="np", return_offsets_mapping=True,
                           return_special_tokens_mask=True, return_token_type_ids=True))
    _same(tok, lambda t: t(texts[:4], texts[4:8], padding="max_length", truncation=True, max_length=24,
                           return_tensors="np"))
    _same(tok, lambda t: t(texts[:5], return_tensors="np"))


def test_lone_surrogates_fall_back_to_hf(named):
    """A text with a lone surrogate, which HF refuses: the same error patched (the call goes
    to HF's engine), alone, in a batch, in a pair; the texts around it are unaffected."""
    _, _, tok = named
    for bad in ("a\ud800b", "東京\udfff", "<|endoftext|>\udc00 x", "\ud83d"):
        _same(tok, lambda t: t(bad))
        _same(tok, lambda t: t(["fine", bad, "ок"]))
        _same(tok, lambda t: t("fine", bad))
        _same(tok, lambda t: t.backend_tokenizer.encode_batch_fast([bad]))
    _same(tok, lambda t: t(["fine", "naïve 東京"]))


def test_post_processor_changed_between_calls(named, texts):
    """The post-processor is read at every call: changed in place (``trim_offsets``) or
    replaced after the first encode, the next call follows it."""
    _, _, tok = named
    import tokenizers

    def call(t):
        return t(texts[:6], texts[6:12], return_offsets_mapping=True, return_special_tokens_mask=True)

    def calls(t):  # the single-text calls, whose layouts are kept with the parsed post-processor
        return t(texts[0]), t(texts[1], add_special_tokens=False), t(texts[:3]), call(t)
    backend = tok.backend_tokenizer
    original = backend.post_processor
    with cybpe.transformers_patched():
        tok(texts[0])  # the engine and the post-processor's parse, before the change
    try:
        if isinstance(original, tokenizers.processors.ByteLevel):
            original.trim_offsets = not original.trim_offsets  # in place
            _same(tok, calls)
        with cybpe.transformers_patched():
            tok._tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
                single="<|x|> $A", pair="<|x|> $A $B:1 <|x|>:1", special_tokens=[("<|x|>", 7)])
        _same(tok, calls)
        tok._tokenizer.post_processor = tokenizers.processors.ByteLevel(trim_offsets=True)
        _same(tok, calls)
    finally:
        tok._tokenizer.post_processor = original


def test_encodings_need_no_collector(named):
    """A call's encodings are in no reference cycle (their lazy fields hold no reference to
    them): dropped, they are freed at once, without the cyclic collector walking their lists."""
    import gc
    import weakref

    _, _, tok = named
    with cybpe.transformers_patched():
        gc.disable()
        try:
            for call in (lambda: tok("a b c"), lambda: tok(["x y", "z", ""], padding=True),
                         lambda: tok("a", "b c", truncation=True, max_length=50)):
                out = call()
                refs = [weakref.ref(e) for e in out.encodings]
                del out
                assert [r() for r in refs] == [None] * len(refs)
        finally:
            gc.enable()


def _no_truncation_or_padding(tok) -> None:
    """Clear what the last call on the shared tokenizer left set (transformers sets both
    before each call, so the other tests do not depend on them)."""
    tok._tokenizer.no_truncation()
    tok._tokenizer.no_padding()


def _light_fields(e) -> dict:
    """What the common call's encodings make from their layout, read before anything that
    computes the full fields (tokens, offsets, words)."""
    n = len(e.ids)
    return {"ids": e.ids, "type_ids": e.type_ids, "special_tokens_mask": e.special_tokens_mask,
            "attention_mask": e.attention_mask, "sequence_ids": e.sequence_ids, "n_sequences": e.n_sequences,
            "token_to_sequence": [e.token_to_sequence(i) for i in (0, n // 2, max(n - 1, 0), n, n + 1)],
            "overflowing": len(e.overflowing)}


@pytest.mark.parametrize("add_special_tokens", [True, False])
def test_light_encodings_fields_before_and_after_filling(named, texts, add_special_tokens):
    """The fields a light encoding makes from its call's layout equal HF's, read while it is
    still light (no full field computed) and again after its full fields are filled in."""
    _, _, tok = named
    inputs = texts[:12]
    _no_truncation_or_padding(tok)
    cybpe.unpatch_transformers()
    expected = [_light_fields(e) for e in tok._tokenizer.encode_batch(inputs, add_special_tokens=add_special_tokens)]
    with cybpe.transformers_patched():
        backend = backend_of(tok)
        if not backend.accelerated:
            pytest.skip("this tokenizer stays on HF's engine")
        got = backend.encode_batch(inputs, add_special_tokens=add_special_tokens)
        # A LightEncoding answers the layout's fields itself (read first: any other attribute
        # makes its Python encoding); a call's single text, read as one, takes the same path.
        assert all(type(e) is LightEncoding and e._is_light() for e in got)
        made_here = [{"ids": e.ids, "type_ids": e.type_ids, "special_tokens_mask": e.special_tokens_mask,
                      "attention_mask": e.attention_mask, "n_sequences": e.n_sequences,
                      "overflowing": len(e.overflowing)} for e in got]
        assert all(e._is_light() for e in got)
        assert made_here == [{k: v for k, v in x.items() if k in made_here[0]} for x in expected]
        single = backend.encode_batch(inputs[:1], add_special_tokens=add_special_tokens)[0]
        assert single.type_ids == expected[0]["type_ids"] and single._is_light()
        assert all(e._layout is not None and e._filler is not None for e in got)  # still light
        assert [_light_fields(e) for e in got] == expected
        assert all(e._filler is not None for e in got)  # reading them computed no full field
        for e in got:
            assert e.tokens is not None
        assert all(e._filler is None and e._layout is None for e in got)
        assert [_light_fields(e) for e in got] == expected


def test_light_encodings_filled_by_threads_at_once(named, texts):
    """Eight threads read one call's light encodings at once, some filling in the full fields
    while others read the fields the layout makes: every thread sees HF's values."""
    import threading

    _, _, tok = named
    inputs = texts[:16]
    _no_truncation_or_padding(tok)
    cybpe.unpatch_transformers()
    hf = tok._tokenizer.encode_batch(inputs)
    expected, expected_light = [encoding_fields(e) for e in hf], [_light_fields(e) for e in hf]
    with cybpe.transformers_patched():
        backend = backend_of(tok)
        if not backend.accelerated:
            pytest.skip("this tokenizer stays on HF's engine")
        for _ in range(3):
            got = backend.encode_batch(inputs)
            start = threading.Barrier(8)
            seen: dict = {}

            def read(k: int) -> None:
                start.wait()
                order = got if k % 2 else got[::-1]
                fields = [_light_fields(e) if k % 3 else encoding_fields(e) for e in order]
                seen[k] = fields if k % 2 else fields[::-1]

            threads = [threading.Thread(target=read, args=(k,)) for k in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for k, fields in seen.items():
                assert fields == (expected_light if k % 3 else expected), k


def test_common_call_encodings_leave_the_collector_nothing(named):
    """A text of a batch's common call (no truncation, padding or pair) leaves the collector
    nothing: its encoding is a LightEncoding, which has no collector support and holds its ids
    in C memory (the engine's list is freed). Counted as the collector counts allocations, and
    checked on the encodings themselves."""
    import gc

    _, _, tok = named
    batch = [f"text number {k} with some words" for k in range(500)]
    _no_truncation_or_padding(tok)
    with cybpe.transformers_patched():
        backend = backend_of(tok)
        if not backend.accelerated:
            pytest.skip("this tokenizer stays on HF's engine")
        backend.encode_batch(batch)
        was = gc.isenabled()
        gc.collect()
        gc.disable()
        try:
            before = gc.get_count()[0]
            out = backend.encode_batch(batch)
            per_text = (gc.get_count()[0] - before) / len(batch)
        finally:
            if was:
                gc.enable()
        assert len(out) == len(batch)
        assert per_text < 0.5, per_text  # (the call's own lists; Python encodings made 2+)
        assert all(type(e) is LightEncoding and not gc.is_tracked(e) for e in out)
        assert gc.get_referents(out[0]) == []  # no traversal: the collector never visits it


@pytest.mark.parametrize("change", ["pad", "truncate", "pickle", "deepcopy", "read"])
def test_light_encodings_after_changes_and_copies(named, texts, change):
    """A batch's light encodings changed in place (``pad``, ``truncate``), pickled or copied
    answer every field as HF's encodings given the same treatment."""
    import copy

    _, _, tok = named
    inputs = texts[:6]
    _no_truncation_or_padding(tok)

    def treated(encodings: list) -> list:
        out = []
        for e in encodings:
            if change == "pad":
                e.pad(len(e) + 3, direction="left", pad_id=7, pad_type_id=1, pad_token="[PAD]")
            elif change == "truncate":
                e.truncate(max(len(e) // 2, 2), stride=1)  # (HF panics on stride >= max_length)
            elif change == "pickle":
                e = pickle.loads(pickle.dumps(e))
            elif change == "deepcopy":
                e = copy.deepcopy(e)
            out.append(encoding_fields(e))
        return out

    cybpe.unpatch_transformers()
    expected = treated(tok._tokenizer.encode_batch(inputs))
    with cybpe.transformers_patched():
        backend = backend_of(tok)
        if not backend.accelerated:
            pytest.skip("this tokenizer stays on HF's engine")
        got = backend.encode_batch(inputs)
        assert all(type(e) is LightEncoding for e in got)
        assert treated(got) == expected


def test_light_encodings_hold_any_int_and_refuse_the_rest():
    """light_encodings keeps the engine's int objects as they are (a special id, a big int), and
    refuses a list holding anything else with a TypeError, leaking nothing."""
    import sys

    from cybpe.compat.hf_postprocessors import SingleLayout
    from cybpe.compat.light_encoding import light_encodings

    layout = SingleLayout.of(None, True)
    big = 2 ** 70 + 1
    made = light_encodings(layout, [[1, 2], [big, 128000]], ["a", "b"], None)
    assert [e.ids for e in made] == [[1, 2], [big, 128000]] and [len(e) for e in made] == [2, 2]
    count = sys.getrefcount(big)
    del made
    assert sys.getrefcount(big) == count - 1  # the encoding's reference went with it
    with pytest.raises(TypeError):
        light_encodings(layout, [[1, "2"]], ["a"], None)
    with pytest.raises(TypeError):
        light_encodings(layout, [(1, 2)], ["a"], None)
    assert sys.getrefcount(big) == count - 1
    with pytest.raises(ValueError):
        light_encodings(layout, [[1]], ["a", "b"], None)


def test_tokenizers_made_every_way(named):
    """Made before the patch (the fixture's), after it by AutoTokenizer, by
    PreTrainedTokenizerFast(tokenizer_file=...) and by from_pretrained of the folder."""
    name, folder, _ = named
    t = transformers()
    text = HOSTILE[6] + " " + HOSTILE[5]
    with cybpe.transformers_patched():
        made = [load(folder), t.PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json")),
                t.PreTrainedTokenizerFast.from_pretrained(str(folder))]
        for tok in made:
            assert backend_of(tok) is not None and backend_of(tok).accelerated, name
            got = tok(text)["input_ids"]
            cybpe.unpatch_transformers()
            assert tok(text)["input_ids"] == got
            cybpe.patch_transformers()


def test_added_tokens_at_run_time(named, tmp_path):
    name, folder, _ = named
    tok = load(folder)
    text = "x foo_bar y <NEW_SPECIAL> z foo_barfoo_bar 東京<NEW_SPECIAL>"
    with cybpe.transformers_patched():
        assert tok(text)["input_ids"]  # the engine is built before the tokens are added
        tok.add_tokens(["foo_bar", " spaced"])
        tok.add_special_tokens({"additional_special_tokens": ["<NEW_SPECIAL>"]})
    for call in (lambda t: t(text), lambda t: t(text, split_special_tokens=True), lambda t: t.tokenize(text),
                 lambda t: t.decode(t(text)["input_ids"], skip_special_tokens=True),
                 lambda t: t(text, return_offsets_mapping=True)):
        _same(tok, call)


def test_unsupported_tokenizer_stays_on_hf_and_says_why(named, caplog):
    """A tokenizer cybpe cannot represent (here: a prefix space added by the pre-tokenizer)
    keeps HF's engine, with a debug line giving the reason."""
    name, folder, _ = named
    if name != "trained":
        pytest.skip("one folder is enough")
    t = transformers()
    tok = t.PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    backend = tok._tokenizer
    pre = backend.pre_tokenizer
    import tokenizers

    backend.pre_tokenizer = tokenizers.pre_tokenizers.Sequence([pre, tokenizers.pre_tokenizers.Digits()])
    with caplog.at_level(logging.DEBUG, logger="cybpe.compat.transformers"):
        assert not accelerated(tok)
    assert any("kept on HF's engine" in r.getMessage() for r in caplog.records)
    _same(tok, lambda t: t(["a 123 b", "x"], return_offsets_mapping=True))


def test_patch_is_idempotent_and_reversible(named):
    _, _, tok = named
    import tokenizers.decoders

    t = transformers()
    owner = type(tok).__mro__
    stream = tokenizers.decoders.DecodeStream
    before = {c: dict(vars(c)) for c in owner}
    cybpe.patch_transformers()
    cybpe.patch_transformers()
    assert is_patched() and isinstance(tok._tokenizer, CybpeBackend)
    first = tok._tokenizer
    assert tok._tokenizer is first  # one backend per tokenizer
    with cybpe.transformers_patched():
        assert is_patched()
    assert is_patched()  # the context manager left an earlier patch on
    ids = tok(HOSTILE[6])["input_ids"]
    s = tokenizers.decoders.DecodeStream(skip_special_tokens=False)
    assert "".join(filter(None, (s.step(tok._tokenizer, i) for i in ids))) == tok.decode(ids)
    cybpe.unpatch_transformers()
    cybpe.unpatch_transformers()
    assert not is_patched()
    assert type(tok._tokenizer).__name__ == "Tokenizer"
    assert tokenizers.decoders.DecodeStream is stream
    assert {c: dict(vars(c)) for c in owner} == before
    assert isinstance(t.PreTrainedTokenizerFast, type)


def test_pickle_and_copy(named, texts):
    import copy

    _, _, tok = named
    with cybpe.transformers_patched():
        expected = tok(texts[:5], return_offsets_mapping=True)
        for clone in (pickle.loads(pickle.dumps(tok)), copy.deepcopy(tok)):
            assert isinstance(clone._tokenizer, CybpeBackend)
            assert clone._tokenizer.backend is not tok._tokenizer.backend
            got = clone(texts[:5], return_offsets_mapping=True)
            assert dict(got) == dict(expected)
        batch = tok(texts[:3], return_overflowing_tokens=True, truncation=True, max_length=4)
        again = pickle.loads(pickle.dumps(batch))
        assert [e.tokens for e in again.encodings] == [e.tokens for e in batch.encodings]
    unpatched = pickle.loads(pickle.dumps(tok))  # a patched tokenizer pickles as a plain one
    assert type(unpatched._tokenizer).__name__ == "Tokenizer"
    assert unpatched(texts[:5], return_offsets_mapping=True)["input_ids"] == expected["input_ids"]


@pytest.mark.slow
def test_corpus_sweep(named):
    """Every shared evaluation document (16 KB of each), single calls and one batch, with
    offsets and the special-tokens mask, plus decode."""
    _, _, tok = named
    docs = eval_docs(100, 16_000)
    if not docs:
        pytest.skip("the shared corpora are absent")
    for doc in docs:
        _same(tok, lambda t: t(doc, return_offsets_mapping=True, return_special_tokens_mask=True))
        _same(tok, lambda t: t.decode(t(doc)["input_ids"]))
    chunks = [d[i:i + 1000] for d in docs for i in range(0, len(d), 1000)]
    _same(tok, lambda t: t(chunks, padding=True, truncation=True, max_length=200, return_offsets_mapping=True))
