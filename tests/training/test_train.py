"""train() and ChunkCounts: corpus handling, determinism, special tokens, errors, tiktoken round trip."""

from __future__ import annotations

import pickle

import pytest

import cybpe
from cybpe.training.corpus import count_corpus
from cybpe.errors import CorpusError, InvalidParameterError, TrainingError
from support import DATA_DIR, UDHR_DIR

UDHR = sorted(UDHR_DIR.glob("*.txt"))
TEXTS = [p.read_text(encoding="utf-8") for p in UDHR]
CODE = (DATA_DIR / "python_sample.txt").read_text(encoding="utf-8")


def test_trained_tokenizer_round_trips_and_matches_tiktoken():
    tiktoken = pytest.importorskip("tiktoken")
    tok = cybpe.train(TEXTS + [CODE], 3000, "cl100k", special_tokens=["<|endoftext|>"], progress=False)
    assert tok.n_vocab == 3000
    assert tok.special_tokens == {"<|endoftext|>": 2999}
    assert tok.metadata["training"]["stop_reason"] == "vocab_size"
    enc = tiktoken.Encoding(
        "trained", pat_str=tok.pretokenizer.pattern,
        mergeable_ranks={b: i for i, b in enumerate(tok.vocab.tokens)}, special_tokens=tok.special_tokens,
    )
    for text in TEXTS + [CODE]:
        ids = tok.encode_ordinary(text)
        assert ids == enc.encode_ordinary(text)
        assert tok.decode(ids) == text


def test_chunk_counts_add_pickle_save(tmp_path):
    whole = cybpe.ChunkCounts("cl100k").update(TEXTS)
    parts = [cybpe.ChunkCounts("cl100k").update(TEXTS[i::3]) for i in range(3)]
    assert sum(parts) == whole
    assert parts[0] + parts[1] + parts[2] == whole
    again = cybpe.ChunkCounts("cl100k")
    for p in parts:
        again += p
    assert again == whole
    assert pickle.loads(pickle.dumps(whole)) == whole
    whole.save(tmp_path / "counts.json")
    assert cybpe.ChunkCounts.load(tmp_path / "counts.json") == whole
    assert whole.total == sum(n for _, n in whole.items())
    with pytest.raises(InvalidParameterError):
        whole + cybpe.ChunkCounts("gpt2")


def test_training_from_counts_equals_training_from_text():
    counts = sum(cybpe.ChunkCounts("o200k").update(TEXTS[i::2]) for i in range(2))
    a = cybpe.train(counts, 1500, progress=False)
    b = cybpe.train(TEXTS, 1500, "o200k", progress=False)
    assert a.vocab == b.vocab and a.pretokenizer == b.pretokenizer


@pytest.mark.parametrize("name", ["cl100k", "gpt2", "o200k", "abugida", "gpt4-digits-rtl"])
def test_file_blocks_do_not_change_counts(tmp_path, name):
    """Files are read in blocks cut at safe places: tiny blocks give the counts of whole texts."""
    text = "\n".join(TEXTS[:6]) + "\n\n  \n" + CODE[:40_000] + "\r\n\r\n x \n\n\n"
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    whole = cybpe.ChunkCounts(name).update(text)
    blocked = count_corpus(cybpe.ChunkCounts(name), [path], block_chars=2000)
    assert blocked == whole


def test_workers_do_not_change_the_result(tmp_path):
    paths = []
    for i, text in enumerate(TEXTS):
        paths.append(tmp_path / f"{i}.txt")
        paths[-1].write_text(text, encoding="utf-8")
    one = count_corpus(cybpe.ChunkCounts("cl100k"), paths, workers=1, block_chars=5000)
    two = count_corpus(cybpe.ChunkCounts("cl100k"), paths, workers=2, block_chars=5000)
    assert one == two == cybpe.ChunkCounts("cl100k").update(TEXTS)
    regex_only = cybpe.get_pretokenizer("cl100k").with_regex_only()  # process workers, not threads
    three = count_corpus(cybpe.ChunkCounts(regex_only), paths, workers=2, block_chars=5000)
    assert dict(three.items()) == dict(one.items())
    a = cybpe.train(cybpe.files(str(tmp_path / "*.txt")), 1200, workers=2, progress=False)
    b = cybpe.train(cybpe.files(str(tmp_path / "*.txt")), 1200, workers=1, progress=False)
    assert a.vocab == b.vocab


def test_invalid_utf8_names_file_and_offset(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"hello world\n" * 10 + b"\xff\xfe oops")
    with pytest.raises(CorpusError, match=r"bad\.txt: invalid UTF-8 at byte offset 120"):
        cybpe.train([path], 300, progress=False)
    tok = cybpe.train([path], 300, errors="replace", progress=False)
    assert tok.metadata["training"]["stop_reason"] == "no_pairs"  # a tiny corpus runs out of pairs
    assert tok.encode("\ufffd") == [tok.vocab.tokens.index("\ufffd".encode())]
    with pytest.raises(CorpusError, match="cannot open"):
        cybpe.train([tmp_path / "missing.txt"], 300, progress=False)
    with pytest.raises(CorpusError, match="no file matches"):
        cybpe.files(str(tmp_path / "*.nothing"))


def test_special_tokens_are_cut_out_and_never_merged():
    text = "<|eot|>ab<|eot|>ab<|eot|>" * 50
    tok = cybpe.train([text], 300, special_tokens=["<|eot|>"], progress=False)
    learned = {tok.vocab.tokens[i] for i in range(256, len(tok.vocab.tokens))}
    assert all(b"<" not in t and b"|" not in t for t in learned)
    assert tok.special_tokens == {"<|eot|>": len(tok.vocab.tokens)}
    assert tok.encode("ab<|eot|>", allowed_special="all")[-1] == tok.special_tokens["<|eot|>"]


def test_min_frequency_stops_early_and_says_so():
    tok = cybpe.train(TEXTS, 20_000, min_frequency=50, progress=False)
    report = tok.metadata["training"]
    assert report["stop_reason"] == "min_frequency"
    assert min(r["count"] for r in tok.merge_report()) >= 50
    assert tok.n_vocab < 20_000


def test_merge_report_lists_pairs_bytes_and_counts():
    tok = cybpe.train(["aaab aab ab"] * 10, 260, progress=False)
    report = tok.merge_report()
    assert report[0]["bytes"] in (b"aa", b"ab")
    counts = [r["count"] for r in report]
    assert counts[0] >= counts[-1] > 0


def test_training_errors_are_typed():
    with pytest.raises(TrainingError, match="at least 256"):
        cybpe.train(TEXTS, 200, progress=False)
    with pytest.raises(TrainingError, match="= 258"):
        cybpe.train(TEXTS, 257, special_tokens=["<a>", "<b>"], progress=False)
    with pytest.raises(TrainingError, match="empty"):
        cybpe.train([], 300, progress=False)
    with pytest.raises(TrainingError, match="empty"):
        cybpe.train(["", ""], 300, progress=False)
    with pytest.raises(InvalidParameterError, match="single str"):
        cybpe.train("just one text", 300, progress=False)
    with pytest.raises(CorpusError, match="not int"):
        cybpe.train([1, 2], 300, progress=False)
    with pytest.raises(InvalidParameterError, match="tie"):
        cybpe.train(TEXTS, 300, tie_break="random", progress=False)


def test_training_is_deterministic_and_order_independent():
    a = cybpe.train(TEXTS, 2000, progress=False)
    b = cybpe.train(list(reversed(TEXTS)), 2000, progress=False)
    assert a.vocab == b.vocab


def test_progress_goes_to_stderr_only_when_asked(capsys):
    cybpe.train(TEXTS[:3], 400, progress=False)
    assert capsys.readouterr().err == ""
    cybpe.train(TEXTS[:3], 400, progress=None)  # not a terminal under pytest: silent
    assert capsys.readouterr().err == ""
    cybpe.train(TEXTS[:3], 400, progress=True)
    err = capsys.readouterr().err
    assert "counting" in err and "B/s" in err and "merging" in err and "merges" in err


def test_merge_report_survives_save_and_load(tmp_path):
    tok = cybpe.train(TEXTS, 600, progress=False)
    tok.save(tmp_path / "t.json")
    again = cybpe.Tokenizer.load(tmp_path / "t.json")
    assert again.merge_report() == tok.merge_report()
    assert [r["new_id"] for r in tok.merge_report()] == list(range(256, 600))
