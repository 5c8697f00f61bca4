"""The compiled part of ``cybpe.patch_transformers()``: the holder of an instance's backend and
the read side of the ``_tokenizer`` descriptor (cybpe/compat/transformers_patch.py says how the
patch works).

transformers reads ``self._tokenizer`` four times or more in every call (``tok("a")``: the
truncation and padding checks, the special-token switch, the encode). Each read goes through
the class's data descriptor; written in Python, its ``__get__`` cost 0.12 us more than the plain
attribute, about half a microsecond a call. Here the common read (the instance's slot holds the
backend of the instance's own Rust tokenizer) is two dict lookups and an identity check in C;
anything else goes to the subclass's ``missing`` method, in Python.

Thread safety: a :class:`BackendSlot` is written once, when made, and only read afterwards.
``BackendGetter.__get__`` only reads the instance's ``__dict__``: safe from any thread.
"""

from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject


cdef class BackendSlot:
    """Holds an instance's backend and the Rust tokenizer it wraps; copies and pickles as
    empty, so a copied tokenizer gets a backend of its own copy of the Rust tokenizer."""

    cdef readonly object raw
    cdef readonly object backend

    def __init__(self, raw=None, backend=None):
        self.raw = raw
        self.backend = backend

    def __reduce__(self):
        return (BackendSlot, ())

    def __copy__(self):
        return BackendSlot()

    def __deepcopy__(self, memo):
        return BackendSlot()


cdef class BackendGetter:
    """The read side of the ``_tokenizer`` data descriptor: on an instance whose ``__dict__``
    holds, under ``slot_key``, a :class:`BackendSlot` for the Rust tokenizer it holds under
    ``_tokenizer``, that slot's backend; otherwise ``self.missing(instance.__dict__)``, which a
    Python subclass defines, with ``__set__`` and ``__delete__``. On the class,
    ``class_value``."""

    cdef readonly object class_value
    cdef object slot_key

    def __init__(self, class_value, slot_key):
        self.class_value = class_value
        self.slot_key = slot_key

    def missing(self, d):
        """What an instance with ``__dict__`` d reads when its slot does not answer."""
        raise NotImplementedError("BackendGetter.missing: a subclass says what a miss reads")

    def __get__(self, obj, cls):
        cdef PyObject* slot
        cdef PyObject* raw
        if obj is None:
            return self.class_value
        d = obj.__dict__
        if type(d) is dict:
            slot = PyDict_GetItem(d, self.slot_key)
            raw = PyDict_GetItem(d, "_tokenizer")
            if (slot != NULL and raw != NULL and type(<object>slot) is BackendSlot
                    and (<BackendSlot>slot).raw is <object>raw):
                return (<BackendSlot>slot).backend
        return self.missing(d)
