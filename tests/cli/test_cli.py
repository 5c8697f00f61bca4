"""The command line, end to end through ``python -m cybpe`` subprocesses on the bundled samples."""

from __future__ import annotations

import itertools
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
import regex

from support import UDHR_DIR as UDHR, run_cli as cybpe

BUILTINS = {"gpt2", "cl100k", "o200k", "llama3", "qwen2", "gpt4-digits", "gpt4-digits-rtl", "abugida", "regex"}
# tiktoken's cl100k_base pat_str, written out here so the test does not ask cybpe for it
CL100K = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
          r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
SAMPLE = "Hello, world! 12345 नमस्ते दुनिया — สวัสดีครับ\r\n\tend  "


def test_encode_decode_round_trip_files_and_stdin(trained, tmp_path):
    sample = tmp_path / "sample.txt"
    sample.write_bytes(SAMPLE.encode("utf-8"))  # \r\n kept: the round trip must be byte-exact
    files = cybpe("encode", "-t", trained, sample, UDHR / "hi.txt").stdout.decode().splitlines()
    assert len(files) == 2
    ids_sample, ids_hi = (json.loads(line) for line in files)
    from_stdin = json.loads(cybpe("encode", "-t", trained, input=SAMPLE.encode("utf-8")).stdout)
    assert from_stdin == ids_sample
    assert json.loads(cybpe("encode", "-t", trained, "--text", SAMPLE).stdout) == ids_sample
    assert cybpe("decode", "-t", trained, json.dumps(ids_sample)).stdout == SAMPLE.encode("utf-8")
    lines = (json.dumps(ids_hi) + "\n").encode()
    assert cybpe("decode", "-t", trained, input=lines).stdout == (UDHR / "hi.txt").read_bytes()
    counted = cybpe("count", "-t", trained, UDHR / "hi.txt").stdout.decode()
    assert int(counted) == len(ids_hi)


def test_special_tokens_need_allow_special(trained):
    text = "a<|endoftext|>b"
    bad = cybpe("encode", "-t", trained, "--text", text, check=False)
    assert bad.returncode != 0 and b"<|endoftext|>" in bad.stderr and b"Traceback" not in bad.stderr
    ids = json.loads(cybpe("encode", "-t", trained, "--text", text, "--allow-special").stdout)
    assert json.loads(trained.read_text())["special_tokens"]["<|endoftext|>"] in ids
    assert len(ids) == 3
    assert cybpe("decode", "-t", trained, json.dumps(ids)).stdout == text.encode()


def test_npy_output_and_input(trained, tmp_path):
    out = tmp_path / "ids.npy"
    cybpe("encode", "-t", trained, UDHR / "th.txt", "--npy", out)
    array = np.load(out)
    assert array.dtype == np.uint32 and array.ndim == 1
    as_json = json.loads(cybpe("encode", "-t", trained, UDHR / "th.txt").stdout)
    assert array.tolist() == as_json
    assert cybpe("decode", "-t", trained, "--npy", out).stdout == (UDHR / "th.txt").read_bytes()


def test_train_from_stdin_equals_train_from_file(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    cybpe("train", UDHR / "ru.txt", "--vocab-size", 400, "-o", a, "-q")
    cybpe("train", "--vocab-size", 400, "-o", b, "-q", input=(UDHR / "ru.txt").read_bytes())
    doc_a, doc_b = json.loads(a.read_text()), json.loads(b.read_text())
    assert doc_a["tokens"] == doc_b["tokens"] and doc_a["merges"] == doc_b["merges"]
    assert len(doc_a["tokens"]) == 400


def test_train_with_glob_and_param(tmp_path):
    out = tmp_path / "digits.json"
    cybpe("train", str(UDHR / "e*.txt"), "--vocab-size", 300, "--pretokenizer", "gpt4-digits",
          "--param", "digits=1", "-o", out, "-q")
    pieces = cybpe("inspect", "-t", out, "--text", "2024", "--color", "never").stdout.decode()
    assert '["2", "0", "2", "4"]' in pieces


# -- convert -----------------------------------------------------------------------------------
# GPT-2 files are not here: their readers always split with GPT-2's pattern, so an abugida
# tokenizer must be refused (test_convert_to_gpt2_refuses_another_pretokenizer).
FORMATS = {"native": "tok.json", "tiktoken": "tok.tiktoken", "hf": "hf/tokenizer.json"}
# formats that do not record the pre-tokenizer get it on the command line
NEEDS_PRETOKENIZER = {"tiktoken"}


def _place(folder: Path, fmt: str) -> Path:
    path = folder / FORMATS[fmt]
    if fmt == "hf":
        path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _ids(tok: Path, fmt: str, text_file: Path) -> list[int]:
    extra = ["--pretokenizer", "abugida"] if fmt in NEEDS_PRETOKENIZER else []
    return json.loads(cybpe("encode", "-t", tok, *extra, text_file).stdout)


@pytest.mark.slow
def test_convert_round_trips_between_every_pair(trained, tmp_path):
    text = tmp_path / "text.txt"
    text.write_bytes(((UDHR / "hi.txt").read_text()[:3000] + SAMPLE + (UDHR / "en.txt").read_text()[:2000]).encode())
    expected = _ids(trained, "native", text)
    first = {}
    for fmt in FORMATS:  # the trained tokenizer into every format
        path = _place(tmp_path / f"from-native-{fmt}", fmt) if fmt != "native" else trained
        if fmt != "native":
            path.parent.mkdir(parents=True, exist_ok=True)
            cybpe("convert", trained, path, "--to", fmt)
        assert _ids(path, fmt, text) == expected, fmt
        first[fmt] = path
    for source, target in itertools.permutations(FORMATS, 2):  # and from every format to every other
        folder = tmp_path / f"{source}-to-{target}"
        folder.mkdir()
        path = _place(folder, target)
        extra = ["--pretokenizer", "abugida"] if source in NEEDS_PRETOKENIZER else []
        cybpe("convert", first[source], path, *extra)  # the target format from the output name
        assert _ids(path, target, text) == expected, (source, target)


def test_convert_to_gpt2_refuses_another_pretokenizer(trained, tmp_path):
    out = cybpe("convert", trained, tmp_path / "gpt2", "--to", "gpt2", check=False)
    assert out.returncode != 0 and b"Traceback" not in out.stderr
    assert b"abugida" in out.stderr and b"GPT-2" in out.stderr
    assert not (tmp_path / "gpt2" / "vocab.bpe").exists()


# -- pretokenizers -----------------------------------------------------------------------------
def test_pretokenizers_json_lists_builtins_and_a_plugin(plugin_site):
    env = {"PYTHONPATH": os.pathsep.join([str(plugin_site), os.environ.get("PYTHONPATH", "")])}
    infos = {i["name"]: i for i in json.loads(cybpe("pretokenizers", "--json", env=env).stdout)}
    assert BUILTINS <= set(infos)
    assert infos["whitespace"]["distribution"] == "cybpe-whitespace-plugin"
    assert infos["whitespace"]["version"] == "1.2.0"
    assert infos["cl100k"]["distribution"] == "cybpe"
    table = cybpe("pretokenizers", env=env).stdout.decode().splitlines()
    assert table[0].split() == ["name", "description", "distribution", "version"]
    row = next(line for line in table if line.startswith("whitespace "))
    assert "cybpe-whitespace-plugin" in row and row.rstrip().endswith("1.2.0")
    without = json.loads(cybpe("pretokenizers", "--json").stdout)
    assert "whitespace" not in {i["name"] for i in without}


def test_inspect_plain_and_coloured(trained):
    text = "Hello हिन्दी 12345"
    plain = cybpe("inspect", "--pretokenizer", "cl100k", "--text", text).stdout.decode()
    assert "\x1b[" not in plain  # not a terminal: plain
    pieces = json.loads(plain.split("pieces: ", 1)[1].splitlines()[0])
    assert pieces == regex.findall(CL100K, text)
    coloured = cybpe("inspect", "-t", trained, "--text", text, "--color", "always").stdout.decode()
    assert "\x1b[" in coloured
    ids = json.loads(coloured.split("ids:", 1)[1])
    assert ids == json.loads(cybpe("encode", "-t", trained, "--text", text).stdout)


def test_bpb_from_numbers_and_from_a_text(trained):
    value = float(cybpe("bpb", "--loss", "2.5", "--bytes-per-token", "3.2").stdout)
    assert value == pytest.approx(2.5 / (math.log(2) * 3.2), rel=1e-5)
    report = json.loads(cybpe("bpb", "--loss", "1.7", "-t", trained, UDHR / "hi.txt", "--json").stdout)
    n_tokens = len(json.loads(cybpe("encode", "-t", trained, UDHR / "hi.txt").stdout))
    width = len((UDHR / "hi.txt").read_bytes()) / n_tokens
    assert report["bytes_per_token"] == pytest.approx(width)
    assert report["bits_per_byte"] == pytest.approx(1.7 / math.log(2) / width)


# -- errors and help ---------------------------------------------------------------------------
BAD = [
    ["encode", "-t", "no-such-tokenizer.json", "--text", "x"],
    ["encode", "-t", "{tok}", "no-such-file.txt"],
    ["encode", "--text", "x"],
    ["train", "--vocab-size", "300", "-o", "{tmp}/x.json", "--pretokenizer", "cl10k", str(UDHR / "en.txt")],
    ["train", "--vocab-size", "10", "-o", "{tmp}/x.json", str(UDHR / "en.txt")],
    ["train", "--vocab-size", "300", "-o", "{tmp}/x.json", "--param", "digits", str(UDHR / "en.txt")],
    ["train", "--vocab-size", "300", "-o", "{tmp}/x.json", str(UDHR / "nope*.txt")],
    ["train", "--vocab-size", "300", "-o", "{tmp}/missing/x.json", str(UDHR / "en.txt")],
    ["train", "--vocab-size", "many", "-o", "{tmp}/x.json"],
    ["decode", "-t", "{tok}", "[1, 2, 1000000]"],
    ["decode", "-t", "{tok}", "not json"],
    ["decode", "-t", "{tok}", "--npy", "{tmp}/none.npy"],
    ["convert", "{tok}", "{tmp}/out.tiktoken", "--to", "yaml"],
    ["convert", "{tmp}/none.json", "{tmp}/out.tiktoken"],
    ["count", "-t", "{tmp}/binary.txt", "--text", "x"],
    ["count", "-t", "{tok}", "{tmp}/binary.txt"],
    ["inspect", "--pretokenizer", "nope", "--text", "x"],
    ["bench", "--variants", "cl100k,nope", "--texts", str(UDHR / "en.txt")],
    ["bench", "--texts", "{tmp}/no-such.txt"],
    ["bench", "--texts", str(UDHR / "en.txt"), "--languages", "xx"],
    ["bench", "--texts", str(UDHR / "en.txt"), "--train-corpus", str(UDHR / "en.txt")],
    ["bpb", "--loss", "2"],
    ["bpb", "--loss", "-1", "--bytes-per-token", "3"],
    ["no-such-command"],
    [],
]


@pytest.mark.parametrize("argv", BAD, ids=lambda a: " ".join(a)[:60])
def test_errors_are_one_line_without_traceback(argv, trained, tmp_path):
    (tmp_path / "binary.txt").write_bytes(b"\xff\xfe\x00abc")
    argv = [a.format(tok=trained, tmp=tmp_path) for a in argv]
    out = cybpe(*argv, input=b"", check=False)
    err = out.stderr.decode()
    assert out.returncode != 0
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("cybpe") and "error:" in err


@pytest.mark.parametrize("command", [None, "train", "encode", "decode", "count", "pretokenizers",
                                     "inspect", "convert", "bpb", "bench"])
def test_help_everywhere(command):
    out = cybpe(*([command] if command else []), "--help").stdout.decode()
    assert out.startswith("usage: cybpe" + (f" {command}" if command else ""))
