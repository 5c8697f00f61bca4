"""The ``cybpe`` command line: train, encode, decode, count, list pre-tokenizers, convert."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

from . import errors


def _load_tokenizer(path: str):
    from ._tokenizer import Tokenizer

    p = Path(path)
    if p.suffix == ".tiktoken":
        return Tokenizer.from_tiktoken(p)
    if p.name.endswith("tokenizer.json") or p.name == "tokenizer.json":
        return Tokenizer.from_hf(p)
    if p.is_dir() and (p / "encoder.json").exists():
        return Tokenizer.from_gpt2(p / "encoder.json", p / "vocab.bpe")
    return Tokenizer.load(p)


def _read_inputs(args) -> list[str]:
    if args.text is not None:
        return [args.text]
    if args.files:
        return [Path(f).read_text(encoding="utf-8") for f in args.files]
    return [sys.stdin.read()]


def cmd_train(args) -> int:
    from ._corpus import files
    from ._train import train

    params = dict(kv.split("=", 1) for kv in args.param)
    params = {k: int(v) if v.isdigit() else v for k, v in params.items()}
    corpus = files(*args.inputs) if args.inputs else [sys.stdin.read()]
    tok = train(corpus, args.vocab_size, args.pretokenizer, args.special, min_frequency=args.min_frequency,
                workers=args.workers, pretokenizer_params=params, progress=None if not args.quiet else False)
    tok.save(args.output)
    report = tok.metadata["training"]
    print(f"wrote {args.output}: n_vocab={tok.n_vocab}, {report['n_merges']} merges, "
          f"stop={report['stop_reason']}, counting {report['counting_seconds']} s, "
          f"merging {report['merging_seconds']} s", file=sys.stderr)
    return 0


def cmd_encode(args) -> int:
    tok = _load_tokenizer(args.tokenizer)
    allowed = "all" if args.allow_special else frozenset()
    for text in _read_inputs(args):
        print(json.dumps(tok.encode(text, allowed_special=allowed)))
    return 0


def cmd_count(args) -> int:
    tok = _load_tokenizer(args.tokenizer)
    for text in _read_inputs(args):
        print(tok.count(text))
    return 0


def cmd_decode(args) -> int:
    tok = _load_tokenizer(args.tokenizer)
    source = [args.ids] if args.ids is not None else sys.stdin.read().splitlines()
    for line in source:
        if line.strip():
            sys.stdout.write(tok.decode(json.loads(line)))
    return 0


def cmd_pretokenizers(args) -> int:
    from ._registry import list_pretokenizers

    infos = list_pretokenizers()
    if args.json:
        print(json.dumps(infos, indent=2, ensure_ascii=False))
        return 0
    width = max(len(i["name"]) for i in infos)
    for i in infos:
        origin = f"{i['distribution'] or i['plugin']} {i['version'] or ''}".strip()
        print(f"{i['name']:<{width}}  {origin:<16}  {i['description']}")
    return 0


def cmd_convert(args) -> int:
    tok = _load_tokenizer(args.input)
    out = Path(args.output)
    if args.to == "tiktoken":
        tok.to_tiktoken(out)
    elif args.to == "hf":
        tok.to_hf(out)
    elif args.to == "gpt2":
        out.mkdir(parents=True, exist_ok=True)
        tok.to_gpt2(out / "encoder.json", out / "vocab.bpe")
    else:
        tok.save(out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cybpe", description="Fast, exact byte-level BPE.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train a tokenizer on files (or stdin)")
    p.add_argument("inputs", nargs="*", help="files or glob patterns (default: stdin)")
    p.add_argument("--vocab-size", type=int, required=True)
    p.add_argument("--pretokenizer", default="cl100k")
    p.add_argument("--param", action="append", default=[], help="pre-tokenizer parameter key=value")
    p.add_argument("--special", action="append", default=[], help="a special token (repeatable)")
    p.add_argument("--min-frequency", type=int, default=0)
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("-o", "--output", required=True)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_train)

    for name, func, helptext in [("encode", cmd_encode, "print ids as JSON lines"),
                                 ("count", cmd_count, "print token counts")]:
        p = sub.add_parser(name, help=helptext)
        p.add_argument("-t", "--tokenizer", required=True,
                       help="a cybpe .json, a .tiktoken file, a tokenizer.json or a GPT-2 folder")
        p.add_argument("--text", default=None)
        p.add_argument("files", nargs="*")
        if name == "encode":
            p.add_argument("--allow-special", action="store_true")
        p.set_defaults(func=func)

    p = sub.add_parser("decode", help="decode JSON id lists (argument or stdin lines)")
    p.add_argument("-t", "--tokenizer", required=True)
    p.add_argument("ids", nargs="?", default=None)
    p.set_defaults(func=cmd_decode)

    p = sub.add_parser("pretokenizers", help="list the registered pre-tokenizers")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_pretokenizers)

    p = sub.add_parser("convert", help="convert between formats")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--to", choices=["native", "tiktoken", "hf", "gpt2"], required=True)
    p.set_defaults(func=cmd_convert)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (errors.CybpeError, OSError, json.JSONDecodeError) as exc:
        print(f"cybpe {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
