"""The rank encoder core: its two merge paths, the pure-Python reference, and tiktoken parity."""

from __future__ import annotations

import base64
import functools
import itertools
import importlib.util
import json
import pickle
import random
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import cybpe
from cybpe.encode.encoder import RankEncoder
from cybpe.reference.encoder import (
    all_splits_table,
    merges_table,
    reference_encode,
    reference_encode_piece,
    reference_encode_piece_with_pairs,
    token_ids_of,
)
from support import (
    HANG_GUARD_SECONDS,
    all_split_merges,
    examples,
    random_vocabulary,
    textbook_bpe,
)
from cybpe.errors import EncodingError, FormatError, InvalidParameterError, InvalidTokenError

# Pieces are taken from at most this many characters of each eval file (all of it when slow).
QUICK_CHARS_PER_FILE = 40_000

# ---------------------------------------------------------------- a tiny vocabulary (no shared/)

TINY_ALPHABET = b"abc \n"


TINY_TOKENS = random_vocabulary(7, TINY_ALPHABET, 120, (2, 7), shuffle_bytes=True)
TINY_MERGES = all_split_merges(TINY_TOKENS)
random.Random(3).shuffle(TINY_MERGES)  # rank order unrelated to ids: exercises rank -> new id
TINY_SPECIALS = {1000: b"<|end|>", 400: b"<|pad|>"}

TINY_CONFIGS = {
    "all-splits": dict(merges=None, whole_piece_lookup=True),
    "all-splits-no-lookup": dict(merges=None, whole_piece_lookup=False),
    "merges": dict(merges=TINY_MERGES, whole_piece_lookup=True),
    "merges-no-lookup": dict(merges=TINY_MERGES, whole_piece_lookup=False),
}


@pytest.fixture(scope="module", params=list(TINY_CONFIGS))
def tiny(request):
    config = TINY_CONFIGS[request.param]
    encoder = RankEncoder(TINY_TOKENS, config["merges"],
                          whole_piece_lookup=config["whole_piece_lookup"],
                          special_tokens=TINY_SPECIALS)
    return encoder, config


def _tiny_reference(piece: bytes, config) -> list[int]:
    return reference_encode([piece], TINY_TOKENS, config["merges"],
                            whole_piece_lookup=config["whole_piece_lookup"])


def _all_paths(encoder: RankEncoder, piece: bytes) -> list[int]:
    """encode_piece, after checking that every merge path agrees with it."""
    ids = encoder.encode_piece(piece)
    assert encoder._encode_piece_linear(piece) == ids, piece
    assert encoder._encode_piece_heap(piece) == ids, piece
    assert encoder._encode_piece_bucket(piece) == ids, piece
    assert encoder._encode_piece_runs(piece) == ids, piece
    return ids


def _long_paths(encoder: RankEncoder, piece: bytes) -> list[int]:
    """_all_paths without the quadratic linear path, for pieces of thousands of bytes."""
    ids = encoder._encode_piece_heap(piece)
    assert encoder.encode_piece(piece) == ids
    assert encoder._encode_piece_bucket(piece) == ids
    assert encoder._encode_piece_runs(piece) == ids
    return ids


tiny_pieces = st.binary(max_size=0) | st.lists(
    st.sampled_from(list(TINY_ALPHABET) + [0, 255]), max_size=300
).map(bytes)


@settings(max_examples=examples(150), deadline=None)
@given(piece=tiny_pieces)
def test_tiny_paths_equal_reference(tiny, piece):
    encoder, config = tiny
    assert _all_paths(encoder, piece) == _tiny_reference(piece, config)


def test_tiny_long_pieces_equal_reference(tiny):
    encoder, config = tiny
    rng = random.Random(11)
    for alphabet in (b"a", b"ab", b"abc ", TINY_ALPHABET):
        piece = bytes(rng.choice(alphabet) for _ in range(rng.randint(500, 1500)))
        assert _all_paths(encoder, piece) == _tiny_reference(piece, config)


def test_tiny_runs_of_one_byte_equal_reference(tiny):
    """The run-length path against the reference on every short run, and against the heap on
    long ones. The tiny vocabularies rank longer tokens before their parts at random, which
    forces the run-length path's one-merge rounds and its giving up."""
    encoder, config = tiny
    for byte in TINY_ALPHABET + b"\x00":
        for n in range(1, 90):
            piece = bytes([byte]) * n
            assert _all_paths(encoder, piece) == _tiny_reference(piece, config), piece
        for n in (255, 256, 1000, 2047, 2048, 5001, 100_000):
            _long_paths(encoder, bytes([byte]) * n)


def test_tiny_bucket_queue_equals_heap(tiny):
    """Pieces long enough for the bucket queue. The tiny ranks fall as parts grow far more
    often than a trained vocabulary's, which exercises paused buckets."""
    encoder, _ = tiny
    rng = random.Random(23)
    for alphabet in (b"ab", b"abc ", TINY_ALPHABET, TINY_ALPHABET + b"\x00\xff"):
        for n in (2048, 2049, 3000, 20_000):
            piece = bytes(rng.choice(alphabet) for _ in range(n))
            _long_paths(encoder, piece)
    piece = b"ab" * 3000 + b"c" * 3000 + b"a b" * 1000  # long runs next to long periods
    _long_paths(encoder, piece)


def _dense_tokens(seed: int) -> list[bytes]:
    """The 256 bytes, then every string of 2..6 letters over "ab" and runs of "c" up to 12,
    in a random order: overlapping pairs of equal rank and ranks that fall as parts grow are
    everywhere, unlike in a trained vocabulary."""
    rng = random.Random(seed)
    words = [bytes(w) for k in range(2, 7) for w in itertools.product(b"ab", repeat=k)]
    words += [b"c" * k for k in range(2, 13)]
    rng.shuffle(words)
    return [bytes([b]) for b in range(256)] + words


@pytest.fixture(scope="module", params=[("all-splits", 1), ("all-splits", 2),
                                        ("merges", 3), ("merges", 4)],
                ids=lambda p: f"{p[0]}-{p[1]}")
def dense(request):
    kind, seed = request.param
    tokens = _dense_tokens(seed)
    merges = None
    if kind == "merges":
        merges = all_split_merges(tokens)
        random.Random(seed).shuffle(merges)
    encoder = RankEncoder(tokens, merges, whole_piece_lookup=False)
    reference = functools.partial(reference_encode, tokens=tokens, merges=merges,
                                  whole_piece_lookup=False)
    return encoder, lambda piece: reference([piece])


def test_dense_vocabulary_all_paths_equal_reference(dense):
    encoder, reference = dense
    rng = random.Random(31)
    for _ in range(300):
        alphabet = rng.choice([b"ab", b"abc", b"c", b"a", b"aab"])
        piece = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 200)))
        assert _all_paths(encoder, piece) == reference(piece), piece
    for n in range(2, 200):
        assert _all_paths(encoder, b"c" * n) == reference(b"c" * n), n


def test_dense_vocabulary_long_pieces(dense):
    encoder, _ = dense
    rng = random.Random(37)
    for alphabet in (b"ab", b"abc", b"aaab", b"c"):
        for n in (2048, 2500, 6000, 30_000):
            _long_paths(encoder, bytes(rng.choice(alphabet) for _ in range(n)))
    for n in (2048, 4097, 100_001):
        _long_paths(encoder, b"c" * n)


def test_merge_ids_that_follow_ranks_and_ones_that_do_not():
    """A merge list whose k-th merge makes token 256 + k (as textbook training appends tokens,
    and as GPT-2 and Qwen3 files are laid out) lets merges compute ids from ranks; one
    token out of place anywhere must send every merge back to the rank -> id table. Both
    against the reference, on every merge path."""
    rng = random.Random(5)
    words = [[rng.choice(b"abcde ") for _ in range(rng.randint(3, 12))] for _ in range(400)]
    tokens = [bytes([b]) for b in range(256)]
    merges = textbook_bpe(tokens, [list(w) for w in words], 150)
    assert len(merges) == 150 and all(tokens[256 + k] == tokens[a] + tokens[b]
                                      for k, (a, b) in enumerate(merges))
    # The same merges with the last two made tokens' ids swapped: ids no longer follow ranks.
    swapped = tokens[:-2] + [tokens[-1], tokens[-2]]
    last = len(tokens) - 1
    renumber = {last: last - 1, last - 1: last}
    swapped_merges = [(renumber.get(a, a), renumber.get(b, b)) for a, b in merges]
    pieces = [bytes(rng.choice(b"abcde ") for _ in range(rng.randint(2, 60))) for _ in range(300)]
    pieces += [bytes(w) for w in words[:100]]
    for vocab, vocab_merges in ((tokens, merges), (swapped, swapped_merges)):
        encoder = RankEncoder(vocab, vocab_merges, whole_piece_lookup=False)
        for piece in pieces:
            want = reference_encode([piece], vocab, vocab_merges, whole_piece_lookup=False)
            assert _all_paths(encoder, piece) == want, (piece, vocab is swapped)


def test_runs_under_many_rank_orders():
    """The run-length path against the heap for runs of one byte, under 400 random rank orders
    of the tokens "c" * 2 .. "c" * 12 (and a few mixed tokens): reaches the orders in which
    merging a whole run at once would differ from one merge at a time."""
    for seed in range(400):
        rng = random.Random(seed)
        words = [b"c" * k for k in range(2, 13)] + [b"cd", b"dc", b"ccd"]
        rng.shuffle(words)
        tokens = [bytes([b]) for b in range(256)] + words
        merges = None
        if seed % 2:
            merges = all_split_merges(tokens)
            rng.shuffle(merges)
        encoder = RankEncoder(tokens, merges, whole_piece_lookup=False)
        for n in range(2, 150):
            piece = b"c" * n
            assert encoder._encode_piece_runs(piece) == encoder._encode_piece_heap(piece), (
                seed, n)


def test_tiny_table_sizes():
    assert RankEncoder(TINY_TOKENS).pair_table_size == len(all_splits_table(TINY_TOKENS))
    doubled = TINY_MERGES + TINY_MERGES[:10]  # a repeated pair keeps its first rank
    encoder = RankEncoder(TINY_TOKENS, doubled)
    assert encoder.pair_table_size == len(merges_table(TINY_TOKENS, doubled)) == len(TINY_MERGES)


def test_merge_pieces_counts_the_ids_of_every_path(tiny):
    """The benchmarks' hook (bench/test_bench_merge_paths.py) merges each piece as encode_piece
    does, on every path, and refuses ends that do not fit the data."""
    encoder, config = tiny
    rng = random.Random(5)
    pieces = [bytes(rng.choice(TINY_ALPHABET) for _ in range(rng.randint(2, 60))) for _ in range(200)]
    pieces.append(b"a" * 3000)
    data = b"".join(pieces)
    ends = np.cumsum([len(p) for p in pieces])
    # the reference BPE of each piece, with no whole-piece lookup (_merge_pieces has none)
    expected = sum(len(reference_encode([p], TINY_TOKENS, config["merges"], whole_piece_lookup=False))
                   for p in pieces)
    for path in range(5):
        assert encoder._merge_pieces(data, ends, path, 2) == expected
    assert encoder._merge_pieces(data, [], 0) == 0
    with pytest.raises(ValueError):
        encoder._merge_pieces(data, [len(data) + 1])
    with pytest.raises(ValueError):
        encoder._merge_pieces(data, [5, 3])


def test_pair_reference_equals_bytes_reference():
    """B.5: BPE over the all-splits id-pair table is tiktoken's bytes-keyed BPE."""
    ids, table = token_ids_of(TINY_TOKENS), all_splits_table(TINY_TOKENS)
    rng = random.Random(5)
    for _ in range(300):
        piece = bytes(rng.choice(TINY_ALPHABET) for _ in range(rng.randint(0, 40)))
        for lookup in (True, False):
            assert reference_encode_piece(piece, ids, whole_piece_lookup=lookup) == (
                reference_encode_piece_with_pairs(piece, ids, table, whole_piece_lookup=lookup))


# ---------------------------------------------------------------- API contract

def _random_text(seed: int, size: int) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.choice(TINY_ALPHABET + b"\xc3\xa9") for _ in range(size))


def _random_ends(data: bytes, seed: int) -> np.ndarray:
    rng = random.Random(seed)
    cuts = sorted(rng.randrange(len(data) + 1) for _ in range(len(data) // 6))
    return np.array(cuts + [len(data)], dtype=np.int64)  # repeated cuts make empty pieces


def test_encode_utf8_equals_pieces_and_round_trips(tiny):
    encoder, _ = tiny
    data = _random_text(1, 5000)
    ends = _random_ends(data, 2)
    starts = [0, *ends[:-1].tolist()]
    pieces = [data[s:e] for s, e in zip(starts, ends.tolist())]
    expected = [i for piece in pieces for i in encoder.encode_piece(piece)]
    ids = encoder.encode_utf8(data, ends)
    assert ids.dtype == np.uint32 and ids.tolist() == expected
    assert encoder.encode_utf8(data, ends.tolist()).tolist() == expected
    assert encoder.decode_bytes(ids) == data
    assert encoder.decode_bytes(expected) == data
    text_pieces = ["ab", "", "c é", "aab\n", "\u00e9\u00e9"]
    joined = "".join(text_pieces).encode()
    assert encoder.encode_str_pieces(text_pieces).tolist() == [
        i for p in text_pieces for i in encoder.encode_piece(p.encode())]
    assert encoder.encode_str_pieces(iter(text_pieces)).tolist() == encoder.encode_str_pieces(
        text_pieces).tolist()
    assert encoder.decode_bytes(encoder.encode_str_pieces(text_pieces)) == joined
    assert encoder.encode_utf8(b"", np.zeros(0, dtype=np.int64)).tolist() == []
    assert encoder.encode_str_pieces([]).tolist() == []


def test_repeated_pieces_reuse_gives_same_ids(tiny):
    """Calls with many pieces memoise pieces that needed BPE; repeats must not change ids."""
    encoder, _ = tiny
    rng = random.Random(4)
    words = [bytes(rng.choice(TINY_ALPHABET) for _ in range(rng.randint(1, 60)))
             for _ in range(40)]
    pieces = [rng.choice(words) for _ in range(3000)]
    expected = [i for piece in pieces for i in encoder.encode_piece(piece)]
    ends = np.cumsum([len(p) for p in pieces], dtype=np.int64)
    assert encoder.encode_utf8(b"".join(pieces), ends).tolist() == expected
    text_pieces = [p.decode("latin-1") for p in pieces]  # same code points, other bytes
    expected = [i for p in text_pieces for i in encoder.encode_piece(p.encode())]
    assert encoder.encode_str_pieces(text_pieces).tolist() == expected


def test_encode_utf8_rejects_bad_ends():
    encoder = RankEncoder(TINY_TOKENS)
    for ends in ([3, 2, 5], [2, 4], [2, 6], [-1, 5], [1.5, 5.0]):
        with pytest.raises(InvalidParameterError):
            encoder.encode_utf8(b"abcab", ends)
    with pytest.raises(InvalidParameterError):
        encoder.encode_utf8(b"abc", [])


def test_token_lookups_and_invalid_ids():
    encoder = RankEncoder(TINY_TOKENS, special_tokens=TINY_SPECIALS)
    assert encoder.n_tokens == len(TINY_TOKENS)
    for i, token in enumerate(TINY_TOKENS):
        assert encoder.token_id(token) == i
        assert encoder.token_bytes(i) == token
    assert encoder.token_id(b"") == -1 and encoder.token_id(b"zzzz") == -1
    assert encoder.token_bytes(1000) == b"<|end|>"
    assert encoder.decode_bytes([TINY_TOKENS.index(b"a"), 400, 1000]) == b"a<|pad|><|end|>"
    for bad in (-1, len(TINY_TOKENS), 999, 1001, 2**40):
        with pytest.raises(InvalidTokenError, match=str(bad)):
            encoder.token_bytes(bad)
        with pytest.raises(InvalidTokenError, match=str(bad)):
            encoder.decode_bytes([97, 98, bad, 99])
        with pytest.raises(InvalidTokenError, match=str(bad)):
            encoder.decode_bytes(np.array([97, bad], dtype=np.int64))
    for bad in (2**70, "a", 1.5, None):
        with pytest.raises(InvalidTokenError):
            encoder.decode_bytes([97, bad])
    with pytest.raises(InvalidTokenError, match=str(2**64 - 1)):
        encoder.decode_bytes(np.array([97, 2**64 - 1], dtype=np.uint64))
    two = np.array([97, 98], dtype=np.uint32)
    assert encoder.decode_bytes(two) == TINY_TOKENS[97] + TINY_TOKENS[98]
    assert encoder.decode_bytes([]) == b""
    with pytest.raises(InvalidParameterError):
        encoder.decode_bytes([[97, 98]])


def test_encode_str_pieces_rejects_what_is_not_text():
    encoder = RankEncoder(TINY_TOKENS)
    with pytest.raises(EncodingError, match="piece 1"):
        encoder.encode_str_pieces(["a", b"b"])
    with pytest.raises(EncodingError, match="piece 2"):
        encoder.encode_str_pieces(["a", "b", "c\ud800"])  # a lone surrogate has no UTF-8
    with pytest.raises(TypeError):
        encoder.encode_piece("a")


def test_lookup_of_tokens_with_a_common_head():
    """Tokens longer than 8 bytes are told apart by their tails, not only by length + head:
    with most of the table holding one head, every probe passes look-alike slots."""
    singles = [bytes([b]) for b in range(256)]
    letters = range(ord("a"), ord("a") + 26)
    long_tokens = [b"abcdefgh" + bytes([c, d]) for c in letters for d in letters]
    tokens = singles + long_tokens + [b"abcdefgh", b"abcdefghA"]
    encoder = RankEncoder(tokens)
    for i, token in enumerate(tokens):
        assert encoder.token_id(token) == i
    ids = token_ids_of(tokens)
    for c in b"ABCDEFGHIJ":
        for d in b"aZ":
            piece = b"abcdefgh" + bytes([d, c])
            assert encoder.token_id(piece) == -1
            assert _all_paths(encoder, piece) == reference_encode_piece(piece, ids)


def test_lookup_of_tokens_alike_in_their_first_16_bytes():
    """A slot holds a token's first 16 bytes: tokens of 9-16 bytes that differ only in their
    last byte, and longer ones that share those 16 bytes and differ after them (read from the
    blob), are each found, and look-alikes that are not tokens are not."""
    singles = [bytes([b]) for b in range(256)]
    letters = range(ord("a"), ord("a") + 20)
    head16 = b"abcdefghijklmnop"
    alike = ([head16[:n - 1] + bytes([c]) for n in (9, 12, 16) for c in letters]
             + [head16 + bytes([c, d]) for c in letters for d in letters]
             + [head16 + b"q" * 16 + bytes([c]) for c in letters])
    tokens = singles + list(dict.fromkeys(alike + [head16, head16[:12], head16[:9]]))
    encoder = RankEncoder(tokens)
    for i, token in enumerate(tokens):
        assert encoder.token_id(token) == i
    ids = token_ids_of(tokens)
    for c in b"XYZ":
        for piece in (head16[:8] + bytes([c]), head16[:15] + bytes([c]), head16 + bytes([c, c]),
                      head16 + bytes([c]) + b"a", head16 + b"q" * 16 + bytes([c]),
                      head16[:10] + bytes([c]) * 6):
            assert encoder.token_id(piece) == -1
            assert _all_paths(encoder, piece) == reference_encode_piece(piece, ids)


def test_pickle_round_trip(tiny):
    encoder, _ = tiny
    clone = pickle.loads(pickle.dumps(encoder))
    assert (clone.n_tokens, clone.pair_table_size, clone.whole_piece_lookup) == (
        encoder.n_tokens, encoder.pair_table_size, encoder.whole_piece_lookup)
    data = _random_text(9, 3000)
    ends = _random_ends(data, 10)
    assert clone.encode_utf8(data, ends).tolist() == encoder.encode_utf8(data, ends).tolist()
    assert clone.token_bytes(1000) == b"<|end|>"


def test_constructor_errors():
    singles = [bytes([b]) for b in range(256)]
    with pytest.raises(FormatError, match=r"byte 65 "):
        RankEncoder(singles[:65] + singles[66:])
    with pytest.raises(FormatError, match=r"token ids 97 and 257"):
        RankEncoder(singles + [b"xy", b"a"])
    with pytest.raises(FormatError, match=r"token id 256 is empty"):
        RankEncoder(singles + [b""])
    with pytest.raises(FormatError, match=r"token id 256 is str"):
        RankEncoder(singles + ["ab"])
    with pytest.raises(FormatError, match=r"merge 1 \(97, 98\)"):
        RankEncoder(singles + [b"bb"], [(98, 98), (97, 98)])
    with pytest.raises(FormatError, match=r"merge 0 \(97, 999\)"):
        RankEncoder(singles, [(97, 999)])
    with pytest.raises(FormatError, match=r"merge 0 \(-1, 97\)"):
        RankEncoder(singles, [(-1, 97)])
    for bad_merges in ([(1, 2, 3)], [(97, 1.0)], [("a", "b")], [97], [(97, 2**70)],
                       np.array([[1, 2, 3]]), np.array([[97.0, 97.0]])):
        with pytest.raises(FormatError, match="merge"):
            RankEncoder(singles + [b"aa"], bad_merges)
    for good_merges in ([(97, 97)], ((np.int64(97), 97),), np.array([[97, 97]], dtype=np.uint16),
                        iter([[97, 97]])):
        assert RankEncoder(singles + [b"aa"], good_merges).encode_piece(b"aaa") == [256, 97]
    with pytest.raises(FormatError, match="collides"):
        RankEncoder(singles, special_tokens={255: b"<s>"})
    with pytest.raises(FormatError):
        RankEncoder(singles, special_tokens={300: b""})
    assert RankEncoder(singles, []).pair_table_size == 0


# ---------------------------------------------------------------- the C API (_encoder.pxd)

C_API_USER = """
from libc.stdint cimport int64_t
from libc.stdlib cimport free
from cybpe._c.types cimport IdBuffer
from cybpe.encode.encoder cimport RankEncoder

def encode_both_ways(RankEncoder encoder, const unsigned char[::1] data, const int64_t[::1] ends):
    cdef IdBuffer each, batch
    cdef Py_ssize_t i, start = 0
    cdef int failed = 0
    each.data = batch.data = NULL
    each.size = each.capacity = batch.size = batch.capacity = 0
    with nogil:
        for i in range(ends.shape[0]):
            failed |= encoder.encode_bytes_into(&data[start], ends[i] - start, &each)
            start = ends[i]
        failed |= encoder.encode_pieces_into(&data[0], &ends[0], ends.shape[0], &batch)
    try:
        assert failed == 0
        return ([each.data[i] for i in range(each.size)],
                [batch.data[i] for i in range(batch.size)])
    finally:
        free(each.data)
        free(batch.data)
"""

C_API_CHECK = """
import pickle, sys
sys.path.insert(0, sys.argv[1])
import use_encoder_c_api
encoder, data, ends, expected = pickle.load(open(sys.argv[2], "rb"))
each, batch = use_encoder_c_api.encode_both_ways(encoder, data, ends)
assert each == expected, "encode_bytes_into"
assert batch == expected, "encode_pieces_into"
print("ok")
"""


@pytest.mark.slow
def test_c_api_from_another_cython_module(tmp_path):
    """Another extension cimports RankEncoder and encodes with the GIL released."""
    import subprocess
    import sys
    # The installed package's .pxd files (a checkout in development, site-packages in CI).
    repo = Path(cybpe.__file__).resolve().parents[1]
    (tmp_path / "use_encoder_c_api.pyx").write_text(C_API_USER)
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\nfrom Cython.Build import cythonize\n"
        f"setup(ext_modules=cythonize('use_encoder_c_api.pyx', include_path=[{str(repo)!r}],"
        " compiler_directives={'language_level': 3}))\n")
    built = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"],
                           cwd=tmp_path, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
    encoder = RankEncoder(TINY_TOKENS, TINY_MERGES)
    data = _random_text(30, 20_000)
    ends = _random_ends(data, 31)
    expected = encoder.encode_utf8(data, ends).tolist()
    with open(tmp_path / "case.pkl", "wb") as f:
        pickle.dump((encoder, data, ends, expected), f)
    checked = subprocess.run([sys.executable, "-c", C_API_CHECK, str(tmp_path),
                              str(tmp_path / "case.pkl")],
                             capture_output=True, text=True, cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout.strip() == "ok", checked.stderr[-3000:]


# ---------------------------------------------------------------- threads

def _concurrent_matches_sequential(encoder: RankEncoder, jobs) -> None:
    expected = [encoder.encode_utf8(data, ends).tolist() for data, ends in jobs]
    results: dict[int, list] = {}
    barrier = threading.Barrier(len(jobs))

    def work(k: int) -> None:
        data, ends = jobs[k]
        barrier.wait()
        results[k] = [encoder.encode_utf8(data, ends).tolist() for _ in range(3)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for k, runs in results.items():
        assert all(run == expected[k] for run in runs)
    assert len(results) == len(jobs)


def test_threads_tiny():
    encoder = RankEncoder(TINY_TOKENS, TINY_MERGES)
    jobs = []
    for seed in (20, 21):
        data = _random_text(seed, 400_000)
        jobs.append((data, _random_ends(data, seed + 100)))
    _concurrent_matches_sequential(encoder, jobs)


# ---------------------------------------------------------------- real vocabularies (shared/)

def _load_tiktoken_file(path: Path) -> list[bytes]:
    tokens = []
    for line in path.read_bytes().splitlines():
        if line:
            encoded, rank = line.split()
            assert int(rank) == len(tokens), "ranks must be 0..n-1 in order"
            tokens.append(base64.b64decode(encoded))
    return tokens


@pytest.fixture(scope="module")
def patterns(shared_dir):
    encodings = json.loads((shared_dir / "vocab" / "tiktoken_encodings.json").read_text())
    return {name: value["pat_str"] for name, value in encodings.items()}


@pytest.fixture(scope="module")
def vocabs(shared_dir):
    """name -> ordinary tokens (id order)."""
    return {name: _load_tiktoken_file(shared_dir / "vocab" / f"{name}.tiktoken")
            for name in ("cl100k_base", "o200k_base")}


@pytest.fixture(scope="module")
def cl100k(vocabs):
    return RankEncoder(vocabs["cl100k_base"])


def _eval_texts(shared_dir: Path, limit) -> dict[str, str]:
    files = sorted((shared_dir / "corpora" / "eval").glob("*/*.txt"))
    return {str(f.relative_to(shared_dir)): f.read_text(encoding="utf-8")[:limit] for f in files}


_piece_cache: dict = {}


def _unique_pieces(shared_dir: Path, pattern: str, full: bool) -> list[bytes]:
    key = (pattern, full)
    if key not in _piece_cache:
        found: set[str] = set()
        for text in _eval_texts(shared_dir, None if full else QUICK_CHARS_PER_FILE).values():
            found.update(regex.findall(pattern, text))
        _piece_cache[key] = sorted(p.encode("utf-8") for p in found)
    return _piece_cache[key]


def _tiktoken_encoding(name: str, pattern: str, tokens: list[bytes]):
    tiktoken = pytest.importorskip("tiktoken")
    return tiktoken.Encoding(f"test_{name}", pat_str=pattern,
                             mergeable_ranks=token_ids_of(tokens), special_tokens={})


@settings(max_examples=examples(150), deadline=None)
@given(piece=st.binary(max_size=200))
def test_cl100k_random_bytes_equal_reference(cl100k, vocabs, piece):
    ids = token_ids_of(vocabs["cl100k_base"])
    assert _all_paths(cl100k, piece) == reference_encode_piece(piece, ids)


def test_cl100k_long_small_alphabet_pieces(cl100k, vocabs):
    ids = token_ids_of(vocabs["cl100k_base"])
    no_lookup = RankEncoder(vocabs["cl100k_base"], whole_piece_lookup=False)
    rng = random.Random(17)
    for alphabet in ("ab", "a b", "0123456789", "ab \n", "xyz.", "^", " \t"):
        piece = "".join(rng.choice(alphabet) for _ in range(rng.randint(300, 1500))).encode()
        expected = reference_encode_piece(piece, ids)
        assert _all_paths(cl100k, piece) == expected
        assert _all_paths(no_lookup, piece) == expected  # too long to be a token


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_runs_of_every_byte(vocabs, name):
    """The run-length path on runs of each of the 256 bytes: the reference on short runs (so
    every token made of one repeated byte takes part), the heap on long ones."""
    ids = token_ids_of(vocabs[name])
    encoder = RankEncoder(vocabs[name], whole_piece_lookup=False)
    for byte in range(256):
        for n in range(2, 70):
            piece = bytes([byte]) * n
            assert _all_paths(encoder, piece) == reference_encode_piece(piece, ids), piece
        for n in (127, 128, 129, 1000, 4099, 65_537):
            _long_paths(encoder, bytes([byte]) * n)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_long_pieces_bucket_queue_equals_heap(shared_dir, vocabs, name):
    """The bucket queue (pieces >= 1024 bytes) against the heap on long pieces of real text
    with its separators removed, random letters, base64, digits and random bytes."""
    encoder = RankEncoder(vocabs[name], whole_piece_lookup=False)
    rng = random.Random(29)
    pieces = {
        "letters": bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(50_000)),
        "base64": base64.b64encode(rng.randbytes(30_000)),
        "digits": bytes(rng.choice(b"0123456789") for _ in range(10_000)),
        "bytes": rng.randbytes(20_000),
        "two-letters": bytes(rng.choice(b"ab") for _ in range(10_000)),
    }
    for path in sorted((shared_dir / "corpora" / "eval").glob("*/*.txt"))[:12]:
        text = path.read_text(encoding="utf-8")[:20_000]
        pieces[path.name] = regex.sub(r"[\s\p{P}]", "", text).encode("utf-8")
    for label, piece in pieces.items():
        assert len(piece) >= 2048, label
        ids = _long_paths(encoder, piece)
        assert encoder.decode_bytes(ids) == piece, label


def test_cl100k_table_matches_python_builder(cl100k, vocabs):
    assert cl100k.pair_table_size == len(all_splits_table(vocabs["cl100k_base"]))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_every_token_encodes_to_itself(vocabs, name):
    """D.5: cl100k and o200k are self-consistent, so BPE alone rebuilds every token."""
    encoder = RankEncoder(vocabs[name], whole_piece_lookup=False)
    failures = [i for i, t in enumerate(vocabs[name]) if encoder.encode_piece(t) != [i]]
    assert failures == []


def _assert_piece_parity(encoder: RankEncoder, enc, pieces: list[bytes]) -> None:
    mismatches = [p for p in pieces if encoder.encode_piece(p) != enc._encode_single_piece(p)]
    assert len(pieces) > 1000
    assert mismatches == [], f"{len(mismatches)} of {len(pieces)} pieces differ: {mismatches[:5]}"


def _parity_test(shared_dir, patterns, vocabs, name, full):
    enc = _tiktoken_encoding(name, patterns[name], vocabs[name])
    encoder = RankEncoder(vocabs[name])
    _assert_piece_parity(encoder, enc, _unique_pieces(shared_dir, patterns[name], full))
    texts = _eval_texts(shared_dir, None if full else 300_000)
    for path in ("corpora/eval/docs/en.txt", "corpora/eval/code/python.txt",
                 "corpora/eval/docs/ru.txt", "corpora/eval/docs/ja.txt"):
        text = texts[path]
        ids = encoder.encode_str_pieces(regex.findall(patterns[name], text))
        assert ids.tolist() == enc.encode_ordinary(text), path


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_tiktoken_parity(shared_dir, patterns, vocabs, name):
    _parity_test(shared_dir, patterns, vocabs, name, full=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_tiktoken_parity_full_corpora(shared_dir, patterns, vocabs, name):
    _parity_test(shared_dir, patterns, vocabs, name, full=True)


def test_threads_cl100k(shared_dir, cl100k, patterns):
    jobs = []
    for path in ("docs/en.txt", "code/python.txt"):
        text = (shared_dir / "corpora" / "eval" / path).read_text(encoding="utf-8")[:400_000]
        lengths = [len(p.encode()) for p in regex.findall(patterns["cl100k_base"], text)]
        jobs.append((text.encode(), np.cumsum(lengths, dtype=np.int64)))
    _concurrent_matches_sequential(cl100k, jobs)


# ---------------------------------------------------------------- Llama-3 (not self-consistent)

def _unicode_to_byte() -> dict[str, int]:
    """The inverse of GPT-2's byte -> printable character map used by ByteLevel vocabularies."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
            *range(ord("®"), ord("ÿ") + 1)]
    mapping, shifted = {}, 0
    for byte in range(256):
        if byte in kept:
            mapping[chr(byte)] = byte
        else:
            mapping[chr(256 + shifted)] = byte
            shifted += 1
    return mapping


@pytest.fixture(scope="module")
def llama3(shared_dir):
    model = json.loads((shared_dir / "vocab" / "llama3" / "tokenizer.json").read_text())["model"]
    to_byte = _unicode_to_byte()
    by_id = {i: bytes(to_byte[c] for c in s) for s, i in model["vocab"].items() if i < 128000}
    tokens = [by_id[i] for i in range(len(by_id))]
    merges = []
    for merge in model["merges"]:
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        merges.append((model["vocab"][left], model["vocab"][right]))
    return tokens, merges


def test_llama3_parity(shared_dir, patterns, llama3):
    tokens, merges = llama3
    # Llama-3's pattern is the original cl100k string.
    enc = _tiktoken_encoding("llama3", patterns["cl100k_base"], tokens)
    pieces = _unique_pieces(shared_dir, patterns["cl100k_base"], full=False)
    all_splits = RankEncoder(tokens)
    _assert_piece_parity(all_splits, enc, pieces)
    from_merges = RankEncoder(tokens, merges)
    assert from_merges.pair_table_size == all_splits.pair_table_size == len(merges)
    _assert_piece_parity(from_merges, enc, pieces)


def test_llama3_needs_whole_piece_lookup(llama3):
    """B.5: 588 Llama-3 tokens do not come out of BPE as themselves (rten #453 counts the same)."""
    tokens, _ = llama3
    bpe_only = RankEncoder(tokens, whole_piece_lookup=False)
    assert sum(bpe_only.encode_piece(t) != [i] for i, t in enumerate(tokens)) == 588
    with_lookup = RankEncoder(tokens)
    assert all(with_lookup.encode_piece(t) == [i] for i, t in enumerate(tokens))


# ---------------------------------------------------------------- pathological pieces

def _pathological(size: int) -> dict[str, bytes]:
    rng = random.Random(size)
    b64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    return {
        "a-run": b"a" * size,
        "lowercase": bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(size)),
        "base64": bytes(rng.choice(b64) for _ in range(size)),
        "caret-run": b"^" * size,
    }


def test_pathological_pieces_finish(cl100k):
    for name, piece in _pathological(1_000_000).items():
        started = time.perf_counter()
        ids = cl100k.encode_piece(piece)
        elapsed = time.perf_counter() - started
        assert elapsed < HANG_GUARD_SECONDS, f"{name}: {elapsed:.1f} s"  # a hang guard, not a speed check
        assert cl100k.decode_bytes(ids) == piece


@pytest.mark.slow
def test_pathological_pieces_equal_reference(cl100k, vocabs):
    ids = token_ids_of(vocabs["cl100k_base"])
    enc = None  # tiktoken is a second opinion here, not a requirement
    if importlib.util.find_spec("tiktoken") is not None:
        enc = _tiktoken_encoding("cl100k_base", "x", vocabs["cl100k_base"])
    for name, piece in _pathological(10_000).items():
        expected = reference_encode_piece(piece, ids)
        assert _all_paths(cl100k, piece) == expected, name
        if enc is not None:
            assert enc._encode_single_piece(piece) == expected, name


def test_ids_list_equals_tolist_and_takes_ints_uncounted(tiny):
    """ids_list hands out shared int objects: the values must equal tolist's. The lists take
    them uncounted (cybpe/encode/id_ints.pxd): building lists moves no count; dropping them
    moves none from Python 3.12 (immortal ints) and lowers it by one per item before, from a
    count that stays far from zero."""
    import sys

    encoder, _ = tiny
    rng = np.random.default_rng(3)
    arrays = [np.array([], dtype=np.uint32), np.array([0, 1, 255, 256], dtype=np.uint32),
              rng.integers(0, encoder.n_tokens, 10_000, dtype=np.uint32),
              np.array([encoder.n_tokens, 1000, 2**32 - 1, 5], dtype=np.uint32)]  # specials
    for array in arrays:
        assert encoder.ids_list(array) == array.tolist()
    probe = encoder.ids_list(np.array([300], dtype=np.uint32))[0]  # not a small-int singleton
    before = sys.getrefcount(probe)
    lists = [encoder.ids_list(np.full(1000, 300, dtype=np.uint32)) for _ in range(50)]
    counted = hasattr(sys, "gettotalrefcount")  # a Py_REF_DEBUG build counts them
    immortal = sys.version_info >= (3, 12)
    assert sys.getrefcount(probe) == before + (50 * 1000 if counted and not immortal else 0)
    assert all(item is probe for item in lists[-1])
    del lists
    assert sys.getrefcount(probe) == before - (0 if counted or immortal else 50 * 1000)
    assert sys.getrefcount(probe) > 1 << 30  # 2^32 - 1 on 3.12 (immortal), about 2^60 before


def test_id_ints_outlive_their_encoder_and_a_larger_one():
    """The ints in result lists are shared by all encoders (id_ints.pxd). A list must stay
    valid after its encoder is gone and after a larger vocabulary has grown the block, and its
    items must be ints in every way but identity."""
    import gc
    import json
    import pickle
    import sys

    from cybpe.encode.encoder import RankEncoder

    rng = np.random.default_rng(7)
    small = RankEncoder([bytes([b]) for b in range(256)] + [b"ab", b"cd"])
    ids = rng.integers(0, small.n_tokens, 5_000, dtype=np.uint32)
    kept = small.ids_list(ids)
    del small
    gc.collect()
    n_large = (1 << 18) + 1000  # more ids than any vocabulary the tests load (o200k: 200k), so
    # that the shared block grows here while `kept` holds ints of the smaller one
    large = RankEncoder([bytes([b]) for b in range(256)] + [b"%d " % i for i in range(n_large - 256)])
    large_ids = rng.integers(0, n_large, 20_000, dtype=np.uint32)
    made = large.ids_list(large_ids)
    del large
    gc.collect()
    assert kept == ids.tolist() and made == large_ids.tolist()
    for value, expected in zip(made[:2_000], large_ids[:2_000].tolist()):
        assert type(value) is int and value == expected and hash(value) == hash(expected)
        assert value + 1 == expected + 1 and value.bit_length() == expected.bit_length()
        assert str(value) == str(expected) and value.to_bytes(4, "little") == expected.to_bytes(4, "little")
    assert pickle.loads(pickle.dumps(made)) == made and json.loads(json.dumps(kept)) == kept
    assert sys.getrefcount(max(made)) > 1 << 30  # a count that never reaches zero
