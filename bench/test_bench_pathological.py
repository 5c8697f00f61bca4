"""Pathological inputs, one encode call each: cybpe vs tiktoken (which crashes on spaces+a),
bpe-openai (optional: pip install bpe-openai; its Rust backend is called directly), fastokens and
quicktok (optional, in the bench extra; their own cl100k_base) and nanotok (optional; it loads
the same peer tokenizer.json as in the encode suite). fastokens and quicktok are first tried on
each input in a child process: one that crashes there or takes over 120 s is reported as such
and not run here. Each round encodes a variant of its input that no library has seen (another
seed, or a few characters shorter), so a cache of whole pieces answers no round; every peer's
ids are checked against cybpe's (``extra_info["ids_identical"]``).

python -m pytest bench/test_bench_pathological.py --benchmark-group-by=group
"""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

import cybpe
from bench_support import cl100k_ranks_path, peer_tokenizer_json

BASE64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _random_text(alphabet: str, size: int, seed: int) -> str:
    rng = random.Random(seed)  # one generator: a new one per character repeats one character
    return "".join(rng.choice(alphabet) for _ in range(size))


# Each input's variant k: the random ones from seed k, the repeated ones k characters shorter.
# Every round and the ids check get a variant of their own, so that no library answers a
# round from a cache of what it encoded before (fastokens keeps whole pieces: its second call
# on the same 1 MB of random letters took 3.5 ms against 340-520 ms for the first).
MAKERS = {
    "a*1M": lambda k: "a" * (1_000_000 - k),
    "letters-1M": lambda k: _random_text("abcdefghijklmnopqrstuvwxyz", 1_000_000, 2 * k),
    "base64-1M": lambda k: _random_text(BASE64_ALPHABET, 1_000_000, 2 * k + 1),
    "spaces-1M+a": lambda k: " " * (1_000_000 - k) + "a",
    "carets-1M": lambda k: "^" * (1_000_000 - k),
    "newlines-1M": lambda k: "\n" * (1_000_000 - k),
}
ROUNDS = 3


@pytest.fixture(scope="module")
def tok():
    return cybpe.Tokenizer.from_tiktoken(cl100k_ranks_path())


@pytest.fixture(scope="module")
def nanotok_encode(tok, tmp_path_factory):
    nanotok = pytest.importorskip("nanotok")
    path = peer_tokenizer_json(tok.vocab.tokens, tmp_path_factory.mktemp("peer") / "tokenizer.json")
    return nanotok.Tokenizer.from_file(str(path)).encode


# Each peer's cl100k_base encode, as a line of Python (run here and in the child).
PEERS = {
    "fastokens": "import fastokens; _t = fastokens.Tokenizer.from_tiktoken({path!r}, encoding='cl100k_base'); "
                 "encode = lambda s: _t.encode(s, add_special_tokens=False).ids",
    "quicktok": "import quicktok; encode = quicktok.get_encoding('cl100k_base').encode",
}


def peer_encode(lib: str, name: str):
    """The peer's encode, after a child process has survived this input with it."""
    pytest.importorskip({"fastokens": "fastokens", "quicktok": "quicktok"}[lib])
    setup = PEERS[lib].format(path=str(cl100k_ranks_path()))
    child = (f"import sys; sys.path.insert(0, {str(__import__('pathlib').Path(__file__).parent)!r}); "
             f"from test_bench_pathological import MAKERS; {setup}; print(len(encode(MAKERS[{name!r}](0))))")
    try:
        done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.skip(f"{lib} took over 120 s on {name}")
    if done.returncode != 0:
        pytest.skip(f"{lib} crashed on {name} (exit {done.returncode}): {done.stderr.strip()[-200:]}")
    scope: dict = {}
    exec(setup, scope)
    return scope["encode"]


@pytest.mark.parametrize("name", list(MAKERS))
@pytest.mark.parametrize("lib", ["cybpe", "tiktoken", "bpe-openai", "fastokens", "quicktok", "nanotok"])
def test_pathological(benchmark, tok, lib, name, request):
    """One call per round, each on a variant of the input no library has seen (variants 1..3;
    variant 0 is the crash probe's); the ids of the last round's input are then compared with
    cybpe's (one more call of each)."""
    benchmark.group = f"pathological {name}"
    if lib in PEERS:
        encode = peer_encode(lib, name)
    elif lib == "cybpe":
        encode = tok.encode_ordinary
    elif lib == "bpe-openai":
        bindings = pytest.importorskip("bpe_openai._bindings")
        encode = bindings.tokenizer_for_encoding("cl100k_base").encode
    elif lib == "nanotok":
        encode = request.getfixturevalue("nanotok_encode")
    else:
        tiktoken = pytest.importorskip("tiktoken")
        if name == "spaces-1M+a":
            pytest.skip("tiktoken 0.14 panics (fancy-regex stack overflow) on this input")
        encode = tiktoken.Encoding("cl100k", pat_str=tok.pretokenizer.pattern, special_tokens={},
                                   mergeable_ranks={b: i for i, b in enumerate(tok.vocab.tokens)}).encode_ordinary
    texts = [MAKERS[name](k) for k in range(1, ROUNDS + 1)]
    rounds = iter(texts)
    benchmark.pedantic(encode, setup=lambda: ((next(rounds),), {}), rounds=ROUNDS, iterations=1)
    if lib != "cybpe":
        benchmark.extra_info["ids_identical"] = list(encode(texts[-1])) == tok.encode_ordinary(texts[-1])
