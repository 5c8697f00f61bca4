"""Issue 39 (reliability, round two), items 2, 3, 4, 8 and the counts items of "Also".

* damaged compressed streams are FormatError (counts files) / CorpusError (corpora), naming the
  file and where, also on the command line (never "internal error"); a decompression running out
  of memory is a typed error naming the file;
* every loader refuses a non-regular input (folder, FIFO, device) at once, with a typed error;
* a native file whose strings hold a lone surrogate is refused at load (it could not be saved);
* every writer goes through cybpe.io.atomic: non-regular destinations refused, symbolic links
  written through, errors naming the destination; a source scan finds no other writer;
* binary and JSON counts files take the same chunks (any bytes, empty included), and a counts
  file's metadata errors name the file.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import stat
import zlib
from pathlib import Path

import numpy as np
import pytest

import cybpe
from cybpe.cli.main import main as cli_main
from cybpe.errors import CorpusError, CybpeError, FormatError, SaveError
from cybpe.io import atomic
from support import within, UDHR_DIR

CORPUS = UDHR_DIR / "en.txt"  # a text without special-token strings
TEXT = "Hello world, the quick brown fox. 12345 jumps! Ünïcödé 中文 🙂\n  done. " * 40


@pytest.fixture(scope="module")
def tok() -> cybpe.Tokenizer:
    return cybpe.train([TEXT], 320, special_tokens=["<|endoftext|>"], progress=False)


@pytest.fixture(scope="module")
def tok_path(tok, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tok") / "tok.json"
    tok.save(path)
    return path


def in_capped_child(fn, extra_bytes: int = 768 << 20, seconds: int = 60) -> None:
    """Run ``fn`` in a forked child whose address space may grow by ``extra_bytes`` only, and
    re-raise its AssertionError here: a regression that reads /dev/zero must fail the test, not
    exhaust the (shared) machine's memory."""
    import resource
    import traceback

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        message = b""
        try:
            with open("/proc/self/status") as status:
                vm = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
            resource.setrlimit(resource.RLIMIT_AS, (vm + extra_bytes, vm + extra_bytes))
            signal.alarm(seconds)
            fn()
        except BaseException:  # noqa: BLE001 - sent to the parent
            message = traceback.format_exc().encode()
        finally:
            os.write(write_end, message[-4000:])
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status), f"the child died (signal {os.WTERMSIG(status) if os.WIFSIGNALED(status) else '?'})"
    assert not message, message


def _private_device(tmp_path: Path) -> Path:
    """A character device to write to that no one else uses: as root, a node of the null
    device made in ``tmp_path`` (a writer that wrongly replaced it would replace only that
    copy, never /dev/null itself); otherwise /dev/null, which a non-root process cannot replace."""
    if os.geteuid() != 0:
        return Path("/dev/null")
    node = tmp_path / "private-null-device"
    if not node.exists():
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return node


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def _damaged_gzip(path: Path) -> Path:
    """A gzip file whose deflate stream is broken (zlib.error when read), not just its CRC."""
    whole = gzip.compress(TEXT.encode() * 20)
    path.write_bytes(whole[:10] + b"\xff" * 8 + whole[18:])
    with pytest.raises(zlib.error):
        gzip.decompress(path.read_bytes())
    return path


# ------------------------------------------------------------------ 2: damaged compressed streams


@pytest.mark.parametrize("compress", ["gzip", "zstd"])
def test_damaged_compressed_counts_are_format_errors(tmp_path, compress):
    pytest.importorskip("zstandard")
    counts = cybpe.ChunkCounts("cl100k").update([TEXT, "abc " * 500])
    path = tmp_path / "c.cnt"
    counts.save(path, compress=compress)
    size = path.stat().st_size
    body = size - 60  # inside the compressed arrays, past the header and metadata
    failures = []
    for at in range(body - 40, body, 3):
        counts.save(path, compress=compress)
        _flip(path, at)
        try:
            cybpe.ChunkCounts.load(path)
        except FormatError as exc:
            assert str(path) in str(exc)
        except Exception as exc:  # noqa: BLE001 - the point
            failures.append(f"byte {at}: {type(exc).__name__}: {exc}")
    assert not failures, failures[:3]


def test_counts_header_says_zstd_over_raw_data(tmp_path):
    pytest.importorskip("zstandard")
    counts = cybpe.ChunkCounts("cl100k").update([TEXT])
    path = tmp_path / "c.cnt"
    counts.save(path)  # uncompressed
    data = bytearray(path.read_bytes())
    data[12:16] = (1).to_bytes(4, "little")  # the header now says zstd
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match=re.escape(str(path)) + ".*(zstd|offset)"):
        cybpe.ChunkCounts.load(path)


def test_damaged_gzip_corpus_is_a_corpus_error_everywhere(tmp_path, tok):
    bad = _damaged_gzip(tmp_path / "bad.gz")
    with pytest.raises(CorpusError, match=re.escape(str(bad))):
        cybpe.count([bad], "cl100k")
    with pytest.raises(CorpusError, match=re.escape(str(bad))):
        cybpe.train([bad], 300, progress=False)
    with pytest.raises(CorpusError, match=re.escape(str(bad))):
        cybpe.encode_files(tok, [bad], tmp_path / "ids.bin")
    assert not (tmp_path / "ids.bin").exists()
    truncated = tmp_path / "cut.gz"
    truncated.write_bytes(gzip.compress(TEXT.encode())[:-12])
    with pytest.raises(CorpusError, match=re.escape(str(truncated)) + ".*after \\d+ bytes"):
        cybpe.count([truncated], "cl100k")


def test_cli_prints_the_typed_message_for_a_damaged_gzip(tmp_path, tok_path, capsys):
    bad = _damaged_gzip(tmp_path / "bad.gz")
    for argv in (["encode", "-t", str(tok_path), str(bad)],
                 ["encode", "-t", str(tok_path), str(bad), "-o", str(tmp_path / "ids.bin")],
                 ["count", "-t", str(tok_path), str(bad)]):
        assert cli_main(argv) == 1
        err = capsys.readouterr().err
        assert "internal error" not in err and str(bad) in err and "damaged" in err, err


def test_decompression_out_of_memory_is_typed(tmp_path, tok_path, monkeypatch, capsys):
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b"\0" * 100_000))

    def no_memory(self, *args):
        raise MemoryError()
    monkeypatch.setattr(gzip.GzipFile, "read", no_memory)
    with pytest.raises(CorpusError, match=re.escape(str(bomb)) + ".*memory"):
        cybpe.count([bomb], "cl100k")
    assert cli_main(["encode", "-t", str(tok_path), str(bomb)]) == 1
    err = capsys.readouterr().err
    assert str(bomb) in err and "memory" in err, err


# ------------------------------------------------------------------ 3: non-regular inputs


def _non_regular(tmp_path: Path) -> dict[str, str]:
    fifo = tmp_path / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir(exist_ok=True)
    return {"fifo": str(fifo), "device": "/dev/zero", "folder": str(folder)}


def _loaders(tok: cybpe.Tokenizer, tmp_path: Path) -> dict:
    """Every public call that reads a file it is given, by name (test_every_loader_is_listed
    checks the list against the public API)."""
    return {
        "Tokenizer.load": cybpe.Tokenizer.load,
        "Tokenizer.from_tiktoken": lambda p: cybpe.Tokenizer.from_tiktoken(p, "cl100k"),
        "Tokenizer.from_hf": cybpe.Tokenizer.from_hf,
        "Tokenizer.from_gpt2": lambda p: cybpe.Tokenizer.from_gpt2(p, p),
        "Tokenizer.from_pretrained": cybpe.Tokenizer.from_pretrained,
        "load": cybpe.load,
        "ChunkCounts.load": cybpe.ChunkCounts.load,
        "ChunkCounts.update": lambda p: cybpe.ChunkCounts("cl100k").update(Path(p)),
        "count": lambda p: cybpe.count([Path(p)], "cl100k"),
        "train": lambda p: cybpe.train([Path(p)], 300, progress=False),
        "encode_files": lambda p: cybpe.encode_files(tok, [p], tmp_path / "out.bin"),
        "shards": lambda p: [list(cybpe.shards([p], 2))],
        "bits_per_byte": lambda p: cybpe.bits_per_byte(tok, [p]),
    }


def test_every_loader_is_listed(tok, tmp_path):
    listed = set(_loaders(tok, tmp_path))
    public = set()
    for name in cybpe.__all__:
        obj = getattr(cybpe, name)
        if isinstance(obj, type):
            public |= {f"{name}.{m}" for m in vars(obj) if m == "load" or m.startswith("from_")}
    public |= {"load", "count", "train", "encode_files", "shards", "bits_per_byte"}
    # from_spec builds from a dict; SuperBPE.from_ is a property (stage 1's size): no file read
    not_files = {"PreTokenizer.from_spec", "SuperBPE.from_"}
    assert public - not_files <= listed, sorted(public - not_files - listed)


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_every_loader_refuses_non_regular_files_at_once(tok, tmp_path, kind):
    if kind == "device":  # /dev/zero: in a child with a memory cap (see in_capped_child)
        in_capped_child(lambda: _loaders_refuse(tok, tmp_path, kind))
    else:
        _loaders_refuse(tok, tmp_path, kind)


def _loaders_refuse(tok, tmp_path, kind: str) -> None:
    path = _non_regular(tmp_path)[kind]
    failures = []
    for name, load in _loaders(tok, tmp_path).items():
        if kind == "folder" and name in ("Tokenizer.from_pretrained", "load", "count", "train"):
            continue  # folders are what these read (corpus folders: every file under them)
        try:
            with within(10):
                load(path)
        except CybpeError:
            continue
        except BaseException as exc:  # noqa: BLE001 - the point
            failures.append(f"{name}: {type(exc).__name__}: {str(exc)[:120]}")
        else:
            failures.append(f"{name}: loaded {path}")
    assert not failures, failures


def test_folders_holding_non_regular_files(tok, tmp_path):
    folder = tmp_path / "hfdir"
    folder.mkdir()
    os.mkfifo(folder / "tokenizer.json")
    with within(10), pytest.raises(CybpeError):
        cybpe.Tokenizer.from_pretrained(folder)
    with within(10), pytest.raises(CybpeError):
        cybpe.load(folder)


def test_cli_non_regular_inputs(tmp_path, tok_path, capsys):
    in_capped_child(lambda: _cli_refuses(tmp_path, tok_path, capsys))


def _cli_refuses(tmp_path, tok_path, capsys) -> None:
    paths = _non_regular(tmp_path)
    for argv in (["train", "/dev/zero", "--vocab-size", "300", "-o", str(tmp_path / "t.json")],
                 ["counts", "make", "/dev/zero", "-o", str(tmp_path / "c.cnt")],
                 ["counts", "show", paths["fifo"]],
                 ["encode", "-t", str(tok_path), paths["fifo"]],
                 ["encode", "-t", paths["fifo"], "--text", "x"]):
        with within(20):
            assert cli_main(argv) == 1, argv
        err = capsys.readouterr().err
        assert "internal error" not in err and "no such file" not in err, (argv, err)
        assert "regular file" in err or "FIFO" in err or "device" in err, (argv, err)


# ------------------------------------------------------------------ 4: lone surrogates in native files


@pytest.mark.parametrize("where", ["metadata value", "metadata key", "nested", "name"])
def test_native_file_with_lone_surrogate_is_refused_at_load(tok_path, tmp_path, where):
    doc = json.loads(tok_path.read_text(encoding="utf-8"))
    if where == "metadata value":
        doc["metadata"] = {"x": "\ud800"}
    elif where == "metadata key":
        doc["metadata"] = {"\udfff": 1}
    elif where == "nested":
        doc["metadata"] = {"a": [1, {"b": ["ok", "bad \ud83d"]}]}
    else:
        doc["name"] = "\udc80"
    path = tmp_path / "tok.json"
    path.write_text(json.dumps(doc), encoding="utf-8")  # ensure_ascii: \\ud800 escapes
    with pytest.raises(FormatError, match="surrogate"):
        cybpe.Tokenizer.load(path)


def test_native_file_with_valid_escapes_round_trips(tok_path, tmp_path):
    doc = json.loads(tok_path.read_text(encoding="utf-8"))
    doc["metadata"] = {"emoji": "\ud83d\ude42", "big": 10**30}
    path = tmp_path / "tok.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    loaded = cybpe.Tokenizer.load(path)
    loaded.save(tmp_path / "again.json")
    assert cybpe.Tokenizer.load(tmp_path / "again.json").metadata["emoji"] == "🙂"


# ------------------------------------------------------------------ 8: every writer is atomic


def _writers(tok: cybpe.Tokenizer) -> dict:
    """Every public call that writes a file it is given, by name (test_every_writer_is_listed
    checks the list against the public API and the source)."""
    counts = cybpe.ChunkCounts("cl100k").update(["hello world"])
    corpus = CORPUS
    return {
        "Tokenizer.save": tok.save,
        "Tokenizer.to_tiktoken": tok.to_tiktoken,
        "Tokenizer.to_hf": tok.to_hf,
        "Tokenizer.to_gpt2": lambda p: cybpe.Tokenizer(tok.vocab, "gpt2").to_gpt2(p, str(p) + ".bpe"),
        "Tokenizer.save_pretrained": lambda p: tok.save_pretrained(os.path.dirname(p)),
        "save": lambda p: cybpe.save(tok, p, format="native"),
        "ChunkCounts.save": counts.save,
        "ChunkCounts.save(json)": lambda p: counts.save(p, format="json"),
        "ChunkCounts.save(zstd)": lambda p: counts.save(p, compress="gzip"),
        "encode_files": lambda p: cybpe.encode_files(tok, [corpus], p),
        "encode_files(npy)": lambda p: cybpe.encode_files(tok, [corpus], p) if str(p).endswith(".npy")
        else cybpe.encode_files(tok, [corpus], p),
        "cli encode -o": lambda p: _cli_ok(["encode", "-t", _saved(tok), "--text", "hello", "-o", str(p)]),
        "cli encode files -o": lambda p: _cli_ok(["encode", "-t", _saved(tok), str(corpus), "-o", str(p)]),
        "cli counts make": lambda p: _cli_ok(["counts", "make", str(corpus), "-o", str(p)]),
    }


_SAVED: dict = {}


def _saved(tok) -> str:
    if "path" not in _SAVED:
        import tempfile

        folder = tempfile.mkdtemp()
        _SAVED["path"] = os.path.join(folder, "tok.json")
        tok.save(_SAVED["path"])
    return _SAVED["path"]


def _cli_ok(argv: list[str]) -> None:
    from cybpe.cli.main import main

    if main(argv + ["-q"] if argv[0] != "counts" else argv) != 0:
        raise SaveError("the command failed")  # (its message is on stderr)


def test_every_writer_is_listed(tok):
    listed = {name.split("(")[0] for name in _writers(tok)}
    public = set()
    for name in cybpe.__all__:
        obj = getattr(cybpe, name)
        if isinstance(obj, type):
            public |= {f"{name}.{m}" for m in vars(obj)
                       if m in ("save", "save_pretrained") or m.startswith("to_")}
    public |= {"save", "encode_files"}
    assert public <= listed, sorted(public - listed)


#: The modules allowed to create or replace files themselves: the atomic saver, and the
#: transformers folder writer (it stages three files through the saver's rules, then renames).
#: cybpe/_c/gen_unicode_tables.py and gen_nfc_tables.py are build-time generators, not part of
#: the library's API.
_OWN_WRITERS = {"cybpe/io/atomic.py", "cybpe/formats/transformers_dir.py", "cybpe/_c/gen_unicode_tables.py",
                "cybpe/_c/gen_nfc_tables.py"}
_WRITE_CALL = re.compile(
    r"""open\([^)]*['"][wax]b?\+?['"]|\.write_bytes\(|\.write_text\(|mkstemp\(|NamedTemporaryFile\(|"""
    r"""os\.replace\(|os\.rename\(|shutil\.(?:copy|move)|np\.save\(|\.tofile\(|os\.O_WRONLY""")


def test_no_writer_bypasses_the_atomic_saver():
    root = Path(cybpe.__file__).resolve().parent
    offenders = []
    for path in sorted(root.rglob("*.py")) + sorted(root.rglob("*.pyx")):
        rel = path.relative_to(root.parent).as_posix()
        if rel in _OWN_WRITERS:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#")[0]
            if _WRITE_CALL.search(code) and "os.devnull" not in code:  # (stdout to /dev/null)
                offenders.append(f"{rel}:{number}: {line.strip()}")
    assert not offenders, offenders


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_every_writer_refuses_non_regular_destinations(tok, tmp_path, kind):
    failures = []
    for name, write in _writers(tok).items():
        if name == "Tokenizer.save_pretrained":
            folder = tmp_path / f"pre-{kind}"
            folder.mkdir(exist_ok=True)
            target = folder / "tokenizer_config.json"
            if not os.path.lexists(target):
                if kind == "fifo":
                    os.mkfifo(target)
                elif kind == "folder":
                    target.mkdir()
                else:
                    target.symlink_to(_private_device(tmp_path))
        else:
            target = Path(_non_regular(tmp_path)[kind]) if kind != "device" else _private_device(tmp_path)
        before = os.stat(target).st_mode
        try:
            with within(20):
                write(target)
        except SaveError as exc:
            if ".part" in str(exc) or ".cybpe-tmp" in str(exc):
                failures.append(f"{name}: names the temporary file: {exc}")
        except BaseException as exc:  # noqa: BLE001 - the point
            failures.append(f"{name}: {type(exc).__name__}: {str(exc)[:120]}")
        else:
            failures.append(f"{name}: wrote to a {kind}")
        after = os.stat(target).st_mode
        if stat.S_IFMT(after) != stat.S_IFMT(before):
            failures.append(f"{name}: replaced the {kind}")
    assert not failures, failures


def test_every_writer_writes_through_symlinks(tok, tmp_path):
    failures = []
    for k, (name, write) in enumerate(_writers(tok).items()):
        real_dir = tmp_path / f"real{k}"
        link_dir = tmp_path / f"links{k}"
        real_dir.mkdir()
        link_dir.mkdir()
        suffix = ".npy" if "npy" in name else ".json" if "json" in name or name in ("Tokenizer.save", "save") else ".bin"
        base = "tokenizer_config.json" if name == "Tokenizer.save_pretrained" else f"out{suffix}"
        real = real_dir / base
        real.write_bytes(b"old")
        link = link_dir / base
        link.symlink_to(real)
        try:
            write(link)
        except Exception as exc:  # noqa: BLE001 - the point
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        if not link.is_symlink():
            failures.append(f"{name}: replaced the link by a file")
        elif real.read_bytes() == b"old":
            failures.append(f"{name}: left the link's target unchanged")
        leftovers = [p.name for p in list(real_dir.iterdir()) + list(link_dir.iterdir())
                     if p.name.endswith((".part", ".cybpe-tmp"))]
        if leftovers:
            failures.append(f"{name}: left {leftovers}")
    assert not failures, failures


def test_dataset_write_errors_name_the_destination(tok, tmp_path, monkeypatch):
    target = tmp_path / "ids.bin"
    target.write_bytes(b"old")

    class DiskFull:
        """The temporary file, failing at its second write."""

        def __init__(self, real):
            self.real, self.writes = real, 0

        def write(self, data):
            self.writes += 1
            if self.writes > 1:
                raise OSError(28, "No space left on device")
            return self.real.write(data)

        def __getattr__(self, name):
            return getattr(self.real, name)

    real_init = atomic.AtomicFile.__init__

    def init(self, path):
        real_init(self, path)
        self.file = DiskFull(self.file)
    monkeypatch.setattr(atomic.AtomicFile, "__init__", init)
    with pytest.raises(SaveError) as caught:
        cybpe.encode_files(tok, [CORPUS] * 3, target, block_chars=2000)
    message = str(caught.value)
    assert str(target) in message and "No space" in message
    assert ".part" not in message and "cybpe-tmp" not in message
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ids.bin"]


def test_dataset_npy_through_a_symlink(tok, tmp_path):
    real = tmp_path / "real.npy"
    real.write_bytes(b"old")
    link = tmp_path / "link.npy"
    link.symlink_to(real)
    cybpe.encode_files(tok, [CORPUS], link)
    assert link.is_symlink()
    assert np.array_equal(np.load(real), tok.encode(CORPUS.read_text(encoding="utf-8")))


# ------------------------------------------------------------------ Also: counts files


@pytest.mark.parametrize("chunk", [b"", b"\xff\xfe", "é".encode()[:1], b"ok"])
def test_binary_and_json_counts_take_the_same_chunks(tmp_path, chunk):
    counts = cybpe.ChunkCounts("cl100k").update(["hello world"])
    counts.add_counts({chunk: 3})
    for name, kwargs in (("c.json", {}), ("c.cnt", {}), ("c.gz.cnt", {"compress": "gzip"})):
        counts.save(tmp_path / name, **kwargs)
        loaded = cybpe.ChunkCounts.load(tmp_path / name)
        assert dict(loaded.items()) == dict(counts.items()), name


def test_counts_metadata_errors_name_the_file(tmp_path):
    counts = cybpe.ChunkCounts("cl100k").update(["hello world"])
    binary = tmp_path / "c.cnt"
    counts.save(binary)
    data = binary.read_bytes()
    meta_len = int.from_bytes(data[32:40], "little")
    meta = json.loads(data[40:40 + meta_len])
    for change in ({"special_tokens": [""]}, {"special_tokens": "x"}, {"max_undercount": -1},
                   {"pretokenizer": {"name": "no-such-pretokenizer"}}, {"total": "many"}):
        bad = json.dumps({**meta, **change}).encode()
        body = data[40 + meta_len + (-(40 + meta_len) % 8):]
        head = data[:32] + len(bad).to_bytes(8, "little") + bad
        binary.write_bytes(head + b"\0" * (-len(head) % 8) + body)
        with pytest.raises(FormatError) as caught:
            cybpe.ChunkCounts.load(binary)
        assert str(binary) in str(caught.value), (change, str(caught.value))
    as_json = tmp_path / "c.json"
    counts.save(as_json)
    doc = json.loads(as_json.read_text())
    for change in ({"special_tokens": [""]}, {"max_undercount": -1}, {"pretokenizer": {"name": "nope"}}):
        as_json.write_text(json.dumps({**doc, **change}))
        with pytest.raises(FormatError) as caught:
            cybpe.ChunkCounts.load(as_json)
        assert str(as_json) in str(caught.value), (change, str(caught.value))


def test_failed_encode_files_drops_the_blocks_not_started(tok, tmp_path, monkeypatch):
    """A run that fails (or is interrupted) while blocks wait in the pool does not encode them."""
    import time

    from cybpe.api import encode_files as encode_files_module

    calls = []
    real = cybpe.Tokenizer.encode_to_numpy

    def slow(self, text, **kwargs):
        calls.append(1)
        time.sleep(0.2)
        return real(self, text, **kwargs)

    def blocks(path, split, errors, block_chars):
        for _ in range(3):
            yield "hello world "
        raise CorpusError(f"{path}: damaged")

    monkeypatch.setattr(cybpe.Tokenizer, "encode_to_numpy", slow)
    monkeypatch.setattr(encode_files_module, "read_blocks", blocks)
    with pytest.raises(CorpusError):
        cybpe.encode_files(tok, [CORPUS], tmp_path / "ids.bin", workers=1)
    # one block encoded and written, one running when the error came; the third is dropped
    assert len(calls) == 2
    assert not (tmp_path / "ids.bin").exists()
