"""The ``cybpe`` command line (also ``python -m cybpe``).

Every sub-command reports bad arguments, missing files and unknown names as ONE line on stderr
(``cybpe <command>: error: ...``) with a non-zero exit status, never a traceback; set
``CYBPE_CLI_TRACEBACK=1`` to see the traceback of an unexpected internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from cybpe import errors

TRACEBACK_ENV = "CYBPE_CLI_TRACEBACK"
COLOURS = ("\x1b[48;5;153m", "\x1b[48;5;223m", "\x1b[48;5;157m", "\x1b[48;5;225m")
RESET = "\x1b[0m"


class CliError(Exception):
    """A user error found by the command line itself (printed as one line)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# -- inputs ------------------------------------------------------------------------------------
def _decode_utf8(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(f"{source}: not valid UTF-8 (byte offset {exc.start})") from None


def _read_file(path: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise CliError(f"{path}: no such file" if not p.exists() else f"{path}: not a file")
    return _decode_utf8(p.read_bytes(), path)


def _read_stdin() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        raise CliError("no input: give --text, file names, or pipe text into stdin")
    return _decode_utf8(sys.stdin.buffer.read(), "stdin")


def _inputs(args) -> list[tuple[str, str]]:
    """(label, text) for --text, each file (``-`` is stdin), or stdin alone."""
    if args.text is not None:
        if args.files:
            raise CliError("give either --text or files, not both")
        return [("text", args.text)]
    if not args.files:
        return [("stdin", _read_stdin())]
    return [(f, _read_stdin() if f == "-" else _read_file(f)) for f in args.files]


def load_tokenizer(path: str, pretokenizer: Optional[str] = None):
    """A tokenizer from any supported file: cybpe JSON, ``.tiktoken``, HF ``tokenizer.json``, or
    GPT-2 ``encoder.json`` (+ ``vocab.bpe`` beside it) or a folder holding either of the last two.
    ``pretokenizer`` overrides the one the file implies (needed for unknown ``.tiktoken`` names)."""
    from cybpe._tokenizer import Tokenizer

    p = Path(path)
    if not p.exists():
        raise CliError(f"{path}: no such file or folder")
    if p.is_dir():
        if (p / "tokenizer.json").is_file():
            p = p / "tokenizer.json"
        elif (p / "encoder.json").is_file():
            p = p / "encoder.json"
        else:
            raise CliError(f"{path}: a folder without tokenizer.json or encoder.json + vocab.bpe")
    if p.suffix == ".tiktoken":
        return Tokenizer.from_tiktoken(p, pretokenizer)
    if p.name == "encoder.json" or p.name.endswith(".encoder.json"):
        bpe = p.with_name(p.name.replace("encoder.json", "vocab.bpe"))
        if not bpe.is_file():
            raise CliError(f"{bpe}: missing (a GPT-2 encoder.json needs its vocab.bpe beside it)")
        tok = Tokenizer.from_gpt2(p, bpe)
    else:
        with open(p, "rb") as f:
            head = f.read(4096)
        tok = Tokenizer.load(p) if b'"cybpe-tokenizer"' in head or b"{" not in head else Tokenizer.from_hf(p)
    if pretokenizer is not None and pretokenizer != tok.pretokenizer.name:
        tok = Tokenizer(tok.vocab, pretokenizer, name=tok.name, metadata=tok.metadata,
                        normalizer=tok.normalizer)
    return tok


def _parse_params(pairs: list[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(f"--param {pair!r}: expected key=value")
        if value.lstrip("-").isdigit():
            params[key] = int(value)
        elif value.lower() in ("true", "false"):
            params[key] = value.lower() == "true"
        else:
            params[key] = value
    return params


def _show_progress(args) -> bool:
    if getattr(args, "quiet", False):
        return False
    return True if getattr(args, "progress", False) else sys.stderr.isatty()


# -- commands ----------------------------------------------------------------------------------
def cmd_train(args) -> int:
    from cybpe.training.corpus import files
    from cybpe._train import train

    params = _parse_params(args.param)
    _check_output_folder(args.output)
    if args.inputs and args.inputs != ["-"]:
        corpus: list = files(*args.inputs)
        for p in corpus:
            if not p.is_file():
                raise CliError(f"{p}: no such file")
    else:
        corpus = [_read_stdin()]
    tok = train(corpus, args.vocab_size, args.pretokenizer, args.special, min_frequency=args.min_frequency,
                workers=args.workers, pretokenizer_params=params, progress=_show_progress(args))
    tok.save(args.output)
    report = tok.metadata["training"]
    if not args.quiet:
        print(f"wrote {args.output}: n_vocab={tok.n_vocab}, {report['n_merges']} merges, "
              f"stop={report['stop_reason']}, counting {report['counting_seconds']} s, "
              f"merging {report['merging_seconds']} s", file=sys.stderr)
    return 0


def cmd_encode(args) -> int:
    import numpy as np

    tok = load_tokenizer(args.tokenizer, args.pretokenizer)
    allowed = "all" if args.allow_special else frozenset()
    arrays = [tok.encode_to_numpy(text, allowed_special=allowed) for _, text in _inputs(args)]
    if args.npy:
        np.save(args.npy, np.concatenate(arrays).astype(np.uint32) if arrays else np.zeros(0, np.uint32))
        return 0
    for ids in arrays:
        sys.stdout.write(json.dumps(ids.tolist()) + "\n")
    return 0


def cmd_count(args) -> int:
    tok = load_tokenizer(args.tokenizer, args.pretokenizer)
    inputs = _inputs(args)
    counts = [(label, tok.count(text)) for label, text in inputs]
    if len(counts) == 1:
        print(counts[0][1])
        return 0
    for label, n in counts:
        print(f"{n}\t{label}")
    print(f"{sum(n for _, n in counts)}\ttotal")
    return 0


def _id_lists(args) -> list[list[int]]:
    import numpy as np

    if args.npy:
        if not Path(args.npy).is_file():
            raise CliError(f"{args.npy}: no such file")
        array = np.load(args.npy, allow_pickle=False)
        if array.ndim != 1 or array.dtype.kind not in "iu":
            raise CliError(f"{args.npy}: expected a 1-D integer array, got {array.dtype} with shape {array.shape}")
        return [array.tolist()]
    lines = [args.ids] if args.ids is not None else _read_stdin().splitlines()
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            ids = json.loads(line)
        except ValueError:
            ids = None
        if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise CliError(f"line {number}: expected a JSON list of integer ids, got {line[:40]!r}")
        out.append(ids)
    return out


def cmd_decode(args) -> int:
    tok = load_tokenizer(args.tokenizer, args.pretokenizer)
    out = sys.stdout.buffer
    for ids in _id_lists(args):
        out.write(tok.decode_bytes(ids))
    out.flush()
    return 0


def cmd_pretokenizers(args) -> int:
    from cybpe.pretokenize.registry import list_pretokenizers

    infos = list_pretokenizers()
    if args.json:
        print(json.dumps(infos, indent=2, ensure_ascii=False))
        return 0
    from cybpe.report.variants import _table

    rows = [[i["name"], i["description"], i["distribution"] or f"({i['plugin']})", i["version"] or "–"]
            for i in infos]
    print(_table(["name", "description", "distribution", "version"], rows, markdown=False, numeric=False))
    return 0


def _use_colour(choice: str) -> bool:
    if choice != "auto":
        return choice == "always"
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _show_bytes(b: bytes) -> str:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b.decode("utf-8", "backslashreplace")


def _painted(parts: list[str]) -> str:
    return "".join(COLOURS[k % len(COLOURS)] + p.replace("\n", "\\n") + RESET for k, p in enumerate(parts))


def cmd_inspect(args) -> int:
    from cybpe.pretokenize.registry import get_pretokenizer

    tok = load_tokenizer(args.tokenizer, args.pretokenizer) if args.tokenizer else None
    pre = tok.pretokenizer if tok is not None else get_pretokenizer(args.pretokenizer or "cl100k")
    colour = _use_colour(args.color)
    for label, text in _inputs(args):
        pieces = pre.split(text)
        print(f"{label}: {len(text.encode('utf-8'))} bytes, {len(pieces)} pieces ({pre.name})"
              + (f", {tok.count(text)} tokens" if tok is not None else ""))
        print("pieces: " + (_painted(pieces) if colour else json.dumps(pieces, ensure_ascii=False)))
        if tok is not None:
            ids = tok.encode_ordinary(text)
            shown = [_show_bytes(tok.decode_single_token_bytes(i)) for i in ids]
            print("tokens: " + (_painted(shown) if colour else json.dumps(shown, ensure_ascii=False)))
            print("ids:    " + json.dumps(ids))
    return 0


CONVERT_TARGETS = ("native", "tiktoken", "hf", "gpt2")


def _convert_target(output: str, given: Optional[str]) -> str:
    if given:
        return given
    p = Path(output)
    if p.suffix == ".tiktoken":
        return "tiktoken"
    if p.name.endswith("tokenizer.json"):
        return "hf"
    if p.suffix == ".json":
        return "native"
    if p.is_dir() or not p.suffix:
        return "gpt2"
    raise CliError(f"cannot tell the format from {output!r}; give --to ({', '.join(CONVERT_TARGETS)})")


def _check_output_folder(path: str) -> None:
    parent = Path(path).resolve().parent
    if not parent.is_dir():
        raise CliError(f"{path}: the folder {parent} does not exist")


def cmd_convert(args) -> int:
    _check_output_folder(args.output)
    tok = load_tokenizer(args.input, args.pretokenizer)
    target = _convert_target(args.output, args.to)
    out = Path(args.output)
    if target == "tiktoken":
        tok.to_tiktoken(out)
    elif target == "hf":
        tok.to_hf(out / "tokenizer.json" if out.is_dir() else out)
    elif target == "gpt2":
        if out.suffix == ".json" and out.name.endswith("encoder.json"):
            tok.to_gpt2(out, out.with_name(out.name.replace("encoder.json", "vocab.bpe")))
        else:
            out.mkdir(parents=True, exist_ok=True)
            tok.to_gpt2(out / "encoder.json", out / "vocab.bpe")
    else:
        tok.save(out)
    print(f"wrote {args.output} ({target}, n_vocab={tok.n_vocab}, pre-tokenizer {tok.pretokenizer.name})",
          file=sys.stderr)
    return 0


def cmd_bpb(args) -> int:
    from cybpe.report.metrics import bits_per_byte, bytes_per_token

    if (args.bytes_per_token is None) == (args.tokenizer is None):
        raise CliError("give either --bytes-per-token, or --tokenizer with --text")
    if args.tokenizer is not None:
        if args.text is None:
            raise CliError("--tokenizer needs --text FILE (the evaluation text)")
        width = bytes_per_token(load_tokenizer(args.tokenizer, args.pretokenizer), _read_file(args.text))
    else:
        width = args.bytes_per_token
    value = bits_per_byte(args.loss, width)
    if args.json:
        print(json.dumps({"loss_nats_per_token": args.loss, "bytes_per_token": width, "bits_per_byte": value}))
    else:
        print(f"{value:.6f}")
    return 0


def cmd_bench(args) -> int:
    from cybpe.cli.bench import run_bench

    return run_bench(args)


# -- parser ------------------------------------------------------------------------------------
def _add_text_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--text", default=None, help="the text itself (instead of files or stdin)")
    p.add_argument("files", nargs="*", help="UTF-8 files; '-' or nothing reads stdin")


def _add_tokenizer(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("-t", "--tokenizer", required=required,
                   help="a cybpe .json, a .tiktoken file, a tokenizer.json, or a GPT-2 encoder.json / folder")
    p.add_argument("--pretokenizer", default=None,
                   help="pre-tokenizer to use instead of the file's (required for unknown .tiktoken names)")


def build_parser() -> argparse.ArgumentParser:
    from cybpe.cli.bench import add_bench_arguments

    parser = _Parser(prog="cybpe", description="Fast, exact byte-level BPE: train, encode, compare pre-tokenizers.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("train", help="train a tokenizer on files, globs or stdin",
                       description="Train a byte-level BPE tokenizer and save it as cybpe JSON.")
    p.add_argument("inputs", nargs="*", help="files or glob patterns ('-' or nothing: stdin)")
    p.add_argument("--vocab-size", type=int, required=True, help="256 bytes + merges + special tokens")
    p.add_argument("--pretokenizer", default="cl100k", help="registered name (see: cybpe pretokenizers)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="pre-tokenizer parameter")
    p.add_argument("--special", action="append", default=[], metavar="TOKEN", help="a special token (repeatable)")
    p.add_argument("--min-frequency", type=int, default=0, help="stop when the best pair is rarer")
    p.add_argument("--workers", type=int, default=None, help="processes counting the corpus")
    p.add_argument("-o", "--output", required=True, help="where to write the tokenizer (.json)")
    p.add_argument("--progress", action="store_true", help="progress bars even when stderr is not a terminal")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars, no summary line")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("encode", help="print ids as JSON lines (or --npy FILE)",
                       description="Encode each input (text, file, stdin) to one JSON line of ids.")
    _add_tokenizer(p)
    _add_text_inputs(p)
    p.add_argument("--npy", metavar="FILE", help="write the ids of all inputs, concatenated, as a uint32 .npy")
    p.add_argument("--allow-special", action="store_true", help="encode special-token strings as specials")
    p.set_defaults(func=cmd_encode)

    p = sub.add_parser("count", help="print token counts", description="Count tokens (specials as text).")
    _add_tokenizer(p)
    _add_text_inputs(p)
    p.set_defaults(func=cmd_count)

    p = sub.add_parser("decode", help="decode JSON id lists or a .npy file to text",
                       description="Decode ids (a JSON list argument, JSON lines on stdin, or --npy) to raw bytes on stdout.")
    _add_tokenizer(p)
    p.add_argument("ids", nargs="?", default=None, help="a JSON list of ids (default: JSON lines on stdin)")
    p.add_argument("--npy", metavar="FILE", help="read the ids from a .npy array")
    p.set_defaults(func=cmd_decode)

    p = sub.add_parser("pretokenizers", help="list the registered pre-tokenizers",
                       description="Name, description, providing distribution and version of every pre-tokenizer.")
    p.add_argument("--json", action="store_true", help="machine-readable, with parameters")
    p.set_defaults(func=cmd_pretokenizers)

    p = sub.add_parser("inspect", help="show a text's pieces and tokens",
                       description="Show the pre-tokenizer pieces (and tokens, with -t) of a text; "
                                   "coloured on a terminal, JSON lists otherwise.")
    _add_tokenizer(p, required=False)
    _add_text_inputs(p)
    p.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("convert", help="convert between tokenizer file formats",
                       description="Convert between cybpe JSON, .tiktoken, tokenizer.json and GPT-2 files. "
                                   "The input format is detected; the output format comes from --to or the "
                                   "output name (.tiktoken, *tokenizer.json, other .json = cybpe, folder = GPT-2).")
    p.add_argument("input", help="tokenizer file or folder")
    p.add_argument("output", help="output file (or folder for GPT-2)")
    p.add_argument("--to", choices=CONVERT_TARGETS, default=None)
    p.add_argument("--pretokenizer", default=None,
                   help="pre-tokenizer of the input (for .tiktoken and GPT-2 files that do not record it)")
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("bpb", help="convert a loss in nats/token to bits/byte",
                       description="bits/byte = loss_nats_per_token / (ln 2 * bytes_per_token). Give "
                                   "--bytes-per-token, or a tokenizer and the evaluation text to measure it.")
    p.add_argument("--loss", type=float, required=True, help="mean cross-entropy in nats per token")
    p.add_argument("--bytes-per-token", type=float, default=None)
    p.add_argument("-t", "--tokenizer", default=None)
    p.add_argument("--pretokenizer", default=None, help=argparse.SUPPRESS)
    p.add_argument("--text", default=None, metavar="FILE", help="evaluation text for bytes/token")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bpb)

    p = sub.add_parser("bench", help="compare pre-tokenizers across languages",
                       description="The pre-tokenizer comparison report (pieces, tokens, premium, Gini, speed).",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_bench_arguments(p)
    p.set_defaults(func=cmd_bench)
    return parser


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None:
        message = f"{exc.filename}: {exc.strerror or exc}"
    elif isinstance(exc, KeyError) and exc.args:
        message = str(exc.args[0])
    else:
        message = str(exc) or type(exc).__name__
    return " ".join(message.split())


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    prefix = f"cybpe {args.command}: error:"
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print(f"cybpe {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (CliError, errors.CybpeError, OSError, ValueError, LookupError, MemoryError) as exc:
        print(f"{prefix} {_one_line(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:  # the promise: never a traceback unless asked for
        if os.environ.get(TRACEBACK_ENV, "") not in ("", "0"):
            raise
        print(f"{prefix} internal error: {type(exc).__name__}: {_one_line(exc)} "
              f"(set {TRACEBACK_ENV}=1 for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
