"""What the ``cybpe.patch_transformers`` suites share (tests/compat/test_transformers_patch*.py):
the tokenizer folders, the texts, and the comparison of a call patched with the same call
unpatched on the same tokenizer object."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any, Callable

import cybpe
from cybpe.compat.transformers_patch import backend_of
from support import UDHR_DIR, shared_path

UDHR = [p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))]
TRAINED_SPECIALS = ["<|endoftext|>", "<|pad|>", "<think>", "</think>"]

HOSTILE = [
    "Hello world", "", " ", "  leading and trailing  ", "don't STOP 12345 6", "中文 🙂 ça\n\n\tx",
    "<|endoftext|> and <|im_start|>user<|im_end|> <think>x</think>", "<|begin_of_text|>hi<|eot_id|>",
    "a" * 300, "\r\n\r\n  \u00a0 \u3000 !!!", "x<think>y</think>z", "<|pad|><|pad|>", "<<think>>",
    "tab\tnew\r\nline", "naïve café Ω≈ç√ 東京 🙂🙂", "\u200d\u0301e\u0301 A\u030a", "’s ’S 'LL",
    "   \n  \n", "1234567 89 3.14159", "\x00\x01 \x1c\x1d", "<|begin_of_text|><|begin_of_text|>",
]

#: The shared folders (with and without Meta's BOS template for Llama 3) and a cybpe-trained one.
SHARED_FOLDERS = ("llama3", "llama3-bos", "qwen3", "gpt4o-hf")
FOLDERS = SHARED_FOLDERS + ("trained",)


def transformers():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers as module

    return module


def make_trained_folder(folder: Path) -> Path:
    """A small tokenizer trained by cybpe on the UDHR sample, saved as a transformers folder."""
    tok = cybpe.train(UDHR, 900, "cl100k", TRAINED_SPECIALS, progress=False)
    tok = cybpe.Tokenizer(tok.vocab, tok.pretokenizer, non_special_tokens=["<think>", "</think>"],
                          bos_token="<|endoftext|>", eos_token="<|endoftext|>", pad_token="<|pad|>",
                          model_max_length=4096)
    tok.save_pretrained(folder)
    return folder


def make_llama3_bos_folder(shared: Path, folder: Path) -> Path:
    """The shared Llama 3 folder with Meta's post-processor: ByteLevel, then a template that
    puts ``<|begin_of_text|>`` before each sequence."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = json.loads((shared / "vocab" / "llama3" / "tokenizer.json").read_text(encoding="utf-8"))
    bos = "<|begin_of_text|>"
    doc["post_processor"] = {
        "type": "Sequence",
        "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {bos: {"id": bos, "ids": [128000], "tokens": [bos]}}},
        ],
    }
    (folder / "tokenizer.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    shutil.copy(shared / "vocab" / "llama3" / "tokenizer_config.json", folder / "tokenizer_config.json")
    return folder


def folder_path(name: str, tmp: Path) -> Path:
    """The folder of ``name`` (built in ``tmp`` when it is made here); None without shared."""
    if name == "trained":
        return make_trained_folder(tmp / "trained")
    shared = shared_path()
    if shared is None:
        return None  # type: ignore[return-value]
    if name == "llama3-bos":
        return make_llama3_bos_folder(shared, tmp / "llama3-bos")
    return shared / "vocab" / name


def load(folder: Path) -> Any:
    """``AutoTokenizer.from_pretrained`` of a local folder, with a pad token (its eos) when it has none."""
    t = transformers()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok = t.AutoTokenizer.from_pretrained(str(folder))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def eval_docs(count: int, size: int) -> list[str]:
    """Pieces of the shared evaluation documents (English, Japanese, Russian, Hindi... and
    code), ``size`` characters from each of the first ``count`` files; [] without shared."""
    shared = shared_path()
    if shared is None:
        return []
    files = sorted((shared / "corpora" / "eval" / "docs").glob("*.txt"))
    files += sorted((shared / "corpora" / "eval" / "code").glob("*.txt"))
    step = max(1, len(files) // count) if count else 1
    return [f.read_text(encoding="utf-8")[:size] for f in files[::step][:count]]


def plain(value: Any) -> Any:
    """A comparable form of what transformers returns (BatchEncoding, arrays, encodings)."""
    import numpy as np

    if hasattr(value, "data") and hasattr(value, "encodings"):  # BatchEncoding
        out = {"data": plain(dict(value.data))}
        if value.encodings is not None:
            out["encodings"] = [encoding_fields(e) for e in value.encodings]
            n = len(value.encodings)
            out["tokens"] = [value.tokens(i) for i in range(n)]
            out["word_ids"] = [value.word_ids(i) for i in range(n)]
            out["sequence_ids"] = [value.sequence_ids(i) for i in range(n)]
        return out
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "O":  # a ragged batch: an array of row arrays
            return ("array", "O", value.shape, [plain(v) for v in value.tolist()])
        return ("array", value.dtype.kind, value.shape, value.tolist())
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    return value


def encoding_fields(e: Any, depth: int = 0) -> dict:
    """Every field of a ``tokenizers.Encoding`` (or cybpe's), the overflowing windows too."""
    n = len(e.ids)
    probes = sorted({0, 1, n // 2, max(n - 1, 0), n, n + 1})
    out = {
        "ids": e.ids, "type_ids": e.type_ids, "tokens": e.tokens, "offsets": [tuple(o) for o in e.offsets],
        "word_ids": e.word_ids, "sequence_ids": e.sequence_ids, "n_sequences": e.n_sequences,
        "special_tokens_mask": e.special_tokens_mask, "attention_mask": e.attention_mask, "len": len(e),
        "token_to_sequence": [e.token_to_sequence(i) for i in probes],
        "token_to_chars": [e.token_to_chars(i) for i in probes],
        "token_to_word": [e.token_to_word(i) for i in probes],
        "char_to_token": [(e.char_to_token(i), e.char_to_token(i, 1)) for i in probes],
        "char_to_word": [e.char_to_word(i) for i in probes],
        "word_to_tokens": [(e.word_to_tokens(i), e.word_to_tokens(i, 1)) for i in probes],
        "word_to_chars": [e.word_to_chars(i) for i in probes],
    }
    if depth < 3:
        out["overflowing"] = [encoding_fields(o, depth + 1) for o in e.overflowing]
    return out


def both(tok: Any, call: Callable[[Any], Any]) -> tuple[Any, Any]:
    """(unpatched result, patched result) of ``call(tok)`` on the same tokenizer object; an
    exception counts as its type and message. The patch is left as it was found."""
    was = cybpe.compat.transformers_patch.is_patched()

    def run() -> Any:
        try:
            return plain(call(tok))
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # the same error both ways is the same result (a Rust
            return ("raised", type(exc).__name__, str(exc))  # panic is a BaseException)
    cybpe.unpatch_transformers()
    try:
        expected = run()
        cybpe.patch_transformers()
        got = run()
    finally:
        if not was:
            cybpe.unpatch_transformers()
    return expected, got


def accelerated(tok: Any) -> bool:
    """Whether ``tok`` encodes on cybpe while patched."""
    with cybpe.transformers_patched():
        backend = backend_of(tok)
        return backend is not None and backend.accelerated
