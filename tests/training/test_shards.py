"""Exact shards (cybpe.shards): the counts of the shards of a file add up to the counts of the
whole file, on the training corpus and on files made to break the cut rule."""

from __future__ import annotations

import gzip
import lzma
import random

import pytest

import cybpe
from cybpe.errors import InvalidParameterError
from cybpe.training.corpus import count_corpus


def _whole(text: str, pretokenizer: str = "cl100k", specials=()) -> cybpe.ChunkCounts:
    """Ground truth: the text counted as one string, never cut."""
    return cybpe.ChunkCounts(pretokenizer, specials).update([text])


def _sum_of_shards(parts, pretokenizer="cl100k", specials=(), block_chars=1 << 22):
    total = cybpe.ChunkCounts(pretokenizer, specials)
    for shard in parts:
        total += count_corpus(cybpe.ChunkCounts(pretokenizer, specials), [shard], block_chars=block_chars)
    return total


@pytest.fixture(scope="module")
def corpus_prefix(shared_dir, tmp_path_factory):
    """The first ~12 MB of the training corpus as a plain file, cut after a document."""
    with lzma.open(shared_dir / "corpora" / "train" / "mixed-train.txt.xz", "rb") as f:
        data = f.read(12 << 20)
    data = data[: data.rindex(b"\n\n") + 2]
    path = tmp_path_factory.mktemp("shards") / "prefix.txt"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("pretokenizer", ["cl100k", "o200k"])
def test_shards_of_the_training_corpus_sum_to_the_whole(corpus_prefix, pretokenizer):
    whole = _whole(corpus_prefix.read_text(encoding="utf-8"), pretokenizer)
    size = corpus_prefix.stat().st_size
    for n in (2, 3, 7, 16):
        parts = cybpe.shards(corpus_prefix, n, pretokenizer)
        assert len(parts) == n
        assert parts[0].start == 0 and parts[-1].end is None
        assert all(a.end == b.start for a, b in zip(parts, parts[1:]))
        assert all(abs((s.end or size) - s.start - size / n) < size / n / 2 for s in parts)
        assert _sum_of_shards(parts, pretokenizer) == whole, n


def test_naive_halves_would_differ(corpus_prefix):
    """The test above can fail: cutting at arbitrary newlines changes the counts."""
    data = corpus_prefix.read_bytes()
    text = data.decode("utf-8")
    whole = _whole(text)
    cut = data.index(b"\n\n", len(data) // 2) + 1  # "\n\n" is one piece; its halves are two
    naive = _whole(data[:cut].decode("utf-8")) + _whole(data[cut:].decode("utf-8"))
    assert naive != whole


def _adversarial_texts(rng: random.Random) -> dict[str, str]:
    pieces = ["é", "😀", "\u0301", "ق", "中", "\u00a0", "\u3000", "1", "12345", "'s", " ", "  ", "\t",
              "\r\n", "\n", "\n\n", "\r", "x", "word", "!!", "\u200d", "\U0001F1FA\U0001F1F8"]
    random_mix = "".join(rng.choice(pieces) for _ in range(60_000))
    every_cut_multibyte = "".join(f"{rng.choice(['é', '😀', '中', 'ق', 'ा'])}{'w' * rng.randrange(5)}\n"
                                  for _ in range(30_000))
    return {
        "one giant line": "word " * 200_000,
        "no newlines at all": "中文" * 100_000,
        "crlf": "".join(f"line {i} text\r\n" for i in range(20_000)),
        "multi-byte at every cut": every_cut_multibyte,
        "spaces before every line": "".join(f"\n  {i}\n\u00a0x\n" for i in range(20_000)),
        "random mix": random_mix,
    }


@pytest.mark.slow
@pytest.mark.parametrize("pretokenizer", ["cl100k", "gpt2", "o200k", "gpt4-digits"])
def test_adversarial_files(tmp_path, pretokenizer):
    for name, text in _adversarial_texts(random.Random(7)).items():
        path = tmp_path / "adversarial.txt"
        path.write_bytes(text.encode("utf-8"))
        whole = _whole(text, pretokenizer)
        for n in (2, 9, 64):
            parts = cybpe.shards(path, n, pretokenizer)
            if name in ("one giant line", "no newlines at all"):
                assert parts == [cybpe.Shard(path)], name  # nowhere to cut
            assert _sum_of_shards(parts, pretokenizer, block_chars=3000) == whole, (name, n)


def test_special_tokens_are_never_cut(tmp_path):
    special = "<|sep\n|>"  # a special token with a newline inside, followed by a non-space
    text = "".join(f"doc {i}\n{special}\nnext {i}\n" for i in range(5000))
    path = tmp_path / "s.txt"
    path.write_text(text, encoding="utf-8")
    whole = _whole(text, "cl100k", [special])
    parts = cybpe.shards(path, 20, "cl100k", [special])
    assert len(parts) > 10
    assert _sum_of_shards(parts, "cl100k", [special], block_chars=2000) == whole


def test_several_files_and_compressed_ones(tmp_path):
    texts = [f"file {k}\n" + "".join(f"line {i} of {k}\n" for i in range(3000 * (k + 1))) for k in range(3)]
    paths = []
    for k, text in enumerate(texts):
        path = tmp_path / f"f{k}.txt"
        path.write_bytes(gzip.compress(text.encode()) if k == 1 else text.encode())
        paths.append(path)
    parts = cybpe.shards(paths, 12)
    assert [p for p in parts if p.source == paths[1]] == [cybpe.Shard(paths[1])]  # compressed: whole
    assert len([p for p in parts if p.source == paths[2]]) > len([p for p in parts if p.source == paths[0]])
    whole = sum((_whole(t) for t in texts), cybpe.ChunkCounts())
    assert _sum_of_shards(parts) == whole
    assert cybpe.count(parts) == whole


def test_bad_arguments(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("abc\n")
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InvalidParameterError):
            cybpe.shards(path, bad)
    assert cybpe.shards([], 4) == []
    assert cybpe.shards(path, 4) == [cybpe.Shard(path)]  # too small to cut
    with pytest.raises(cybpe.errors.CorpusError, match="no such file"):
        cybpe.shards(tmp_path / "missing.txt", 2)


@pytest.mark.parametrize("pretokenizer", ["cl100k", "gpt2", "o200k", "llama3", "gpt4-digits-rtl", "abugida",
                                          "superbpe"])
def test_blocks_of_a_text_without_newline_cuts_are_cut_before_spaces_exactly(tmp_path, pretokenizer):
    from cybpe.training.shards import cut_splitter, read_blocks
    from cybpe.pretokenize.registry import get_pretokenizer

    split = cut_splitter(get_pretokenizer(pretokenizer))
    rng = random.Random(11)
    texts = dict(_adversarial_texts(rng))
    # every newline followed by a space: no newline cut anywhere (the 10 M-words corpus's shape)
    texts["newline then space"] = "\n".join(" " + " ".join(
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6)) for _ in range(50))
        for _ in range(400))
    for name, text in texts.items():
        path = tmp_path / "blocks.txt"
        path.write_bytes(text.encode("utf-8"))
        blocks = list(read_blocks(path, split, block_chars=3000))
        assert "".join(blocks) == text, name
        assert [p for b in blocks for p in split(b)] == split(text), name
        if pretokenizer in ("cl100k", "o200k") and name in ("newline then space", "one giant line"):
            assert len(blocks) > 5, (name, len(blocks))  # cut before spaces, not held whole
