"""Hostile arguments over the whole public API: every call works or raises a ``cybpe.errors`` type.

The API is *enumerated* (every public name of ``cybpe``, and every public method and property
of the public types), so a new function or method is probed by default:

* a name with a row in ``VALID_CALLS`` is called with those valid arguments, then once per
  (parameter, hostile value) with that one argument replaced;
* a name without a row gets the generic probe: every required parameter set to the same hostile
  value, for each hostile value.

Either way a call may return anything or raise a :class:`cybpe.errors.CybpeError`; any other
exception (``TypeError``, ``KeyError``, ``RecursionError``, ``OverflowError``...) fails the test,
listing every offending call at once. A hang is turned into a failure by a watchdog
(``faulthandler``), so CI never waits on one.
"""

from __future__ import annotations

import faulthandler
import inspect
import os
from typing import Any, Callable

import numpy as np
import pytest

import cybpe
from cybpe.errors import CybpeError
from support import examples, write_every_format

TEXT = "Hello world, the quick brown fox. 12345 jumps! <|eot|> Ünïcödé 中文 🙂\n  done."


class SneakyStr(str):
    """A str subclass whose Python-level methods lie: cybpe must read its code points."""

    def encode(self, *args: Any, **kwargs: Any) -> bytes:  # type: ignore[override]
        return b"SNEAKY"

    def __iter__(self):  # type: ignore[override]
        return iter("SNEAKY")

    def __len__(self) -> int:
        return 1


def _deep_list(depth: int) -> list:
    root: list = []
    node = root
    for _ in range(depth):
        child: list = []
        node.append(child)
        node = child
    return root


class _Unhashable:
    __hash__ = None  # type: ignore[assignment]


#: Values that are wrong for almost every parameter (and right for a few, which is fine).
HOSTILE: dict[str, Any] = {
    "None": None,
    "True": True,
    "-1": -1,
    "2**64": 2**64,
    "1.5": 1.5,
    "nan": float("nan"),
    "empty-str": "",
    "surrogate": "a\ud800b",
    "sneaky-str": SneakyStr("hello"),
    "bytes": b"\xff\xfe",
    "empty-list": [],
    "list-of-None": [None],
    "ragged": [[1], [2, 3]],
    "deep-list": _deep_list(100_000),
    "dict": {"a": object()},
    "object": object(),
    "unhashable": _Unhashable(),
    "ndarray-2d": np.zeros((2, 2), dtype=np.int64),
}


# ------------------------------------------------------------------------ instances to probe


@pytest.fixture(scope="module")
def tokenizer() -> cybpe.Tokenizer:
    return cybpe.train([TEXT * 5, "more text for merges " * 10], 300,
                       special_tokens=["<|eot|>"], progress=False)


def _instances(tokenizer: cybpe.Tokenizer) -> dict[str, Callable[[], Any]]:
    """A fresh instance of each public type (fresh: a probe may change it)."""
    def counts() -> cybpe.ChunkCounts:
        return cybpe.ChunkCounts("cl100k", ["<|eot|>"]).update([TEXT])

    return {
        "Tokenizer": lambda: tokenizer,  # its methods do not change it
        "ChunkCounts": counts,
        "PreTokenizer": lambda: cybpe.get_pretokenizer("cl100k"),
        "StreamDecoder": lambda: tokenizer.stream_decoder(),
        "Shard": lambda: cybpe.Shard("x.txt", 0, 10),
        "ParallelSet": lambda: cybpe.ParallelSet({"en": "a\nb", "fr": "c\nd"}),
        "SuperBPE": lambda: cybpe.SuperBPE(from_=300),
        "Prune": lambda: cybpe.Prune(exposure=2),
        "Vocab": lambda: cybpe.Vocab(list(tokenizer.vocab.tokens), list(tokenizer.vocab.merges),
                                     dict(tokenizer.vocab.special_tokens), True, True),
    }


def _valid_calls(tokenizer: cybpe.Tokenizer, folder: str) -> dict[str, tuple[tuple, dict]]:
    """Valid ``(args, kwargs)`` for the names whose probes start from a working call."""
    paths = write_every_format(tokenizer, folder, TEXT)
    saved, tiktoken_file, hf_file = paths["native"], paths["tiktoken"], paths["hf"]
    encoder_json, vocab_bpe, counts_file = paths["gpt2-encoder"], paths["gpt2-merges"], paths["counts"]
    ids = tokenizer.encode(TEXT, allowed_special="all")
    return {
        "train": (([TEXT], 280), {"special_tokens": ["<|eot|>"], "min_frequency": 0,
                                  "tie_break": "ids", "workers": None, "progress": False,
                                  "errors": "strict", "pretokenizer_params": None}),
        "files": ((saved,), {}),
        "get_pretokenizer": (("gpt4_digits",), {}),
        "bits_per_byte": ((2.0, 4.0), {}),
        "set_regex_timeout": ((2.0, 10.0), {}),
        "Tokenizer": ((tokenizer.vocab, "cl100k"), {"name": "x", "metadata": {}, "normalizer": None}),
        "ChunkCounts": (("cl100k", ["<|eot|>"]), {}),
        "PreTokenizer": (("hostile", r"\w+|\W+"), {}),
        "StreamDecoder": ((tokenizer, "replace"), {}),
        "Tokenizer.encode": ((TEXT,), {"allowed_special": {"<|eot|>"}, "disallowed_special": "all"}),
        "Tokenizer.encode_to_numpy": ((TEXT,), {"allowed_special": "all", "disallowed_special": ()}),
        "Tokenizer.encode_ordinary": ((TEXT,), {}),
        "Tokenizer.count": ((TEXT,), {}),
        "Tokenizer.encode_batch": (([TEXT, "b"],), {"num_threads": 2, "allowed_special": "all"}),
        "Tokenizer.encode_ordinary_batch": (([TEXT, "b"],), {"num_threads": 2}),
        "Tokenizer.encode_single_token": ((b"he",), {}),
        "Tokenizer.decode": ((ids,), {"errors": "replace"}),
        "Tokenizer.decode_bytes": ((ids,), {}),
        "Tokenizer.decode_single_token_bytes": ((ids[0],), {}),
        "Tokenizer.decode_tokens_bytes": ((ids,), {}),
        "Tokenizer.token_bytes": ((ids[0],), {}),
        "Tokenizer.stream_decoder": (("replace",), {}),
        "Tokenizer.save": ((os.path.join(folder, "probe-save.json"),), {}),
        "Tokenizer.load": ((saved,), {}),
        "Tokenizer.from_tiktoken": ((tiktoken_file, "cl100k", {"<|eot|>": 5000}), {"name": "x"}),
        "Tokenizer.to_tiktoken": ((os.path.join(folder, "probe.tiktoken"),), {}),
        "Tokenizer.from_hf": ((hf_file,), {"name": "x"}),
        "Tokenizer.to_hf": ((os.path.join(folder, "probe-hf.json"),), {}),
        "Tokenizer.from_gpt2": ((encoder_json, vocab_bpe), {"name": "x"}),
        "Tokenizer.to_gpt2": ((os.path.join(folder, "p-enc.json"), os.path.join(folder, "p.bpe")), {}),
        "ChunkCounts.update": (([TEXT],), {}),
        "ChunkCounts.add_counts": (({"ab": 2, b"cd": 3},), {}),
        "ChunkCounts.most_common": ((3,), {}),
        "ChunkCounts.save": ((os.path.join(folder, "probe-counts.json"),), {}),
        "ChunkCounts.load": ((counts_file,), {}),
        "PreTokenizer.split": ((TEXT,), {}),
        "PreTokenizer.split_spans": ((TEXT,), {}),
        "PreTokenizer.regex_spans": ((TEXT,), {}),
        "pretokenizer_from_spec": ((cybpe.get_pretokenizer("cl100k").spec(),), {}),
        "StreamDecoder.feed": ((ids,), {}),
        "Vocab.validate": (("a vocabulary",), {}),
    }


#: Names the probe leaves alone, each with the reason.
NOT_PROBED = {
    "register_plugin": "registers whatever object it is given (probed with its own cases below)",
    "unregister_plugin": "would remove the built-in plugins (probed with its own cases below)",
}


# --------------------------------------------------------------------------- the probe engine


def _outcome(call: Callable[[], Any]) -> str | None:
    """None when the call returned or raised a cybpe error, else a description."""
    try:
        call()
    except CybpeError:
        return None
    except Exception as exc:  # noqa: BLE001 - the point of the test
        return f"{type(exc).__name__}: {str(exc)[:160]}"
    return None


def _parameters(target: Callable) -> list[inspect.Parameter]:
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return []
    return [p for p in signature.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _probe(label: str, target: Callable, valid: tuple[tuple, dict] | None) -> list[str]:
    """Every hostile call of ``target``; the failures as ``label(args): error`` lines."""
    failures: list[str] = []
    params = _parameters(target)

    def run(description: str, args: tuple, kwargs: dict) -> None:
        problem = _outcome(lambda: target(*args, **kwargs))
        if problem:
            failures.append(f"{label}({description}): {problem}")

    if valid is not None:
        args, kwargs = valid
        run("valid arguments", args, kwargs)
        for position, param in enumerate(params):
            for name, value in HOSTILE.items():
                if position < len(args):
                    new_args = args[:position] + (value,) + args[position + 1:]
                    run(f"{param.name}={name}", new_args, kwargs)
                elif param.kind is not param.POSITIONAL_ONLY:
                    run(f"{param.name}={name}", args, {**kwargs, param.name: value})
        return failures
    required = [p for p in params if p.default is p.empty]
    for name, value in HOSTILE.items():
        args = tuple(value for p in required if p.kind is not p.KEYWORD_ONLY)
        kwargs = {p.name: value for p in required if p.kind is p.KEYWORD_ONLY}
        run(f"every required argument={name}", args, kwargs)
    if not required:
        run("no arguments", (), {})
    return failures


def _public_names() -> list[str]:
    return sorted(n for n in dir(cybpe)
                  if not n.startswith("_") and not inspect.ismodule(getattr(cybpe, n)))


def _public_members(cls: type) -> list[str]:
    return sorted(n for n, _ in inspect.getmembers(cls) if not n.startswith("_"))


@pytest.fixture(autouse=True)
def _watchdog(tmp_path, monkeypatch):
    """Probes run in an empty folder (a path argument "x" writes there), and a hang fails."""
    monkeypatch.chdir(tmp_path)
    faulthandler.dump_traceback_later(300, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(autouse=True)
def _quick_regex_bound():
    previous = cybpe.set_regex_timeout(0.5, 5.0)
    yield
    cybpe.set_regex_timeout(*previous)


@pytest.mark.parametrize("name", _public_names())
def test_public_name_takes_hostile_arguments(name, tokenizer, tmp_path):
    obj = getattr(cybpe, name)
    if name in NOT_PROBED or not callable(obj):
        pytest.skip(NOT_PROBED.get(name, "not callable"))
    valid = _valid_calls(tokenizer, str(tmp_path)).get(name)
    failures = _probe(name, obj, valid)
    assert not failures, "untyped exceptions:\n" + "\n".join(failures)


def _type_members() -> list[tuple[str, str]]:
    out = []
    for name in _public_names():
        obj = getattr(cybpe, name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            out.extend((name, member) for member in _public_members(obj))
    return out


@pytest.mark.parametrize("type_name, member", _type_members())
def test_public_method_takes_hostile_arguments(type_name, member, tokenizer, tmp_path):
    factories = _instances(tokenizer)
    if type_name not in factories:
        pytest.fail(f"cybpe.{type_name} is public: add a factory for it to _instances()")
    instance = factories[type_name]()
    attribute = inspect.getattr_static(type(instance), member)
    if any(attribute is getattr(base, member, None) for base in (tuple, object)):
        return  # inherited unchanged from a built-in type (Shard's tuple.index, tuple.count)
    if isinstance(attribute, property):  # reading a property must work
        problem = _outcome(lambda: getattr(instance, member))
        assert problem is None, f"{type_name}.{member}: {problem}"
        return
    bound = getattr(instance, member)
    if not callable(bound):
        return
    valid = _valid_calls(tokenizer, str(tmp_path)).get(f"{type_name}.{member}")
    failures = _probe(f"{type_name}.{member}", bound, valid)
    assert not failures, "untyped exceptions:\n" + "\n".join(failures)


def test_every_public_type_has_an_instance_factory(tokenizer):
    """So that a new public type gets its methods probed (add it to ``_instances``)."""
    factories = _instances(tokenizer)
    for name in _public_names():
        obj = getattr(cybpe, name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            assert name in factories, f"add a factory for cybpe.{name} to _instances()"


# ----------------------------------------------------------------- the names probed by hand


def test_plugin_registration_takes_hostile_arguments():
    failures = []
    for name, value in HOSTILE.items():
        for label, call in (
            ("register_plugin", lambda: cybpe.register_plugin(value, name="hostile-probe")),
            ("register_plugin name", lambda: cybpe.register_plugin(object(), name=value)),
            ("unregister_plugin", lambda: cybpe.unregister_plugin(value)),
        ):
            problem = _outcome(call)
            if problem:
                failures.append(f"{label}({name}): {problem}")
            try:
                cybpe.unregister_plugin("hostile-probe")
            except CybpeError:
                pass
    assert not failures, "\n".join(failures)
    assert {"cl100k", "gpt2"} <= {p["name"] for p in cybpe.list_pretokenizers()}


@pytest.mark.parametrize("handler", ["\x00", "replace\x00"])
def test_error_handler_names_with_a_nul_are_typed_errors(tokenizer, handler):
    """codecs.lookup_error raises ValueError, not LookupError, for a name holding a NUL (found
    by the generated-arguments test below): every place that takes ``errors`` says so with a
    typed error."""
    with pytest.raises(cybpe.errors.InvalidParameterError):
        tokenizer.decode([1, 2], errors=handler)
    with pytest.raises(cybpe.errors.InvalidParameterError):
        cybpe.StreamDecoder(tokenizer, handler)
    with pytest.raises(cybpe.errors.InvalidParameterError):
        cybpe.train(["some text"], vocab_size=300, errors=handler)


# ------------------------------------------------------------------ generated values (hypothesis)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12),
                     st.binary(max_size=12))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4),
    st.tuples(inner, inner)), max_leaves=12)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=list(HealthCheck))
@given(value=_VALUES, other=_VALUES)
def test_generated_arguments_give_typed_errors(value, other, tokenizer):
    counts = cybpe.ChunkCounts("cl100k")
    calls = [
        lambda: tokenizer.encode(value),
        lambda: tokenizer.encode("a<|eot|>b", allowed_special=value, disallowed_special=other),
        lambda: tokenizer.decode(value),
        lambda: tokenizer.decode([1, 2], errors=value),
        lambda: tokenizer.decode_tokens_bytes(value),
        lambda: tokenizer.encode_single_token(value),
        lambda: tokenizer.encode_batch(value, num_threads=other),
        lambda: counts.add_counts(value),
        lambda: counts.update(value),
        lambda: counts.most_common(value),
        lambda: cybpe.get_pretokenizer("regex", pattern=value),
        lambda: cybpe.get_pretokenizer("gpt4-digits", **(value if isinstance(value, dict) else {})),
        lambda: cybpe.ChunkCounts("cl100k", value),
        lambda: cybpe.bits_per_byte(value, other),
    ]
    for k, call in enumerate(calls):
        problem = _outcome(call)
        assert problem is None, f"call {k} with {value!r}, {other!r}: {problem}"
