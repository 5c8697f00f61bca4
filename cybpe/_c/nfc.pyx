"""NFC normalization that asks ``unicodedata`` only about the parts of a text that may change.

``unicodedata.normalize("NFC", text)`` is quick on text already in NFC (CPython's quick check,
about 1 ns a character) but rebuilds the whole text when one character fails that check: a
16,000-character Spanish document with one decomposed accent took 350 us, a Hindi or Tamil one
800-950 us, more than encoding it. Here a compiled quick check (the same rule as CPython's,
over the table ``gen_nfc_tables.py`` writes) walks the text; each run it cannot pass, from the
last starter before it to the next starter after it, is normalized by ``unicodedata`` alone,
and the text is rebuilt only when a run changed. A starter whose quick check is Yes composes
with nothing before it and is never reordered, so NFC treats the parts between such starters
independently: the result is ``unicodedata.normalize("NFC", text)``, character for character.

When the running Python's Unicode is newer than the table's, :func:`nfc` is
``unicodedata.normalize`` itself (the table might not know a new mark).

Thread safety: pure functions over immutable tables; safe from any thread.
"""

import unicodedata

from libc.stdint cimport uint8_t, uint16_t, uint32_t


cdef extern from "Python.h":
    int PyUnicode_KIND(object text)
    void* PyUnicode_DATA(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)

cdef extern from "nfc_tables.h" nogil:
    const char* CYBPE_NFC_UNICODE
    uint32_t CYBPE_NFC_ASK
    uint32_t CYBPE_NFC_FIRST
    uint32_t cybpe_nfc_byte(uint32_t cp)

ctypedef fused code_unit:
    uint16_t
    uint32_t


cdef Py_ssize_t quick_span(const code_unit* s, Py_ssize_t i, Py_ssize_t n, Py_ssize_t* last) noexcept nogil:
    """From ``s[i]`` (the text's start or a starter), the index of the first character where
    the quick check is not Yes (``n`` when none is); ``*last`` becomes the index of the last
    starter before it (left alone when there is none)."""
    cdef uint32_t b, prev = 0
    cdef uint32_t cp
    while i < n:
        cp = s[i]
        if cp < CYBPE_NFC_FIRST:
            last[0] = i
            prev = 0
        else:
            b = cybpe_nfc_byte(cp)
            if b == 0:
                last[0] = i
            elif b == CYBPE_NFC_ASK or b < prev:  # may compose or is no NFC; marks out of order
                return i
            prev = b
        i += 1
    return n


cdef Py_ssize_t next_starter(const code_unit* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """The index of the first starter at or after ``s[i]``, else ``n``."""
    while i < n and s[i] >= CYBPE_NFC_FIRST and cybpe_nfc_byte(s[i]) != 0:
        i += 1
    return i


#: Runs longer than this are put in canonical order here before ``unicodedata`` sees them.
LONG_RUN = 64


def long_run_nfc(str run):
    """NFC of a long run: each character's own decomposition, each stretch of marks stably
    sorted by combining class (canonical order: what NFD would give), then ``unicodedata``'s
    NFC, which only composes what comes to it in order. Why: CPython orders marks by insertion
    sort, quadratic in a run's length (40,000 marks out of order took 1.3 s, a megabyte of
    them minutes); this is O(n log n) with the same result."""
    decomposed = "".join([unicodedata.normalize("NFD", c) for c in run])  # each one is short
    return unicodedata.normalize("NFC", "".join(canonical_order(decomposed, unicodedata.combining)))


def canonical_order(items, combining_class) -> list:
    """``items`` (decomposed characters, or anything ``combining_class`` gives a canonical
    combining class for) in canonical order: each stretch of items of non-zero class stably
    sorted by class (equal classes keep their order), the others where they stand."""
    ordered = []
    marks = []
    for item in items:
        if combining_class(item):
            marks.append(item)
            continue
        if marks:
            ordered += sorted(marks, key=combining_class)
            marks = []
        ordered.append(item)
    if marks:
        ordered += sorted(marks, key=combining_class)
    return ordered


cdef object nfc_of(const code_unit* s, Py_ssize_t n, str text):
    cdef Py_ssize_t i = 0, stop, start = 0, end, copied = 0  # start: a run's first character
    parts = None
    while True:
        stop = quick_span(s, i, n, &start)
        if stop == n:
            break
        end = next_starter(s, stop + 1, n)
        run = text[start:end]
        normalized = unicodedata.normalize("NFC", run) if end - start <= LONG_RUN else long_run_nfc(run)
        if normalized != run:
            if parts is None:
                parts = []
            parts.append(text[copied:start])
            parts.append(normalized)
            copied = end
        i = start = end
    if parts is None:
        return text
    parts.append(text[copied:])
    return "".join(parts)


#: The Unicode version of the compiled table (``nfc_tables.h``).
table_unicode_version = (<bytes>CYBPE_NFC_UNICODE).decode("ascii")


def table_serves(unidata_version: str) -> bool:
    """Whether the table can stand in for a ``unicodedata`` of this Unicode version (one no
    newer than the table's: see ``gen_nfc_tables.py``)."""
    def key(version):
        return tuple(int(p) for p in version.split("."))
    return key(unidata_version) <= key(table_unicode_version)


def table_byte(int cp) -> int:
    """The table's byte for code point ``cp`` (0 <= cp < 0x110000): 0 for a starter nothing
    composes with, a mark's combining class, or 255 (quick check Maybe or No). For tests and
    the generator's checks."""
    if not 0 <= cp < 0x110000:
        raise ValueError(f"not a code point: {cp}")
    return cybpe_nfc_byte(cp)


cdef bint table_serves_runtime = table_serves(unicodedata.unidata_version)


def nfc(str text not None):
    """``unicodedata.normalize("NFC", text)``: the same characters, returned as ``text`` itself
    when nothing changes. Lone surrogates are kept, as ``unicodedata`` keeps them."""
    cdef int kind = PyUnicode_KIND(text)
    if kind == 1:  # Latin-1: every character is a starter that nothing composes with
        return text
    if not table_serves_runtime:
        return unicodedata.normalize("NFC", text)
    if kind == 2:
        return nfc_of(<const uint16_t*>PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), text)
    return nfc_of(<const uint32_t*>PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), text)
