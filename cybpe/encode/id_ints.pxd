# The int objects that encode calls put in their result lists: one per ordinary id, shared by
# every encoder of the process, laid out at a fixed stride so that the int of id v is at
# base + v * ID_INT_STRIDE. Header-only (the C below is pasted into each module that cimports
# this); used by cybpe/encode/encoder.pyx (RankEncoder.ids_to_list).
#
# Usage (with the GIL):
#
#     from cybpe.encode.id_ints cimport ID_INT_STRIDE, id_int_base, id_int_take, id_ints_cover
#
#     covered = id_ints_cover(n_tokens)       # ints 0 .. covered-1 exist (covered < n_tokens
#     base = id_int_base()                    #   on builds without them, or without memory)
#     if v < covered:
#         item = <PyObject*>(base + v * ID_INT_STRIDE)
#         id_int_take(item)                   # the list's reference: nothing to count (below)
#     else:
#         item = PyLong_FromUnsignedLong(v)   # a new int, as before
#
# Each int is a byte copy of the int CPython makes for that value (so no layout is assumed but
# PyObject's reference count, set through Py_SET_REFCNT), given a reference count that never
# reaches zero: from Python 3.12 the count of the small int 0, which marks an immortal object
# (Py_INCREF and Py_DECREF then read it and write nothing); before 3.12, 2^60. The ints are never
# freed. So a list takes one without counting the reference (id_int_take is empty): from 3.12
# the count of an immortal object is not kept anyway; before 3.12 each freed list item lowers
# the count by one, and 2^60 items freed at a billion a second would take 36 years. Builds
# with reference-count debugging (Py_REF_DEBUG, which keeps a total of all counts) count it.
# When the block grows (an encoder with more ids than any before it), the old block stays
# too, since lists made from it may still be alive: at most twice the largest vocabulary's ints
# (cl100k 3.2 MB, o200k 6.4 MB), where each encoder kept a tuple of ints of its own before.
# They are ints in every way but identity: an id below 257 is not CPython's cached small int.
# Free-threaded and trace-refs builds, whose object headers hold more than a count, and ids of
# ID_INTS_MAX or more get new ints instead (id_ints_cover returns less).
#
# Performance notes (the measurements: docs/history.md, "Shared id ints"): with the ints at
# base + v * ID_INT_STRIDE the address is known from the id alone, where a per-encoder tuple
# cost two dependent cache misses per id (the tuple's item, then the int's count). Taking them
# uncounted means the list's fill reads no int at all; freeing the lists still takes the
# count's miss, so encode and free together gain less than encode alone.
#
# Thread safety: id_ints_cover writes the block pointer and count: call it with the GIL, as
# ids_to_list does. id_int_take writes nothing (a count under Py_REF_DEBUG, with the GIL). The
# ints themselves are reference-counted by CPython under the GIL, as any other int.

from cybpe._c.system cimport aligned_block   # (its C first: cybpe_aligned_block, posix_memalign or malloc)

cdef extern from *:
    """
    #ifndef CYBPE_ID_INTS
    #define CYBPE_ID_INTS
    #include <Python.h>
    #include <stdlib.h>
    #include <string.h>

    #define CYBPE_ID_INT_STRIDE 32            /* bytes per int: a one-digit int is 28 (or 32) */
    #define CYBPE_ID_INTS_MAX (1 << 21)       /* ids covered at most: 64 MiB of ints */

    static char* cybpe_id_int_block = NULL;   /* ints 0 .. cybpe_id_int_count-1 */
    static Py_ssize_t cybpe_id_int_count = 0;

    /* The size in bytes of int v (int.__sizeof__), or -1. */
    static Py_ssize_t cybpe_id_int_size(PyObject* v) {
        PyObject* size = PyObject_CallMethod(v, "__sizeof__", NULL);
        Py_ssize_t n = size == NULL ? -1 : PyLong_AsSsize_t(size);
        Py_XDECREF(size);
        if (n < 0) PyErr_Clear();
        return n;
    }

    /* Make ints 0 .. n-1 exist if they can; the number that exist. GIL held; never raises. */
    static Py_ssize_t cybpe_id_ints_cover(Py_ssize_t n) {
    #if defined(Py_GIL_DISABLED) || defined(Py_TRACE_REFS) || defined(PYPY_VERSION)
        (void)n;
        return 0;
    #else
        Py_ssize_t want, v, size = 0, made = 0;
        Py_ssize_t forever;
        char* block = NULL;
        PyObject* item;
        if (n <= cybpe_id_int_count) return cybpe_id_int_count;
        want = n > 2 * cybpe_id_int_count ? n : 2 * cybpe_id_int_count;
        if (want > CYBPE_ID_INTS_MAX) want = CYBPE_ID_INTS_MAX;
        if (want <= cybpe_id_int_count) return cybpe_id_int_count;
        if (cybpe_aligned_block((void**)&block, 64, (size_t)want * CYBPE_ID_INT_STRIDE) != 0)
            return cybpe_id_int_count;
        memset(block, 0, (size_t)want * CYBPE_ID_INT_STRIDE);
    #if PY_VERSION_HEX >= 0x030C0000
        item = PyLong_FromLong(0);            /* a small int: immortal, its count says so */
        forever = Py_REFCNT(item);
        Py_DECREF(item);
    #else
        forever = ((Py_ssize_t)1) << 60;
    #endif
        for (v = 0; v < want; v++) {
            item = PyLong_FromSsize_t(v);
            if (item == NULL) { PyErr_Clear(); break; }
            if (v <= 1 || (v & (v - 1)) == 0)  /* an int's size only changes at a power of 2 */
                size = cybpe_id_int_size(item);
            if (size <= 0 || size > CYBPE_ID_INT_STRIDE) { Py_DECREF(item); break; }
            memcpy(block + v * CYBPE_ID_INT_STRIDE, (void*)item, (size_t)size);
            Py_DECREF(item);
            Py_SET_REFCNT((PyObject*)(block + v * CYBPE_ID_INT_STRIDE), forever);
            made = v + 1;
        }
        if (made <= cybpe_id_int_count) {
            free(block);
            return cybpe_id_int_count;
        }
        cybpe_id_int_block = block;           /* the old block is kept: lists may hold its ints */
        cybpe_id_int_count = made;
        return made;
    #endif
    }

    static inline char* cybpe_id_int_base(void) { return cybpe_id_int_block; }

    /* A list takes a shared int: counted only where a total of all counts is kept. */
    #ifdef Py_REF_DEBUG
    #define cybpe_id_int_take(item) Py_INCREF(item)
    #else
    #define cybpe_id_int_take(item) ((void)(item))
    #endif
    #endif
    """
    enum: ID_INT_STRIDE "CYBPE_ID_INT_STRIDE"
    enum: ID_INTS_MAX "CYBPE_ID_INTS_MAX"
    Py_ssize_t id_ints_cover "cybpe_id_ints_cover"(Py_ssize_t n)
    char* id_int_base "cybpe_id_int_base"()
    void id_int_take "cybpe_id_int_take"(void* item)
