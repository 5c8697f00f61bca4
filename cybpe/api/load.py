"""The one table of tokenizer file formats: what each looks like on disk, how to read and write it.

``cybpe.load(path)`` and ``cybpe.save(tokenizer, path)`` (and the command line's ``encode``,
``convert`` and friends) go through :data:`FORMATS`; adding a format means adding one row here
and its reader/writer in :mod:`cybpe.formats`.

Reading: the first row whose ``detect`` accepts the path wins (a folder is looked into). Writing:
the format is named, or guessed from the output path by each row's ``output_matches``.

Thread safety: the table is immutable; ``load`` and ``save`` share no state between calls (two
threads saving to the same path each write a whole file, and the last rename wins).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Union

from cybpe.api.tokenizer import Tokenizer
from cybpe.pretokenize.pretokenizer import PreTokenizer
from cybpe.errors import FormatError, InvalidParameterError, ParameterTypeError, describe
from cybpe.io.atomic import regular_file

PathLike = Union[str, os.PathLike]


@dataclass(frozen=True)
class TokenizerFormat:
    """One on-disk format: ``detect`` says whether an existing file or folder is one;
    ``output_matches`` whether an output path names one; ``read`` / ``write`` do the work."""

    name: str
    description: str
    detect: Callable[[Path], bool]
    output_matches: Callable[[Path], bool]
    read: Callable[[Path], Tokenizer]
    write: Callable[[Tokenizer, Path], None]


def _head(path: Path, size: int = 4096) -> bytes:
    with open(path, "rb") as f:
        return f.read(size)


def _gpt2_pair(path: Path) -> tuple[Path, Path]:
    """(encoder.json, vocab.bpe) for a path naming either file, or a folder holding both."""
    if path.is_dir() or not path.suffix:
        return path / "encoder.json", path / "vocab.bpe"
    if path.name.endswith("encoder.json"):
        return path, path.with_name(path.name[: -len("encoder.json")] + "vocab.bpe")
    return path.with_name(path.name[: -len("vocab.bpe")] + "encoder.json"), path


def _read_gpt2(path: Path) -> Tokenizer:
    encoder_json, vocab_bpe = _gpt2_pair(path)
    if not vocab_bpe.is_file():
        raise FormatError(f"{vocab_bpe}: missing (a GPT-2 encoder.json needs its vocab.bpe beside it)")
    return Tokenizer.from_gpt2(encoder_json, vocab_bpe)


def _write_gpt2(tokenizer: Tokenizer, path: Path) -> None:
    encoder_json, vocab_bpe = _gpt2_pair(path)
    created = not path.exists() and not path.suffix
    if created:
        path.mkdir(parents=True)
    try:
        tokenizer.to_gpt2(encoder_json, vocab_bpe)
    except BaseException:
        if created:  # a refused export leaves nothing behind, not even the folder
            path.rmdir()
        raise


def _write_hf(tokenizer: Tokenizer, path: Path) -> None:
    tokenizer.to_hf(path / "tokenizer.json" if path.is_dir() else path)


def _is_native(path: Path) -> bool:
    return path.is_file() and path.suffix == ".json" and b'"cybpe-tokenizer"' in _head(path)


def _is_gpt2(path: Path) -> bool:
    if path.is_dir():
        return (path / "encoder.json").is_file() and not (path / "tokenizer.json").is_file()
    return path.name.endswith(("encoder.json", "vocab.bpe"))


#: Every format cybpe reads and writes, in the order files are tried.
FORMATS: tuple[TokenizerFormat, ...] = (
    TokenizerFormat(
        "native", "cybpe's own versioned JSON (Tokenizer.save)",
        detect=_is_native,
        output_matches=lambda p: p.suffix == ".json" and not p.name.endswith(("tokenizer.json", "encoder.json")),
        read=Tokenizer.load,
        write=lambda tok, p: tok.save(p),
    ),
    TokenizerFormat(
        "transformers", "a transformers tokenizer folder (tokenizer.json, tokenizer_config.json, "
        "special_tokens_map.json: roles and added tokens kept)",
        detect=lambda p: p.is_dir() and (p / "tokenizer.json").is_file(),
        output_matches=lambda p: False,  # a folder is GPT-2's by default; name this one
        read=lambda p: Tokenizer.from_pretrained(p),
        write=lambda tok, p: tok.save_pretrained(p),
    ),
    TokenizerFormat(
        "tiktoken", "tiktoken's .tiktoken ranks (base64 token, rank per line)",
        detect=lambda p: p.is_file() and p.suffix == ".tiktoken",
        output_matches=lambda p: p.suffix == ".tiktoken",
        read=lambda p: Tokenizer.from_tiktoken(p),
        write=lambda tok, p: tok.to_tiktoken(p),
    ),
    TokenizerFormat(
        "gpt2", "the original GPT-2 encoder.json + vocab.bpe (a folder, or either file)",
        detect=_is_gpt2,
        output_matches=lambda p: p.name.endswith("encoder.json") or p.is_dir() or not p.suffix,
        read=_read_gpt2,
        write=_write_gpt2,
    ),
    TokenizerFormat(
        "hf", "HF tokenizers' tokenizer.json (byte-level BPE)",
        detect=lambda p: p.is_file() and p.suffix == ".json" and b"{" in _head(p),
        output_matches=lambda p: p.name.endswith("tokenizer.json"),
        read=lambda p: Tokenizer.from_hf(p),
        write=_write_hf,
    ),
)

#: The names of :data:`FORMATS`, for error messages and ``--to`` choices.
FORMAT_NAMES = tuple(f.name for f in FORMATS)


def _path(path: PathLike, argument: str = "path") -> Path:
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise ParameterTypeError(f"{argument} must be a str or os.PathLike, not {type(path).__name__}")
    return Path(path)


def _format(name: str) -> TokenizerFormat:
    if not isinstance(name, str):
        raise ParameterTypeError(f"format must be a str, not {type(name).__name__}")
    for fmt in FORMATS:
        if fmt.name == name:
            return fmt
    raise InvalidParameterError(f"unknown format {describe(name)}; known: {', '.join(FORMAT_NAMES)}")


def format_of(path: PathLike) -> TokenizerFormat:
    """The format of an existing tokenizer file or folder (FormatError when it is missing or
    none fits)."""
    p = _path(path)
    if not p.exists():
        raise FormatError(f"{p}: cannot read: no such file or folder")
    if not p.is_dir():
        regular_file(p)  # FormatError for a FIFO or a device (never opened)
    for fmt in FORMATS:
        if fmt.detect(p):
            return fmt
    if p.is_dir():
        raise FormatError(f"{p}: a folder without tokenizer.json or encoder.json + vocab.bpe")
    raise FormatError(f"{p}: not a tokenizer file cybpe knows ({', '.join(FORMAT_NAMES)})")


def output_format(path: PathLike, format: Optional[str] = None) -> TokenizerFormat:
    """The format named, or the one an output path implies (InvalidParameterError when none)."""
    if format is not None:
        return _format(format)
    p = _path(path)
    for fmt in FORMATS:
        if fmt.output_matches(p):
            return fmt
    raise InvalidParameterError(f"cannot tell the format from {str(p)!r}; name one of {', '.join(FORMAT_NAMES)}")


def load(path: PathLike, *, pretokenizer: Union[str, PreTokenizer, None] = None) -> Tokenizer:
    """A tokenizer from any file cybpe reads (see :data:`FORMATS`): cybpe's JSON, ``.tiktoken``,
    HF ``tokenizer.json``, a transformers folder, GPT-2 ``encoder.json`` + ``vocab.bpe``.

    ``pretokenizer`` replaces the one the file implies (a ``.tiktoken`` file of an encoding cybpe
    does not know needs one)."""
    p = _path(path)
    fmt = format_of(p)
    if fmt.name == "tiktoken" and pretokenizer is not None:
        return Tokenizer.from_tiktoken(p, pretokenizer)
    tokenizer = fmt.read(p)
    if pretokenizer is not None and pretokenizer != tokenizer.pretokenizer.name:
        tokenizer = Tokenizer(tokenizer.vocab, pretokenizer, name=tokenizer.name,
                              metadata=tokenizer.metadata, normalizer=tokenizer.normalizer,
                              non_special_tokens=tokenizer.non_special_tokens,
                              model_max_length=tokenizer.model_max_length, **tokenizer.roles)
    return tokenizer


def save(tokenizer: Tokenizer, path: PathLike, *, format: Optional[str] = None) -> TokenizerFormat:
    """Write ``tokenizer`` as ``format`` (or the one ``path`` implies, see :func:`output_format`);
    an export the target cannot reproduce exactly raises :class:`~cybpe.errors.ExportError` and
    writes nothing. Returns the format written."""
    if not isinstance(tokenizer, Tokenizer):
        raise ParameterTypeError(f"tokenizer must be a cybpe.Tokenizer, not {type(tokenizer).__name__}")
    p = _path(path)
    fmt = output_format(p, format)
    fmt.write(tokenizer, p)
    return fmt
