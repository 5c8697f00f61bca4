"""`cybpe encode --output` (datasets to flat arrays), encode_files, and the CLI conventions:
--json, --errors, CLI-term hints, compressed input, streamed stdin, broken pipes, --text."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cybpe as lib
from cybpe.errors import CorpusError, DisallowedSpecialTokenError, InvalidParameterError

from support import UDHR_DIR as UDHR, DATA_DIR, run_cli as cybpe

DATA = DATA_DIR


def compressed(tmp_path: Path, source: Path, kind: str) -> Path:
    data = source.read_bytes()
    out = tmp_path / f"{source.stem}.{kind}"
    if kind == "gz":
        out.write_bytes(gzip.compress(data))
    elif kind == "xz":
        out.write_bytes(lzma.compress(data))
    elif kind == "bz2":
        out.write_bytes(bz2.compress(data))
    else:
        zstandard = pytest.importorskip("zstandard")
        out.write_bytes(zstandard.ZstdCompressor().compress(data))
    return out


def test_encode_dataset_equals_whole_file_encodes(trained, tmp_path):
    tok = lib.Tokenizer.load(trained)
    files = [UDHR / "en.txt", UDHR / "hi.txt", UDHR / "th.txt"]
    eot = tok.special_tokens["<|endoftext|>"]
    want = []
    for f in files:
        want += tok.encode(f.read_text(encoding="utf-8")) + [eot]
    cybpe("encode", "-t", trained, *files, "--output", tmp_path / "d.bin", "--dtype", "uint16", "--eot", "-q")
    assert np.fromfile(tmp_path / "d.bin", dtype="<u2").tolist() == want
    cybpe("encode", "-t", trained, *files, "-o", tmp_path / "d.npy", "--eot", "-q")
    got = np.load(tmp_path / "d.npy")
    assert got.dtype == np.uint32 and got.tolist() == want
    # small blocks: many cuts, the same ids (blocks are cut only where the pieces cannot change)
    result = lib.encode_files(tok, files, tmp_path / "small.bin", dtype="uint16", eot=True, block_chars=300,
                              workers=3)
    assert np.fromfile(tmp_path / "small.bin", dtype="<u2").tolist() == want
    assert result.tokens == len(want) and result.files == 3
    assert result.bytes == sum(len(f.read_bytes()) for f in files)


@pytest.mark.parametrize("kind", ["gz", "xz", "bz2", "zst"])
def test_encode_and_count_read_compressed_files(trained, tmp_path, kind):
    packed = compressed(tmp_path, UDHR / "hi.txt", kind)
    tok = lib.Tokenizer.load(trained)
    want = tok.encode((UDHR / "hi.txt").read_text(encoding="utf-8"))
    cybpe("encode", "-t", trained, packed, "-o", tmp_path / "c.npy", "-q")
    assert np.load(tmp_path / "c.npy").tolist() == want
    assert json.loads(cybpe("encode", "-t", trained, packed).stdout) == want
    assert int(cybpe("count", "-t", trained, packed).stdout) == len(want)


def test_encode_dataset_from_stdin_and_text(trained, tmp_path):
    tok = lib.Tokenizer.load(trained)
    text = (UDHR / "th.txt").read_bytes()
    cybpe("encode", "-t", trained, "-o", tmp_path / "s.bin", "-q", input=text)
    assert np.fromfile(tmp_path / "s.bin", dtype="<u4").tolist() == tok.encode(text.decode())
    cybpe("encode", "-t", trained, "--text", "hello world", "-o", tmp_path / "t.npy", "--eot", "-q")
    assert np.load(tmp_path / "t.npy").tolist() == tok.encode("hello world") + [tok.special_tokens["<|endoftext|>"]]


def test_dtype_refuses_a_vocabulary_that_does_not_fit(tmp_path):
    big = lib.Tokenizer(lib.Vocab([bytes([b]) for b in range(256)] + [b"%05d" % k for k in range(70000)],
                                  None, {}, True), "cl100k")
    with pytest.raises(InvalidParameterError, match="uint16"):
        lib.encode_files(big, [UDHR / "en.txt"], tmp_path / "x.bin", dtype="uint16")
    assert not (tmp_path / "x.bin").exists()


def test_failed_encode_leaves_the_target_as_it_was(trained, tmp_path):
    target = tmp_path / "keep.bin"
    target.write_bytes(b"old")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine text\n" * 100 + b"\xff")
    out = cybpe("encode", "-t", trained, UDHR / "en.txt", bad, "-o", target, "-q", check=False)
    assert out.returncode == 1 and b"--errors replace" in out.stderr and b"Traceback" not in out.stderr
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".cybpe-")] == []
    cybpe("encode", "-t", trained, bad, "-o", target, "-q", "--errors", "replace")
    tok = lib.Tokenizer.load(trained)
    assert np.fromfile(target, dtype="<u4").tolist() == tok.encode(bad.read_bytes().decode("utf-8", "replace"))
    with pytest.raises(CorpusError):
        lib.encode_files(tok, [bad], target)


def test_hints_name_the_cli_flags(trained, tmp_path):
    special = cybpe("encode", "-t", trained, "--text", "a<|endoftext|>", check=False)
    assert special.returncode == 1
    assert b"--allow-special" in special.stderr and b"--special-as-text" in special.stderr
    assert b"allowed_special" not in special.stderr
    as_text = json.loads(cybpe("encode", "-t", trained, "--text", "a<|endoftext|>", "--special-as-text").stdout)
    tok = lib.Tokenizer.load(trained)
    assert as_text == tok.encode("a<|endoftext|>", disallowed_special=())
    with pytest.raises(DisallowedSpecialTokenError):
        lib.encode_files(tok, [_write(tmp_path / "s.txt", "x<|endoftext|>")], tmp_path / "o.bin")
    bad = _write(tmp_path / "bad.txt", b"ab\xffcd")
    for command in (["count"], ["encode"], ["inspect"]):
        out = cybpe(*command, "-t", trained, bad, check=False)
        assert out.returncode == 1 and b"--errors replace" in out.stderr and b"errors='" not in out.stderr
        fixed = cybpe(*command, "-t", trained, bad, "--errors", "replace")
        assert fixed.returncode == 0
    assert cybpe("count", "-t", trained, bad, "--errors", "ignore").stdout.strip() == \
        str(tok.count("abcd")).encode()


def _write(path: Path, data) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def test_json_for_count_and_train(trained, tmp_path):
    tok = lib.Tokenizer.load(trained)
    report = json.loads(cybpe("count", "-t", trained, UDHR / "en.txt", UDHR / "hi.txt", "--json").stdout)
    counts = [tok.count(p.read_text(encoding="utf-8")) for p in (UDHR / "en.txt", UDHR / "hi.txt")]
    assert [i["tokens"] for i in report["inputs"]] == counts and report["total"] == sum(counts)
    assert json.loads(cybpe("count", "-t", trained, "--text", "hello", "--json").stdout)["total"] == tok.count("hello")
    out = cybpe("train", UDHR / "en.txt", "--vocab-size", 300, "-o", tmp_path / "t.json", "--json", "-q").stdout
    summary = json.loads(out)
    assert summary["n_vocab"] == 300 and summary["n_merges"] == 44 and summary["output"] == str(tmp_path / "t.json")


def test_train_reads_compressed_files_and_streams_stdin(tmp_path):
    packed = compressed(tmp_path, UDHR / "hi.txt", "xz")
    cybpe("train", packed, "--vocab-size", 400, "-o", tmp_path / "a.json", "-q")
    cybpe("train", UDHR / "hi.txt", "--vocab-size", 400, "-o", tmp_path / "b.json", "-q")
    cybpe("train", "--vocab-size", 400, "-o", tmp_path / "c.json", "-q", input=(UDHR / "hi.txt").read_bytes())
    a, b, c = (lib.Tokenizer.load(tmp_path / f"{k}.json") for k in "abc")
    assert a.vocab.tokens == b.vocab.tokens == c.vocab.tokens


def test_stdin_streams_in_blocks(monkeypatch, tmp_path):
    """stdin goes through the block reader (never read whole): the blocks are the file's."""
    from cybpe.training.corpus import read_blocks

    split = lib.get_pretokenizer("cl100k").split
    data = (UDHR / "en.txt").read_bytes()
    with open(UDHR / "en.txt", "rb") as f:
        monkeypatch.setattr(sys, "stdin", type("S", (), {"buffer": f})())
        from_stdin = list(read_blocks("-", split, block_chars=2000))
    assert len(from_stdin) > 3 and "".join(from_stdin) == data.decode()
    assert from_stdin == list(read_blocks(UDHR / "en.txt", split, block_chars=2000))


def test_broken_pipe_exits_quietly(trained):
    big = (UDHR / "hi.txt").read_text(encoding="utf-8") * 20
    proc = subprocess.Popen([sys.executable, "-m", "cybpe", "encode", "-t", str(trained), "-"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first line
    _, err = proc.communicate(big.encode() * 3 + b"\n", timeout=120)
    assert proc.returncode == 141 and err == b""


def test_text_means_the_text_in_every_command(trained, tmp_path):
    text = "नमस्ते दुनिया"
    tok = lib.Tokenizer.load(trained)
    assert json.loads(cybpe("encode", "-t", trained, "--text", text).stdout) == tok.encode(text)
    assert int(cybpe("count", "-t", trained, "--text", text).stdout) == tok.count(text)
    assert b"tokens" in cybpe("inspect", "-t", trained, "--text", text).stdout
    per_text = json.loads(cybpe("bpb", "--loss", "2", "-t", trained, "--text", text, "--json").stdout)
    assert per_text["bytes_per_token"] == pytest.approx(len(text.encode()) / tok.count(text))
    file = _write(tmp_path / "eval.txt", text)
    per_file = json.loads(cybpe("bpb", "--loss", "2", "-t", trained, file, "--json").stdout)
    assert per_file == per_text
    old_style = cybpe("bpb", "--loss", "2", "-t", trained, "--text", file, check=False)
    assert old_style.returncode == 1 and b"the text itself" in old_style.stderr
