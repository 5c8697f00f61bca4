"""Text → ids in one GIL-free call: a compiled scanner feeding the rank encoder.

Performance notes (the timings: docs/history.md, "Text to ids in one call")
-----------------
* Splitting and encoding run under one ``nogil`` block, the piece ends in a malloc'ed C buffer
  (no numpy array and validation between two Python-level calls), so threads of
  ``encode_batch`` hold the GIL only to enter and to build the result array.
* ``encode_text`` is the whole of ``Tokenizer.encode_ordinary``: str in, list out, with no numpy
  array between. A compact ASCII str is scanned in place (its data is its UTF-8), and texts
  shorter than RELEASE_GIL_BYTES keep the GIL: releasing and taking it back costs about as much
  as encoding a few words.
* A non-ASCII str is read through its UTF-8 form. Up to CACHED_UTF8_CHARS characters that is
  the form CPython caches inside the str (``PyUnicode_AsUTF8AndSize``, what a PyO3 library
  such as tiktoken gets for every str), so encoding the same text again skips the conversion.
  A longer text gets a temporary copy, freed after the call, so a huge string does not gain a
  lasting second copy. The batch calls read their texts the same way
  (``Utf8Texts(..., cache_chars)``).
"""

from libc.stdint cimport int64_t, uint8_t, uint32_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_GET_LENGTH

from cybpe.encode.encoder cimport RankEncoder, ids_array
from cybpe.pretokenize.scanner_api cimport BaseScanner, SCAN_GAVE_UP
from cybpe._c.types cimport IdBuffer, grow_buffer, id_buffer_reserve
from cybpe._c.utf8_texts cimport Utf8Texts, str_utf8
from cybpe._c.utf8 cimport INVALID_CP, decode_cp

import numpy as np

from cybpe.pretokenize.text import clean_surrogates
from cybpe.errors import EncodingError

cdef enum:
    IDS_LIST = 0
    IDS_ARRAY = 1
    IDS_COUNT = 2
    RELEASE_GIL_BYTES = 2048   # texts shorter than this are encoded holding the GIL
    CACHED_UTF8_CHARS = 1 << 20  # non-ASCII texts up to this long keep their UTF-8 form
    RESERVED_IDS_MAX = 1 << 22   # ids reserved before a text at most (16 MiB); past it they grow

#: encode_text outputs: a list of ints, a uint32 array, the number of ids.
OUTPUT_LIST = IDS_LIST
OUTPUT_ARRAY = IDS_ARRAY
OUTPUT_COUNT = IDS_COUNT


# -- the scan + encode step every entry point runs -----------------------------------------------

cdef enum:
    GAVE_UP = -2            # scan_encode: the scanner gave up (SCAN_GAVE_UP); nothing appended
    NO_MEMORY = -1


cdef struct ScanEncode:
    # The C buffers of one call, for one text or a batch: set up by scan_encode_init, filled by
    # scan_encode, released by scan_encode_free (in the caller's ``finally``).
    int64_t* ends           # the piece ends of the text being encoded (reused text after text)
    Py_ssize_t capacity
    Py_ssize_t pieces       # how many: ends[0:pieces] (byte offsets; with limit >= 0, rewritten)
    IdBuffer ids            # every id appended so far, texts one after another
    int64_t* spans          # with offsets: ids' character spans, 2 per id (see char_spans)
    Py_ssize_t span_capacity


cdef inline void scan_encode_init(ScanEncode* w) noexcept nogil:
    w.ends = NULL
    w.capacity = 0
    w.pieces = 0
    w.ids.data = NULL
    w.ids.size = w.ids.capacity = 0
    w.spans = NULL
    w.span_capacity = 0


cdef inline void scan_encode_free(ScanEncode* w) noexcept nogil:
    free(w.ends)
    free(w.ids.data)
    free(w.spans)
    scan_encode_init(w)


cdef int scan_encode(ScanEncode* w, RankEncoder encoder, BaseScanner scanner, const uint8_t* s,
                     Py_ssize_t n, Py_ssize_t limit, bint cut, bint offsets) noexcept nogil:
    """Split s[0:n] (n > 0) with ``scanner`` and append its ids to ``w.ids``: all of them, or
    with ``limit >= 0`` encode_budget's prefix, cut to ``limit`` ids when ``cut``; with
    ``offsets``, their character spans to ``w.spans``. 0, GAVE_UP or NO_MEMORY."""
    cdef Py_ssize_t first = w.ids.size
    cdef Py_ssize_t pieces = scanner.scan_all(s, n, &w.ends, &w.capacity)
    cdef Py_ssize_t reserve = n if limit < 0 else min(n, limit + 1024)
    if pieces < 0:
        return GAVE_UP if pieces == SCAN_GAVE_UP else NO_MEMORY
    w.pieces = pieces
    # A text has at most one id per byte: room for all of them now, not by doubling as they
    # come (the copies of the doubling were ~2.5% of a 16 KB document's encode).
    if id_buffer_reserve(&w.ids, min(reserve, <Py_ssize_t>RESERVED_IDS_MAX)) != 0:
        return NO_MEMORY
    if encode_budget(encoder, s, w.ends, pieces, limit, &w.ids) != 0:
        return NO_MEMORY
    if cut and limit >= 0 and w.ids.size - first > limit:
        w.ids.size = first + limit
    if offsets and w.ids.size > first:
        if grow_buffer(<void**>&w.spans, &w.span_capacity, 2 * w.ids.size, sizeof(int64_t), 64) != 0:
            return NO_MEMORY
        char_spans(encoder.tables.token_offsets, s, w.ids.data + first, w.ids.size - first,
                   w.spans + 2 * first)
    return 0


cdef inline int raise_if_no_memory(int rc) except -1:
    """MemoryError for NO_MEMORY; any other code is the caller's to read."""
    if rc == NO_MEMORY:
        raise MemoryError()
    return 0


def encode_scanned(RankEncoder encoder, BaseScanner scanner not None, const uint8_t[::1] data):
    """The uint32 ids of UTF-8 ``data``, split by ``scanner`` (any compiled scanner) and
    encoded by ``encoder``. None when the scanner gave up on the text (SCAN_GAVE_UP: the
    caller then splits it with ``scanner.split``)."""
    cdef Py_ssize_t n = data.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.uint32)
    return encode_utf8(encoder, scanner, &data[0], n, IDS_ARRAY)


def encode_text(RankEncoder encoder, BaseScanner scanner not None, str text, int output=IDS_LIST):
    """The ids of ``text`` split by ``scanner`` and encoded by ``encoder``, as a list of ints
    (``output=OUTPUT_LIST``), a uint32 array (``OUTPUT_ARRAY``) or their number
    (``OUTPUT_COUNT``). Lone surrogates become U+FFFD first, as in tiktoken. None when the
    scanner gave up on the text (SCAN_GAVE_UP: the caller splits it with ``scanner.split``)."""
    if output < IDS_LIST or output > IDS_COUNT:
        raise ValueError(f"output must be OUTPUT_LIST, OUTPUT_ARRAY or OUTPUT_COUNT, not {output}")
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    cdef bytes encoded
    if n == 0:
        if output == IDS_COUNT:
            return 0
        return [] if output == IDS_LIST else np.empty(0, dtype=np.uint32)
    cdef Py_ssize_t size
    # CPython keeps a non-ASCII str's UTF-8 form in the str: a second call skips the conversion.
    cdef const uint8_t* utf8 = str_utf8(text, CACHED_UTF8_CHARS, &size)
    if utf8 != NULL:
        return encode_utf8(encoder, scanner, utf8, size, output)
    try:  # longer than CACHED_UTF8_CHARS, or a lone surrogate (cleaned below)
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:
        encoded = clean_surrogates(text).encode("utf-8")
    return encode_utf8(encoder, scanner, <const uint8_t*>PyBytes_AS_STRING(encoded),
                       PyBytes_GET_SIZE(encoded), output)


cdef object encode_utf8(RankEncoder encoder, BaseScanner scanner, const uint8_t* s, Py_ssize_t n,
                        int output):
    """encode_text on s[0:n] (n > 0; the caller keeps s alive and unchanged)."""
    cdef ScanEncode w
    cdef int rc
    scan_encode_init(&w)
    try:
        if n >= RELEASE_GIL_BYTES:
            with nogil:
                rc = scan_encode(&w, encoder, scanner, s, n, -1, False, False)
        else:
            rc = scan_encode(&w, encoder, scanner, s, n, -1, False, False)
        if rc == GAVE_UP:
            return None
        raise_if_no_memory(rc)
        if output == IDS_LIST:
            return encoder.ids_to_list(w.ids.data, w.ids.size)
        if output == IDS_COUNT:
            return w.ids.size
        return ids_array(&w.ids)
    finally:
        scan_encode_free(&w)


def encode_texts_scanned(RankEncoder encoder, BaseScanner scanner not None, list texts):
    """The id lists of many texts, each split by ``scanner`` and encoded, all in one GIL-free
    pass (one call per thread lets threads scale: per-text calls hold the GIL between texts).
    Lone surrogates become U+FFFD first, as in Tokenizer.encode. A text the scanner gives up
    on is split afterwards, with the GIL, by ``scanner.split``."""
    cdef Py_ssize_t j
    cdef int rc = 0
    cdef list gave_up = []
    cdef Utf8Texts batch
    cdef ScanEncode w
    try:
        batch = Utf8Texts(texts, clean_surrogates, CACHED_UTF8_CHARS)
    except TypeError:
        bad = next(t for t in texts if not isinstance(t, str))
        raise EncodingError(f"encode() takes a str, not {type(bad).__name__}") from None
    cdef int64_t* offsets = <int64_t*>malloc((batch.count + 1) * sizeof(int64_t))
    scan_encode_init(&w)
    try:
        if offsets == NULL:
            raise MemoryError()
        offsets[0] = 0
        with nogil:
            for j in range(batch.count):
                if batch.lengths[j]:
                    rc = scan_encode(&w, encoder, scanner, batch.starts[j], batch.lengths[j],
                                     -1, False, False)
                    if rc == GAVE_UP:
                        with gil:
                            gave_up.append(j)
                        rc = 0
                    elif rc != 0:
                        break
                offsets[j + 1] = w.ids.size
        raise_if_no_memory(rc)
        out = [encoder.ids_to_list(w.ids.data + offsets[j], offsets[j + 1] - offsets[j])
               for j in range(batch.count)]
        for j in gave_up:
            out[j] = encoder.encode_str_pieces(scanner.split(clean_surrogates(texts[j]))).tolist()
        return out
    finally:
        free(offsets)
        scan_encode_free(&w)


# -- offsets and token budgets -------------------------------------------------------------------
# A separate path, so that encode_scanned above stays exactly as fast as it was: offsets cost one
# extra pass over the ids and the bytes, and a budget only changes how many pieces are encoded.

cdef void char_spans(const int64_t* token_offsets, const uint8_t* data, const uint32_t* ids,
                     Py_ssize_t n_ids, int64_t* out) noexcept nogil:
    """out[2i], out[2i+1] = the (start, end) character span of ordinary token ids[i], the tokens
    laid end to end over the UTF-8 ``data`` (valid UTF-8: a str's encoding).

    The rule (HF tokenizers' byte-level offsets, with no whitespace trimming): a token covering
    bytes [b, e) spans from the character holding byte b to just past the character holding
    byte e-1. A token made of part of a multi-byte character therefore spans that whole
    character, and so does every other token holding bytes of it."""
    cdef Py_ssize_t i
    cdef int64_t begin = 0, stop, p = 0, starts = 0   # starts = characters begun in data[0:p]
    cdef uint32_t token
    for i in range(n_ids):
        token = ids[i]
        stop = begin + token_offsets[token + 1] - token_offsets[token]
        while p <= begin:          # through the token's first byte
            starts += (data[p] & 0xC0) != 0x80
            p += 1
        out[2 * i] = starts - 1
        while p < stop:            # through its last byte
            starts += (data[p] & 0xC0) != 0x80
            p += 1
        out[2 * i + 1] = starts
        begin = stop


cdef int encode_budget(RankEncoder encoder, const uint8_t* data, int64_t* ends, Py_ssize_t pieces,
                       Py_ssize_t limit, IdBuffer* buf) noexcept nogil:
    """Append the ids of the pieces to buf; with limit >= 0, stop once more than limit ids were
    appended by this call (at a piece end: the ids written are a prefix of the full encoding).
    Every non-empty piece gives at least one id, so a run of (ids still missing) pieces always
    reaches the budget: one encode_pieces_into call per run, usually one in all. Rewrites ends."""
    cdef Py_ssize_t done = 0, take, j
    cdef Py_ssize_t first = buf.size
    cdef int64_t base
    if limit < 0:
        return encoder.encode_pieces_into(data, ends, pieces, buf)
    while done < pieces and buf.size - first <= limit:
        take = limit + 1 - (buf.size - first)
        if take > pieces - done:
            take = pieces - done
        base = ends[done - 1] if done > 0 else 0
        for j in range(done, done + take):  # encode_pieces_into wants ends relative to its data
            ends[j] -= base
        if encoder.encode_pieces_into(data + base, ends + done, take, buf) != 0:
            return -1
        for j in range(done, done + take):
            ends[j] += base
        done += take
    return 0


cdef object spans_array(const int64_t* spans, Py_ssize_t n):
    out = np.empty((n, 2), dtype=np.int64)
    cdef int64_t[:, ::1] view
    if n:
        view = out
        memcpy(&view[0, 0], spans, 2 * n * sizeof(int64_t))
    return out


def encode_scanned_spans(RankEncoder encoder, BaseScanner scanner not None, const uint8_t[::1] data,
                         Py_ssize_t limit=-1, bint offsets=True):
    """(ids, spans) of UTF-8 ``data`` as :func:`encode_scanned` splits and encodes it, in one
    GIL-free pass: ``ids`` uint32, ``spans`` an int64 (n, 2) array of character (start, end)
    offsets (see char_spans), or None when ``offsets`` is false.

    With ``limit >= 0`` the encoding stops at the first piece end past ``limit`` ids: the ids are
    a prefix of the full encoding, all of it when it has at most ``limit`` ids, else more than
    ``limit`` of them. None when the scanner gave up on the text (SCAN_GAVE_UP)."""
    cdef Py_ssize_t n = data.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.uint32), (np.empty((0, 2), dtype=np.int64) if offsets else None)
    cdef ScanEncode w
    cdef int rc
    scan_encode_init(&w)
    try:
        with nogil:
            rc = scan_encode(&w, encoder, scanner, &data[0], n, limit, False, offsets)
        if rc == GAVE_UP:
            return None
        raise_if_no_memory(rc)
        return ids_array(&w.ids), (spans_array(w.spans, w.ids.size) if offsets else None)
    finally:
        scan_encode_free(&w)


cdef void piece_indexes(const int64_t* token_offsets, const uint32_t* ids, Py_ssize_t n_ids,
                        const int64_t* ends, Py_ssize_t pieces, int64_t* out) noexcept nogil:
    """out[i] = the index of the piece (ends: the pieces' byte ends) holding ordinary token
    ids[i], the tokens laid end to end over the pieces: a piece's ids cover it exactly."""
    cdef Py_ssize_t i, piece = 0
    cdef int64_t at = 0
    cdef uint32_t token
    for i in range(n_ids):
        out[i] = piece
        token = ids[i]
        at += token_offsets[token + 1] - token_offsets[token]
        while piece < pieces and at >= ends[piece]:
            piece += 1


def encode_scanned_words(RankEncoder encoder, BaseScanner scanner not None, const uint8_t[::1] data):
    """(ids, spans, pieces) of UTF-8 ``data`` (valid UTF-8: a str's encoding), in one GIL-free
    pass: encode_scanned_spans's ids and character spans, and for each id the index of the
    pre-tokenizer piece it comes from (an int64 array: HF's word ids, counted from 0). None
    when the scanner gave up on the text."""
    cdef Py_ssize_t n = data.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.uint32), np.empty((0, 2), dtype=np.int64), np.empty(0, dtype=np.int64)
    cdef ScanEncode w
    cdef int rc
    cdef int64_t[::1] view
    scan_encode_init(&w)
    try:
        with nogil:
            rc = scan_encode(&w, encoder, scanner, &data[0], n, -1, False, True)
        if rc == GAVE_UP:
            return None
        raise_if_no_memory(rc)
        words = np.empty(w.ids.size, dtype=np.int64)
        if w.ids.size:
            view = words
            piece_indexes(encoder.tables.token_offsets, w.ids.data, w.ids.size, w.ends, w.pieces, &view[0])
        return ids_array(&w.ids), spans_array(w.spans, w.ids.size), words
    finally:
        scan_encode_free(&w)


def encode_texts_flat(RankEncoder encoder, BaseScanner scanner not None, list texts, Py_ssize_t limit=-1,
                      bint offsets=False):
    """Many texts in one GIL-free pass, as flat arrays: ``(ids, row_ends, spans)`` where text j's
    ids are ``ids[row_ends[j-1]:row_ends[j]]`` (row_ends[-1] = 0), ``spans`` their character
    offsets into text j ((n, 2) int64, None unless ``offsets``). With ``limit >= 0`` each text
    keeps only the first ``limit`` ids of its encoding (plain id truncation; the rest is never
    encoded). Lone surrogates become U+FFFD first, as in Tokenizer.encode. None when the
    scanner gave up on one of the texts (SCAN_GAVE_UP: the caller takes the per-text path)."""
    cdef Py_ssize_t j
    cdef int rc = 0
    cdef Utf8Texts batch
    cdef ScanEncode w
    try:
        batch = Utf8Texts(texts, clean_surrogates, CACHED_UTF8_CHARS)
    except TypeError:
        bad = next(t for t in texts if not isinstance(t, str))
        raise EncodingError(f"encode() takes a str, not {type(bad).__name__}") from None
    row_ends = np.zeros(batch.count, dtype=np.int64)
    cdef int64_t[::1] rows = row_ends
    scan_encode_init(&w)
    try:
        with nogil:
            for j in range(batch.count):
                if batch.lengths[j]:
                    rc = scan_encode(&w, encoder, scanner, batch.starts[j], batch.lengths[j],
                                     limit, True, offsets)
                    if rc != 0:
                        break
                rows[j] = w.ids.size
        if rc == GAVE_UP:
            return None
        raise_if_no_memory(rc)
        return ids_array(&w.ids), row_ends, (spans_array(w.spans, w.ids.size) if offsets else None)
    finally:
        scan_encode_free(&w)


# -- rows of one UTF-8 buffer (Arrow string arrays) ----------------------------------------------
# The same scan + encode as encode_texts_flat, over rows given as byte offsets into one buffer
# (an Arrow StringArray's data and offsets) instead of a list of str: no Python object per row.

cdef Py_ssize_t first_invalid_utf8(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """The byte offset of the first byte of s[0:n] that is not part of well-formed UTF-8 (what
    ``bytes.decode("utf-8")`` rejects: stray continuation bytes, overlong, truncated or
    surrogate sequences, values past U+10FFFF), or -1 when all of it is valid."""
    cdef Py_ssize_t p = 0, q
    cdef uint32_t cp
    while p < n:
        if s[p] < 0x80:
            p += 1
            continue
        cp = decode_cp(s, n, p, &q)
        if cp == INVALID_CP or 0xD800 <= cp <= 0xDFFF:
            return p
        p = q
    return -1


def encode_utf8_rows(RankEncoder encoder, BaseScanner scanner not None, const uint8_t[::1] data,
                     const int64_t[::1] row_offsets, const uint8_t[::1] valid=None,
                     bint offsets=False, bint count_only=False):
    """Rows ``data[row_offsets[j]:row_offsets[j+1]]`` (j < len(row_offsets) - 1) split by
    ``scanner`` and encoded, in one GIL-free pass, as flat arrays.

    Returns ``(ids, row_ends, spans, skipped)``: row j's ids are ``ids[row_ends[j-1]:row_ends[j]]``
    (uint32; row_ends int64, row_ends[-1] = 0), ``spans`` their character offsets into the row
    ((n, 2) int64; None unless ``offsets``), ``skipped`` a list of ``(row, byte)`` for the rows
    that got no ids here: a row that is not valid UTF-8 (``byte`` = the offset of its first bad
    byte in the row) or one the scanner gave up on (``byte`` = -1). The caller encodes those
    its own way. Rows with ``valid[j] == 0`` (Arrow nulls) are skipped silently: no ids.
    With ``count_only`` no ids are kept: ``ids`` is empty and ``row_ends`` still counts them."""
    cdef Py_ssize_t rows = row_offsets.shape[0] - 1
    if rows < 0:
        raise ValueError("row_offsets needs at least one entry")
    if valid is not None and valid.shape[0] < rows:
        raise ValueError("valid has fewer entries than there are rows")
    cdef Py_ssize_t j, first, bad, length, counted = 0
    cdef int64_t start, stop
    cdef int rc = 0
    cdef int64_t size = data.shape[0]
    for j in range(rows):  # checked with the GIL (cheap): the loop below trusts them
        if row_offsets[j] < 0 or row_offsets[j + 1] < row_offsets[j] or row_offsets[j + 1] > size:
            raise ValueError(f"row {j}: offsets {row_offsets[j]}..{row_offsets[j + 1]} are not "
                             f"inside the {size}-byte buffer")
    cdef const uint8_t* base = &data[0] if size > 0 else NULL
    cdef const uint8_t* checked = NULL if valid is None or rows == 0 else &valid[0]
    row_ends = np.zeros(rows, dtype=np.int64)
    cdef int64_t[::1] ends_out = row_ends
    cdef int64_t* skipped = <int64_t*>malloc((2 * rows + 1) * sizeof(int64_t))
    cdef Py_ssize_t n_skipped = 0
    cdef ScanEncode w
    cdef bint spans_too = offsets and not count_only
    if skipped == NULL:
        raise MemoryError()
    scan_encode_init(&w)
    try:
        with nogil:
            for j in range(rows):
                first = w.ids.size
                start = row_offsets[j]
                stop = row_offsets[j + 1]
                length = stop - start
                if length and (checked == NULL or checked[j]):
                    bad = first_invalid_utf8(base + start, length)
                    if bad < 0:
                        rc = scan_encode(&w, encoder, scanner, base + start, length, -1, False,
                                         spans_too)
                        if rc == NO_MEMORY:
                            break
                    if bad >= 0 or rc == GAVE_UP:
                        skipped[2 * n_skipped] = j
                        skipped[2 * n_skipped + 1] = bad if bad >= 0 else -1
                        n_skipped += 1
                        rc = 0
                    elif count_only:
                        counted += w.ids.size - first
                        w.ids.size = first
                ends_out[j] = w.ids.size + counted
        raise_if_no_memory(rc)
        out_skipped = [(skipped[2 * j], skipped[2 * j + 1]) for j in range(n_skipped)]
        return (ids_array(&w.ids), row_ends, (spans_array(w.spans, w.ids.size) if offsets else None),
                out_skipped)
    finally:
        free(skipped)
        scan_encode_free(&w)
