"""Where test material lives. Material outside the repo is found through one setting, ``CYBPE_SHARED``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import cybpe

#: tests/ (the test files sit in one folder per package stage below it) and the checkout or
#: unpacked sdist that holds it (README.md, bench/).
TESTS_DIR = Path(__file__).resolve().parent
REPO_DIR = TESTS_DIR.parent
DATA_DIR = TESTS_DIR / "data"
#: The UDHR sample ships inside the package (``cybpe bench`` and the README use it), so tests read
#: it from the cybpe they test: the source tree in a checkout, site-packages for an installed wheel.
UDHR_DIR = Path(cybpe.__file__).parent / "data" / "udhr"
PLUGIN_EXAMPLE_DIR = TESTS_DIR / "plugin_example"
COMPILED_PLUGIN_EXAMPLE_DIR = TESTS_DIR / "compiled_plugin_example"

SKIP_REASON = (
    "the shared corpora/vocabularies are absent (set CYBPE_SHARED to the folder that holds "
    "corpora/ and vocab/; a plain clone has only tests/data)"
)


def shared_path() -> Path | None:
    """``$CYBPE_SHARED``, else ``../shared`` next to the repository; None when absent."""
    configured = os.environ.get("CYBPE_SHARED")
    path = Path(configured) if configured else Path(__file__).resolve().parents[2] / "shared"
    return path if path.is_dir() else None


def eval_texts(shared: Path, size: int) -> list[tuple[str, str]]:
    """(file name, first ``size`` characters) of every evaluation document and code file."""
    files = sorted((shared / "corpora" / "eval" / "docs").glob("*.txt"))
    files += sorted((shared / "corpora" / "eval" / "code").glob("*.txt"))
    assert files, "no evaluation corpora found"
    return [(f.name, f.read_text(encoding="utf-8")[:size]) for f in files]


def write_every_format(tokenizer, folder, text: str) -> dict[str, str]:
    """Save ``tokenizer`` in every format cybpe reads (and chunk counts of ``text``) into
    ``folder``: the paths by kind (native, tiktoken, hf, gpt2-encoder, gpt2-merges, counts)."""
    import cybpe

    paths = {kind: os.path.join(folder, name) for kind, name in (
        ("native", "tok.json"), ("tiktoken", "tok.tiktoken"), ("hf", "tokenizer.json"),
        ("gpt2-encoder", "encoder.json"), ("gpt2-merges", "vocab.bpe"), ("counts", "counts.json"))}
    tokenizer.save(paths["native"])
    tokenizer.to_tiktoken(paths["tiktoken"])
    tokenizer.to_hf(paths["hf"])
    # GPT-2 files always mean GPT-2's pre-tokenizer (to_gpt2 refuses any other): write the same
    # vocabulary under it.
    as_gpt2 = tokenizer if tokenizer.pretokenizer.name == "gpt2" else cybpe.Tokenizer(tokenizer.vocab, "gpt2")
    as_gpt2.to_gpt2(paths["gpt2-encoder"], paths["gpt2-merges"])
    cybpe.ChunkCounts("cl100k", sorted(tokenizer.special_tokens)).update([text]).save(paths["counts"])
    return paths


def run_cli(*args, input: bytes | None = None, env: dict | None = None, check: bool = True,
            stdout=None, timeout: float = 180) -> subprocess.CompletedProcess:
    """``python -m cybpe ARGS`` in a subprocess (stdout and stderr captured unless ``stdout`` is
    given); with ``check``, it must exit 0 without a traceback."""
    out = subprocess.run([sys.executable, "-m", "cybpe", *map(str, args)], input=input,
                         capture_output=stdout is None, stdout=stdout,
                         stderr=subprocess.PIPE if stdout is not None else None,
                         env=dict(os.environ, **(env or {})), timeout=timeout)
    if check:
        assert out.returncode == 0, out.stderr.decode(errors="replace")
        assert b"Traceback" not in out.stderr
    return out


def random_vocabulary(seed: int, alphabet: bytes, words: int, lengths: tuple[int, int],
                      shuffle_bytes: bool = False) -> list[bytes]:
    """The 256 single bytes (in a shuffled id order when ``shuffle_bytes``), then ``words``
    distinct random strings over ``alphabet`` whose lengths lie in ``lengths`` (inclusive)."""
    import random

    rng = random.Random(seed)
    tokens = [bytes([b]) for b in range(256)]
    if shuffle_bytes:
        rng.shuffle(tokens)
    seen = set(tokens)
    while len(tokens) < 256 + words:
        word = bytes(rng.choice(alphabet) for _ in range(rng.randint(*lengths)))
        if word not in seen:
            seen.add(word)
            tokens.append(word)
    return tokens


def all_split_merges(tokens: list[bytes]) -> list[tuple[int, int]]:
    """Every split of every token into two tokens, as a merges list (ranks in id order)."""
    ids = {token: i for i, token in enumerate(tokens)}
    return [(ids[t[:k]], ids[t[k:]]) for t in tokens for k in range(1, len(t))
            if t[:k] in ids and t[k:] in ids]
