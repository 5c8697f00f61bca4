"""The encodings of a batch's common call, kept out of the cyclic collector's sight.

A batch of texts without truncation, padding or pairs (``tok(batch)``) returns one encoding per
text, which transformers keeps in its ``BatchEncoding``. As Python objects, each encoding and
its ids list were two objects the collector tracks: they raised its young-generation count
(so passes came more often), each pass visited every id of every list, and the survivors
brought full passes sooner (docs/history.md, "Patched transformers: encodings out of the
collector's sight"). A :class:`LightEncoding` is neither: a compiled object without collector
support, holding its text's ids in C memory (the engine's int objects, one reference each: ints
hold no references, so no cycle can run through them).

It answers what transformers reads from every call itself (``ids``, ``attention_mask``,
``type_ids``, ``special_tokens_mask``, ``overflowing``, ``len``), the template's ids (BOS...)
coming from the call's layout (:class:`cybpe.compat.hf_postprocessors.SingleLayout`). Anything
else (offsets, tokens, word ids, the conversions, ``pad``, ``truncate``, pickling, private
fields) makes, once, the Python :class:`~cybpe.compat.hf_encoding.Encoding` the layout gives
for the same ids, and is answered by it from then on, reads and writes alike.

Why it can skip the collector: it refers to its layout (shared by the call, holding ints and
lists of ints), its source text, its call's filler (which holds no encoding) and, once made,
its Python encoding, which refers to none of these objects back. No cycle runs through it.

Thread safety: every read may run in several threads at once. Two threads that make the Python
encoding at the same moment make equal ones and one is kept; ``pad`` and ``truncate`` (which
change it in place) are, as for :class:`~cybpe.compat.hf_encoding.Encoding`, one thread at a
time with no reader.
"""

cimport cython
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF, PyObject
from libc.stdlib cimport free, malloc

cdef extern from "Python.h":
    void list_set_item "PyList_SET_ITEM"(object lst, Py_ssize_t i, PyObject* item)  # steals item
    void incref "Py_INCREF"(PyObject* item)
    void decref "Py_DECREF"(PyObject* item)


@cython.no_gc
@cython.final
cdef class LightEncoding:
    """One text's encoding in a batch's common call, shaped like ``tokenizers.Encoding``
    (see the module docstring for what it answers itself and what its Python encoding answers).

    Thread safety: reads are safe from several threads; ``pad``/``truncate``: one thread, no
    reader."""

    cdef PyObject** _text_ids   # the text's ids (int objects, a reference each), without the template's
    cdef Py_ssize_t _n_text
    cdef list _before           # the layout's template ids before and after the text, kept typed:
    cdef list _after            # len() and ids read them without an attribute lookup each
    cdef object _layout
    cdef object _source
    cdef object _filler
    cdef object _python         # None, or the Python Encoding that answers from now on
    cdef list _before_types     # the layout's type ids before and after the text, and the
    cdef list _after_types      # text's: the fields transformers reads at every call are made
    cdef object _type_id        # here, without a call into the Python layout
    cdef object __weakref__     # (as the Python Encoding: a test sees it freed when dropped)

    def __dealloc__(self):
        cdef Py_ssize_t k
        if self._text_ids != NULL:
            for k in range(self._n_text):
                decref(self._text_ids[k])
            free(self._text_ids)

    def __len__(self):
        if self._python is not None:
            return len(self._python)
        return PyList_GET_SIZE(self._before) + self._n_text + PyList_GET_SIZE(self._after)

    cdef list _ids_list(self, bint template):
        """The ids as a new list of ints: the template's around the text's when ``template``."""
        cdef Py_ssize_t n_before = PyList_GET_SIZE(self._before) if template else 0
        cdef Py_ssize_t n_after = PyList_GET_SIZE(self._after) if template else 0
        cdef Py_ssize_t k
        cdef list out = PyList_New(n_before + self._n_text + n_after)
        cdef PyObject* item
        for k in range(n_before):
            item = PyList_GET_ITEM(self._before, k)
            incref(item)
            list_set_item(out, k, item)
        for k in range(self._n_text):
            item = self._text_ids[k]
            incref(item)
            list_set_item(out, n_before + k, item)
        for k in range(n_after):
            item = PyList_GET_ITEM(self._after, k)
            incref(item)
            list_set_item(out, n_before + self._n_text + k, item)
        return out

    cdef object _made(self):
        """The Python Encoding, made on first use."""
        python = self._python
        if python is None:
            python = self._layout.encoding(self._ids_list(False), self._source, self._filler)
            self._python = python
        return python

    @property
    def ids(self):
        """The token ids (a new list)."""
        if self._python is not None:
            return self._python.ids
        return self._ids_list(True)

    # The three fields below are SingleLayout's attention, type_ids and special for this
    # encoding's length, made here (hf_postprocessors.py has the same rules in Python).
    @property
    def attention_mask(self):
        """0 for padding, else 1."""
        if self._python is not None:
            return self._python.attention_mask
        return [1] * len(self)

    @property
    def type_ids(self):
        """The type id of each token."""
        if self._python is not None:
            return self._python.type_ids
        if not self._before_types and not self._after_types:  # (one list, not three joined)
            return [self._type_id] * self._n_text
        return self._before_types + [self._type_id] * self._n_text + self._after_types

    @property
    def special_tokens_mask(self):
        """1 for the tokens the post-processor added, else 0."""
        if self._python is not None:
            return self._python.special_tokens_mask
        if not self._before and not self._after:
            return [0] * self._n_text
        return [1] * PyList_GET_SIZE(self._before) + [0] * self._n_text + [1] * PyList_GET_SIZE(self._after)

    @property
    def overflowing(self):
        """The windows that truncation cut off: none, until ``truncate`` makes some."""
        if self._python is not None:
            return self._python.overflowing
        return []

    @property
    def n_sequences(self):
        """How many input sequences this encoding holds: one (a layout is of one text), which
        transformers reads from the first encoding of every call."""
        if self._python is not None:
            return self._python.n_sequences
        return 1

    def _is_light(self):
        """Whether no Python encoding has been made yet (every read so far answered here)."""
        return self._python is None

    def __getattr__(self, name):
        return getattr(self._made(), name)

    def __setattr__(self, name, value):
        setattr(self._made(), name, value)

    def __reduce__(self):
        return self._made().__reduce__()

    def __copy__(self):
        return self._made().__copy__()

    def __deepcopy__(self, memo):
        return self._made().__deepcopy__(memo)

    def __repr__(self):
        return repr(self._made())


def light_encodings(layout, list ids_lists, list sources, filler):
    """A :class:`LightEncoding` per text: ``ids_lists[k]`` (the engine's ids of ``sources[k]``,
    a list of ints, without the template's) under ``layout``. TypeError for ids that are not
    a list of ints."""
    cdef Py_ssize_t n = PyList_GET_SIZE(ids_lists), k, j, m
    cdef list out = PyList_New(n), ids
    cdef LightEncoding e
    cdef PyObject* item
    cdef list before = layout.before, after = layout.after
    cdef list before_types = layout.before_types, after_types = layout.after_types
    type_id = layout.type_id
    if PyList_GET_SIZE(sources) != n:
        raise ValueError("one source text per ids list")
    for k in range(n):
        ids_object = <object>PyList_GET_ITEM(ids_lists, k)
        if type(ids_object) is not list:
            raise TypeError(f"the ids of text {k} are a {type(ids_object).__name__}, not a list")
        ids = <list>ids_object
        m = PyList_GET_SIZE(ids)
        e = LightEncoding.__new__(LightEncoding)
        Py_INCREF(e)
        PyList_SET_ITEM(out, k, e)  # (the list owns e from here: freed with it on an error)
        e._before, e._after = before, after
        e._before_types, e._after_types, e._type_id = before_types, after_types, type_id
        e._layout = layout
        e._source = <object>PyList_GET_ITEM(sources, k)
        e._filler = filler
        e._python = None
        e._text_ids = <PyObject**>malloc((m if m else 1) * sizeof(PyObject*))
        if e._text_ids == NULL:
            raise MemoryError()
        for j in range(m):
            item = PyList_GET_ITEM(ids, j)
            if type(<object>item) is not int:
                e._n_text = j
                raise TypeError(f"id {j} of text {k} is {type(<object>item).__name__}, not int")
            incref(item)
            e._text_ids[j] = item
        e._n_text = m
    return out
