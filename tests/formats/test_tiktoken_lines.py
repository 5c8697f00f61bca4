"""The compiled ``.tiktoken`` line pass (cybpe/formats/tiktoken_lines.pyx) against a line-by-line
Python reference built on :func:`cybpe.formats.b64.strict_b64decode`: same tokens when all is
well, None exactly when the reference refuses a line."""

from __future__ import annotations

import base64
import binascii

from hypothesis import given, settings
from hypothesis import strategies as st

from cybpe.formats.b64 import strict_b64decode
from cybpe.formats.tiktoken_lines import rank_lines_tokens
from support import B64_ACCEPTED as ACCEPTED, examples
from support import B64_ALPHABET as ALPHABET
from support import B64_REFUSED as REFUSED


def _reference(body: bytes):
    """The tokens of ``body`` by the format's rule, one line at a time, or None."""
    tokens = []
    for i, line in enumerate(body.split(b"\n")):
        fields = line.split(b" ")
        if len(fields) != 2 or not fields[0] or fields[1] != b"%d" % i:
            return None
        try:
            tokens.append(strict_b64decode(fields[0]))
        except (binascii.Error, ValueError):
            return None
    return tokens


def _file(fields: list[str], ranks=None) -> bytes:
    ranks = range(len(fields)) if ranks is None else ranks
    return b"\n".join(f.encode("latin-1") + b" %d" % r for f, r in zip(fields, ranks))


def test_hostile_fields_and_known_tokens():
    good = [t for t in ACCEPTED if t]
    assert rank_lines_tokens(_file(good)) == [ACCEPTED[t] for t in good]
    for text in REFUSED + ["", "QQ==\t", "QQ==\r", "QQ==\x00", "\xffQQ="]:
        body = _file(good + [text] + good)
        assert rank_lines_tokens(body) is None, text
        assert _reference(body) is None, text
    every_byte = base64.b64encode(bytes(range(256))).decode()
    assert rank_lines_tokens(_file([every_byte])) == [bytes(range(256))]


def test_hostile_line_structure():
    lines = [base64.b64encode(bytes([b])) + b" %d" % b for b in range(256)]
    body = b"\n".join(lines)
    assert rank_lines_tokens(body) == [bytes([b]) for b in range(256)]
    cases = [
        body + b"\n", b"\n" + body, body.replace(b" 17\n", b"  17\n"), body.replace(b" 17\n", b" 017\n"),
        body.replace(b" 17\n", b" +17\n"), body.replace(b" 17\n", b" 18\n"), body.replace(b" 17\n", b" 1_7\n"),
        body.replace(b" 17\n", b" 17 \n"), body.replace(b" 17\n", b"\t17\n"), body.replace(b" 17\n", b" 17\r\n"),
        body.replace(b" 17\n", b" 17\n\n"), body.replace(b" 17\n", b"\n"), body[:-1], body + b" ",
        body[:-4], b"", b" ", b"\n", b"QQ== 1", b"QQ==0", b"QQ== 0 QQ== 1",
    ]
    for case in cases:
        assert rank_lines_tokens(case) is None, case[-40:]
        assert _reference(case) is None, case[-40:]


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET + " \n\t-_", max_size=10)
                | st.binary(min_size=1, max_size=9).map(lambda b: base64.b64encode(b).decode()),
                min_size=1, max_size=12),
       st.lists(st.integers(0, 13), max_size=12) | st.none())
def test_agrees_with_the_line_by_line_reference(fields, ranks):
    body = _file(fields, ranks)
    assert rank_lines_tokens(body) == _reference(body)


def test_ranks_past_powers_of_ten():
    tokens = [b"%d" % i for i in range(1234)]
    body = b"\n".join(base64.b64encode(t) + b" %d" % i for i, t in enumerate(tokens))
    assert rank_lines_tokens(body) == tokens
