"""The ``cybpe`` command line (also ``python -m cybpe``).

Every sub-command reports bad arguments, missing files and unknown names as ONE line on stderr
(``cybpe <command>: error: ...``) with a non-zero exit status, never a traceback; set
``CYBPE_CLI_TRACEBACK=1`` to see the traceback of an unexpected internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from cybpe import errors
from cybpe.api.load import FORMAT_NAMES
from cybpe.cli.common import CliError, load_tokenizer, show_progress

TRACEBACK_ENV = "CYBPE_CLI_TRACEBACK"
COLOURS = ("\x1b[48;5;153m", "\x1b[48;5;223m", "\x1b[48;5;157m", "\x1b[48;5;225m")
RESET = "\x1b[0m"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# -- inputs ------------------------------------------------------------------------------------
def _decode_utf8(data: bytes, source: str, errors: str = "strict") -> str:
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as exc:
        raise CliError(f"{source}: not valid UTF-8 (byte offset {exc.start}; pass --errors replace "
                       f"or --errors ignore to accept it)") from None
    except LookupError:
        raise CliError(f"--errors {errors}: not an error handler (strict, replace, ignore, ...)") from None


def _not_a_file(path: str) -> CliError:
    """The error for an input that is missing or not a regular file (a folder, a device, a FIFO:
    reading /dev/zero would never end, opening a FIFO would wait for a writer)."""
    from cybpe.io.atomic import file_kind

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return CliError(f"{path}: no such file")
    return CliError(f"{path}: not a regular file (it is {file_kind(mode)}; pipe a stream into stdin as '-')")


def _read_file(path: str, errors: str = "strict") -> str:
    """A whole file's text (plain or gzip/xz/bzip2/zstd)."""
    from cybpe.io.readers import read_bytes

    if not Path(path).is_file():
        raise _not_a_file(path)
    return _decode_utf8(read_bytes(path), path, errors)  # CorpusError names damaged data


def _check_stdin() -> None:
    if sys.stdin is None or sys.stdin.isatty():
        raise CliError("no input: give --text, file names, or pipe text into stdin")


def _read_stdin(errors: str = "strict") -> str:
    _check_stdin()
    return _decode_utf8(sys.stdin.buffer.read(), "stdin", errors)


def _sources(args) -> list[str]:
    """The files to read ('-' = stdin), after checking them; --text excludes files."""
    if args.text is not None and args.files:
        raise CliError("give either --text or files, not both")
    sources = list(args.files) or ["-"]
    for f in sources:
        if f == "-":
            _check_stdin()
        elif not Path(f).is_file():
            raise _not_a_file(f)
    return sources


def _inputs(args) -> list[tuple[str, str]]:
    """(label, text) for --text, each file (``-`` is stdin), or stdin alone."""
    errors = getattr(args, "errors", "strict")
    if args.text is not None:
        if args.files:
            raise CliError("give either --text or files, not both")
        return [("text", args.text)]
    if not args.files:
        return [("stdin", _read_stdin(errors))]
    return [(f, _read_stdin(errors) if f == "-" else _read_file(f, errors)) for f in args.files]


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


# -- commands ----------------------------------------------------------------------------------
def cmd_train(args) -> int:
    from cybpe.training.corpus import files
    from cybpe.api.train import train

    params = _parse_params(args.param)
    _check_output_folder(args.output)
    corpus: Any
    sample = None
    if args.balanced is not None:
        corpus, sample = _balanced_corpus(args)
    elif args.index or args.max_repeat is not None or args.languages:
        raise CliError("--index, --max-repeat and --languages go with --balanced")
    elif args.counts:
        from cybpe.training.counts import ChunkCounts

        if args.inputs:
            raise CliError("give either --counts or corpus files, not both")
        corpus = ChunkCounts.load(args.counts)
    else:
        corpus = []
        for item in args.inputs or ["-"]:
            if item == "-":  # stdin streams in blocks like a file, never read whole
                _check_stdin()
                corpus.append(Path("-"))
                continue
            for p in files(item):
                if isinstance(p, Path) and not p.is_file():
                    raise _not_a_file(str(p))
                corpus.append(p)
    tok = train(corpus, args.vocab_size, args.pretokenizer, args.special, min_frequency=args.min_frequency,
                workers=args.workers, pretokenizer_params=params, progress=show_progress(args),
                errors=args.errors, superword_from=args.superword_from)
    if sample is not None:
        tok.metadata["training_mix"] = sample.mix()
        tok.metadata["training"]["balanced"] = {
            "corpus": args.inputs[0], "per_language_bytes": sample.per_language, "max_repeat": sample.max_repeat,
            "available_bytes": sample.available, "taken_bytes": sample.unique, "sampled_bytes": sample.sampled}
    tok.save(args.output)
    report = tok.metadata["training"]
    if args.json:
        print(json.dumps({"output": args.output, "n_vocab": tok.n_vocab, "n_merges": report["n_merges"],
                          "stop_reason": report["stop_reason"], "counting_seconds": report["counting_seconds"],
                          "merging_seconds": report["merging_seconds"]}))
    elif not args.quiet:
        print(f"wrote {args.output}: n_vocab={tok.n_vocab}, {report['n_merges']} merges, "
              f"stop={report['stop_reason']}, counting {report['counting_seconds']} s, "
              f"merging {report['merging_seconds']} s", file=sys.stderr)
    return 0


def _balanced_corpus(args) -> tuple[list[str], Any]:
    """``--balanced MB``: the language-balanced sample of the one corpus file (its documents.tsv
    index beside it, or --index), its table of bytes per language on stderr."""
    from cybpe.training.balance import balanced_sample

    if args.counts:
        raise CliError("--balanced samples a corpus file; it does not go with --counts")
    if len(args.inputs) != 1 or args.inputs[0] == "-" or not Path(args.inputs[0]).is_file():
        raise CliError("--balanced takes one corpus file (with a documents.tsv index beside it, or --index)")
    if not args.balanced > 0:
        raise CliError(f"--balanced must be a number of MB > 0, not {args.balanced}")
    if args.index and not Path(args.index).is_file():
        raise _not_a_file(args.index)
    languages = [l.strip() for l in args.languages.split(",") if l.strip()] if args.languages else None
    sample = balanced_sample(Path(args.inputs[0]), int(args.balanced * 1_000_000),
                             index=Path(args.index) if args.index else None, languages=languages,
                             max_repeat=4.0 if args.max_repeat is None else args.max_repeat)
    if not args.quiet and not args.json:
        print(f"balanced sample of {args.inputs[0]} ({args.balanced:g} MB per language, small languages "
              f"repeated up to {sample.max_repeat:g}x):\n{sample.table()}", file=sys.stderr)
    corpus = [text for texts in sample.texts.values() for text in texts]
    if not corpus:
        raise CliError("the balanced sample is empty: no document of the chosen languages in the index")
    return corpus, sample


def _special_args(args) -> dict[str, Any]:
    """--allow-special / --special-as-text as encode() keywords (default: a special-token string
    in the text is an error)."""
    if args.allow_special and args.special_as_text:
        raise CliError("give either --allow-special or --special-as-text, not both")
    if args.allow_special:
        return {"allowed_special": "all"}
    if args.special_as_text:
        return {"disallowed_special": ()}
    return {}


def cmd_encode(args) -> int:
    import numpy as np

    tok = load_tokenizer(args.tokenizer, args.pretokenizer)
    specials = _special_args(args)
    output = args.output or args.npy
    if args.output and args.npy:
        raise CliError("give either --output or --npy, not both")
    if output is not None:
        from cybpe.api.encode_files import IdWriter, eot_id, encode_files, output_dtype

        _check_output_folder(output)
        if args.npy and not output.endswith(".npy"):
            raise CliError(f"--npy {output}: the name must end in .npy (or use --output)")
        if args.text is not None:
            if args.files:
                raise CliError("give either --text or files, not both")
            dtype = output_dtype(tok, args.dtype)
            end = eot_id(tok, _eot_arg(args.eot))
            writer = IdWriter(output, dtype)
            try:
                writer.write(tok.encode_to_numpy(args.text, **specials))
                if end is not None:
                    writer.write(np.array([end]))
                writer.commit()
            except BaseException:
                writer.abort()
                raise
            tokens = writer.count
        else:
            result = encode_files(tok, _sources(args), output, dtype=args.dtype, eot=_eot_arg(args.eot),
                                  errors=args.errors, workers=args.workers, progress=show_progress(args),
                                  **specials)
            tokens = result.tokens
        if not args.quiet:
            print(f"wrote {output}: {tokens:,} tokens ({args.dtype})", file=sys.stderr)
        return 0
    if args.eot is not None:
        raise CliError("--eot needs --output (JSON lines hold one input each)")
    for _, text in _inputs(args):
        sys.stdout.write(json.dumps(tok.encode_to_numpy(text, **specials).tolist()) + "\n")
    return 0


def _eot_arg(value: Optional[str]) -> Any:
    return None if value is None else (True if value == "" else value)


def cmd_count(args) -> int:
    tok = load_tokenizer(args.tokenizer, args.pretokenizer)
    if args.text is not None:
        if args.files:
            raise CliError("give either --text or files, not both")
        counts = [("text", tok.count(args.text))]
    else:  # files stream in blocks (cut where the pieces cannot change), never read whole
        from cybpe.training.corpus import read_blocks

        split = tok.pretokenizer.split
        counts = [(f if f != "-" else "stdin",
                   sum(tok.count(block) for block in read_blocks(f, split, args.errors)))
                  for f in _sources(args)]
    total = sum(n for _, n in counts)
    if args.json:
        print(json.dumps({"inputs": [{"source": label, "tokens": n} for label, n in counts], "total": total}))
        return 0
    if len(counts) == 1:
        print(counts[0][1])
        return 0
    for label, n in counts:
        print(f"{n}\t{label}")
    print(f"{total}\ttotal")
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
    lines = [args.ids] if args.ids is not None else _read_stdin(args.errors).splitlines()
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
    from cybpe.report.tables import text_table

    rows = [[i["name"], i["description"], i["distribution"] or f"({i['plugin']})", i["version"] or "–"]
            for i in infos]
    print(text_table(["name", "description", "distribution", "version"], rows, markdown=False, numeric=False))
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


def _check_output_folder(path: str) -> None:
    parent = Path(path).resolve().parent
    if not parent.is_dir():
        raise CliError(f"{path}: the folder {parent} does not exist")


def cmd_convert(args) -> int:
    from cybpe.api.load import output_format, save

    _check_output_folder(args.output)
    tok = load_tokenizer(args.input, args.pretokenizer)
    try:
        target = output_format(args.output, args.to)
    except errors.InvalidParameterError as exc:
        raise CliError(f"{exc} (give --to)") from None
    save(tok, args.output, format=target.name)
    print(f"wrote {args.output} ({target.name}, n_vocab={tok.n_vocab}, pre-tokenizer {tok.pretokenizer.name})",
          file=sys.stderr)
    return 0


def cmd_bpb(args) -> int:
    from cybpe.report.metrics import bits_per_byte, bytes_per_token

    if (args.bytes_per_token is None) == (args.tokenizer is None):
        raise CliError("give either --bytes-per-token, or --tokenizer with the evaluation text")
    if args.tokenizer is not None:
        if args.text is not None and "\n" not in args.text and Path(args.text).is_file():
            raise CliError(f"--text is the text itself (as in every command); to measure the file "
                           f"{args.text}, give it as an argument: cybpe bpb ... {args.text}")
        if args.text is None and not args.files:
            raise CliError("--tokenizer needs the evaluation text: files, or --text TEXT")
        text = "".join(t for _, t in _inputs(args))
        width = bytes_per_token(load_tokenizer(args.tokenizer, args.pretokenizer), text)
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
    p.add_argument("files", nargs="*", help="UTF-8 files, plain or .gz/.xz/.bz2/.zst; '-' or nothing reads stdin")
    _add_errors(p)


def _add_errors(p: argparse.ArgumentParser) -> None:
    p.add_argument("--errors", default="strict", metavar="HANDLER",
                   help="invalid UTF-8 in the input: strict (stop with an error), replace (U+FFFD) or ignore")


def _add_special_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-special", action="store_true",
                   help="encode special-token strings as special tokens (default: such a string is an error)")
    p.add_argument("--special-as-text", action="store_true",
                   help="encode special-token strings as ordinary text")


def _add_tokenizer(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("-t", "--tokenizer", required=required,
                   help="a cybpe .json, a .tiktoken file, a tokenizer.json, or a GPT-2 encoder.json / folder")
    p.add_argument("--pretokenizer", default=None,
                   help="pre-tokenizer to use instead of the file's (required for unknown .tiktoken names)")


def _version_line() -> str:
    """``cybpe 0.1.0 (Unicode 18.0.0, regex 2026.11.19, Python 3.11.7)``."""
    import platform

    import regex

    from cybpe import __version__, unicode_version
    return f"cybpe {__version__} (Unicode {unicode_version}, regex {regex.__version__}, Python {platform.python_version()})"


def build_parser() -> argparse.ArgumentParser:
    from cybpe.cli.counts import add_counts_parser
    from cybpe.cli.bench import add_bench_arguments

    parser = _Parser(prog="cybpe", description="Fast, exact byte-level BPE: train, encode, compare pre-tokenizers.")
    parser.add_argument("--version", action="version", version=_version_line())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("train", help="train a tokenizer on files, globs or stdin",
                       description="Train a byte-level BPE tokenizer and save it as cybpe JSON.")
    p.add_argument("inputs", nargs="*", help="files, folders, globs or URLs, compressed or not ('-' or nothing: stdin)")
    p.add_argument("--counts", metavar="FILE", default=None, help="train from a chunk-counts file (cybpe counts make)")
    p.add_argument("--vocab-size", type=int, required=True, help="256 bytes + merges + special tokens")
    p.add_argument("--pretokenizer", default="cl100k", help="registered name (see: cybpe pretokenizers)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="pre-tokenizer parameter")
    p.add_argument("--special", action="append", default=[], metavar="TOKEN", help="a special token (repeatable)")
    p.add_argument("--min-frequency", type=int, default=0, help="stop when the best pair is rarer")
    p.add_argument("--workers", type=int, default=None, help="processes counting the corpus")
    p.add_argument("-o", "--output", required=True, help="where to write the tokenizer (.json)")
    p.add_argument("--superword-from", type=int, default=None, metavar="N",
                   help="SuperBPE: after N tokens, merge across words too (e.g. 3/4 of --vocab-size)")
    p.add_argument("--balanced", type=float, default=None, metavar="MB",
                   help="train on a language-balanced sample of the one corpus file: MB (10^6 bytes) of "
                        "whole documents per language, languages with less repeated up to --max-repeat "
                        "times; needs the corpus's documents.tsv(.xz) index (offset, bytes, lang)")
    p.add_argument("--max-repeat", type=float, default=None, metavar="X",
                   help="with --balanced: the most a small language's text is repeated (default 4)")
    p.add_argument("--index", default=None, metavar="FILE", help="with --balanced: the document index")
    p.add_argument("--languages", default=None, help="with --balanced: comma-separated languages to keep")
    _add_errors(p)
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object on stdout")
    p.add_argument("--progress", action="store_true", help="progress bars even when stderr is not a terminal")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars, no summary line")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("encode", help="encode to JSON lines, or a dataset to a flat .bin / .npy",
                       description="Encode each input (text, file, stdin) to one JSON line of ids, or, with "
                                   "--output, all inputs to one flat array of ids on disk (each file one "
                                   "document, streamed in bounded memory on all cores). Special-token strings "
                                   "in the text are an error unless --allow-special or --special-as-text.")
    _add_tokenizer(p)
    _add_text_inputs(p)
    _add_special_flags(p)
    p.add_argument("-o", "--output", metavar="FILE", default=None,
                   help="write the ids of all inputs, concatenated: raw little-endian binary, or .npy by name")
    p.add_argument("--dtype", choices=["uint16", "uint32"], default="uint32",
                   help="id type of --output (uint16 refuses a vocabulary with ids past 65535)")
    p.add_argument("--eot", nargs="?", const="", default=None, metavar="TOKEN",
                   help="append <|endoftext|> (or TOKEN) after each input file")
    p.add_argument("--npy", metavar="FILE", help="same as --output FILE.npy")
    p.add_argument("--workers", type=int, default=None, help="encoding threads (default: all cores)")
    p.add_argument("--progress", action="store_true", help="progress (MB/s, tokens) even when stderr is not a terminal")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress, no summary line")
    p.set_defaults(func=cmd_encode)

    p = sub.add_parser("count", help="print token counts",
                       description="Count tokens (special-token strings count as ordinary text).")
    _add_tokenizer(p)
    _add_text_inputs(p)
    p.add_argument("--json", action="store_true", help="one JSON object: per-input counts and the total")
    p.set_defaults(func=cmd_count)

    add_counts_parser(sub)

    p = sub.add_parser("decode", help="decode JSON id lists or a .npy file to text",
                       description="Decode ids (a JSON list argument, JSON lines on stdin, or --npy) to raw bytes on stdout.")
    _add_tokenizer(p)
    p.add_argument("ids", nargs="?", default=None, help="a JSON list of ids (default: JSON lines on stdin)")
    p.add_argument("--npy", metavar="FILE", help="read the ids from a .npy array")
    _add_errors(p)
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
    p.add_argument("--to", choices=FORMAT_NAMES, default=None)
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
    _add_text_inputs(p)  # the evaluation text, as for every command: --text TEXT, files or stdin
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


BROKEN_PIPE_STATUS = 141  # 128 + SIGPIPE, what a shell reports for a tool its pipe closed on


def _cli_terms(message: str) -> str:
    """A library error's hint in the command line's own terms (flags, not Python keywords)."""
    message = re.sub(r"Pass allowed_special=\{.*\} \(or 'all'\) to encode it as a special token, or "
                     r"disallowed_special=\(\) to encode it as ordinary text\.",
                     "Pass --allow-special to encode it as a special token, or --special-as-text to "
                     "encode it as ordinary text.", message)
    return message.replace("pass errors='replace' or 'ignore' to accept it",
                           "pass --errors replace or --errors ignore to accept it")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as typed, for reports that record it
    prefix = f"cybpe {args.command}: error:"
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print(f"cybpe {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly, as SIGPIPE would
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE_STATUS
    except (CliError, errors.CybpeError, OSError, ValueError, LookupError, MemoryError) as exc:
        print(f"{prefix} {_cli_terms(_one_line(exc))}", file=sys.stderr)
        return 1
    except Exception as exc:  # the promise: never a traceback unless asked for
        if os.environ.get(TRACEBACK_ENV, "") not in ("", "0"):
            raise
        print(f"{prefix} internal error: {type(exc).__name__}: {_one_line(exc)} "
              f"(set {TRACEBACK_ENV}=1 for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
