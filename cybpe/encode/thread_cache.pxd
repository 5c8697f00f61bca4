# The cross-call piece cache: each OS thread keeps, for as long as it lives, the ids of the last
# pieces that needed BPE, whichever encoder and call produced them. Header-only (the C below
# is pasted into each module that cimports this); used by cybpe/encode/encoder.pyx.
#
# Usage:
#
#     from cybpe.encode.thread_cache cimport (
#         ThreadCacheEntry, THREAD_CACHE_MAX_BYTES, THREAD_CACHE_MAX_IDS, THREAD_CACHE_WAYS,
#         next_encoder_serial,
#         thread_cache_entries, thread_cache_mask)
#
#     serial = next_encoder_serial()                  # once per encoder, never reused
#     entries = thread_cache_entries()                # once per call, with or without the GIL;
#     if entries != NULL:                             # NULL: no memory, carry on without it
#         ways = &entries[(hash & thread_cache_mask()) * THREAD_CACHE_WAYS]
#         for e in ways[0 : THREAD_CACHE_WAYS]:       # the piece's set: newest first
#             if e.owner == 0:                        # the filled ways are always a prefix
#                 break
#             if e.owner == serial and e.length == n and e.hash == <uint32_t>hash \
#                     and (memcmp(thread_cache_key_of(e), s, n) == 0 if not e.spelled
#                          else the tokens of e.ids[0:e.n_ids], end to end, are s[0:n]):
#                 ...  # e.ids[0:e.n_ids] are the piece's ids
#         # not there: BPE, then ways[1:] = ways[:-1] and the new entry goes to ways[0]
#
# Two kinds of entry. A keyed entry (a piece of <= 32 bytes and <= 4 ids) holds the piece's bytes
# and is checked against them. A spelled entry (any other piece of <= 12 ids) has no room for its
# bytes: it is checked by spelling its ids, i.e. comparing the bytes of its tokens, end to end,
# with the piece, which is exactly "these ids encode this piece" (BPE ids always spell their
# piece). It costs a token-offset and a blob read per id, still far less than the BPE it saves.
#
# An entry is valid only for the encoder whose serial it carries (serials come from one process
# counter, 64 bits, so an entry can never be taken for another encoder's, even one allocated at
# a freed encoder's address) and only for exactly its key bytes. A piece has a set of four
# entries (4-way set-associative, the oldest evicted): a miss costs one BPE, never a wrong id.
#
# Performance notes (the simulations, timings and dropped variants: docs/history.md, "Thread
# piece cache"): 2^16 entries (4 MiB per thread) in sets of four, the oldest evicted
# (insertion order; LRU gains little). Fewer ways or entries leave sets that several common
# pieces share missing on every pass; more cost the languages whose pieces nearly all hit
# already. Spelled entries cover the pieces a keyed one cannot hold (longer than 32 bytes,
# like table rules, or of 5-12 ids), which would otherwise be merged again on every warm pass.
#
# Thread safety: every thread has its own entries (a pthread key; freed by its destructor when the
# thread ends), so no entry is ever read or written by two threads. next_encoder_serial is an
# atomic increment. All of it is callable without the GIL.

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from cybpe._c.system cimport page_size   # (its C first: pthread keys, also on Windows; the atomic add)

cdef extern from *:
    """
    #ifndef CYBPE_THREAD_CACHE
    #define CYBPE_THREAD_CACHE
    #include <stdint.h>
    #include <stdlib.h>

    #define CYBPE_THREAD_CACHE_BITS 16   /* entries: 2^16 * 64 bytes = 4 MiB */
    #define CYBPE_THREAD_CACHE_WAYS 4
    #define CYBPE_THREAD_CACHE_MAX_BYTES 32          /* most bytes of a piece kept with its key */
    #define CYBPE_THREAD_CACHE_MAX_IDS 4             /* most ids of a piece kept with its key */
    #define CYBPE_THREAD_CACHE_MAX_SPELLED_IDS 12    /* most ids of a piece kept without it */
    #define CYBPE_THREAD_CACHE_MAX_SPELLED_BYTES 65535

    typedef struct {                /* 64 bytes (glibc calloc's block starts 16 bytes into a page,
                                       so an entry spans two lines: aligning the block made
                                       no measurable difference, docs/history.md) */
        uint64_t owner;             /* the encoder's serial; 0 = empty */
        uint32_t hash;              /* low 32 bits of the piece's hash */
        uint16_t length;            /* the piece's length in bytes, >= 2 */
        uint8_t n_ids;              /* >= 1 */
        uint8_t spelled;            /* 0: a keyed entry, 1: a spelled one (see above) */
        uint32_t ids[CYBPE_THREAD_CACHE_MAX_SPELLED_IDS];  /* keyed: ids[0:4], then the key */
    } cybpe_thread_cache_entry;

    /* A keyed entry's key: the bytes after its first MAX_IDS ids. */
    static inline uint8_t* cybpe_thread_cache_key_of(cybpe_thread_cache_entry* e) {
        return (uint8_t*)(e->ids + CYBPE_THREAD_CACHE_MAX_IDS);
    }

    static uint64_t cybpe_encoder_serials = 0;
    static pthread_key_t cybpe_thread_cache_key;
    static pthread_once_t cybpe_thread_cache_once = PTHREAD_ONCE_INIT;
    static int cybpe_thread_cache_key_ok = 0;

    static void cybpe_thread_cache_free(void* entries) { free(entries); }
    static void cybpe_thread_cache_make_key(void) {
        cybpe_thread_cache_key_ok =
            pthread_key_create(&cybpe_thread_cache_key, cybpe_thread_cache_free) == 0;
    }

    static uint64_t cybpe_next_encoder_serial(void) {
        return CYBPE_ATOMIC_ADD_FETCH_U64(&cybpe_encoder_serials, 1);
    }

    /* hash & mask is a set: its entries are [set * WAYS, set * WAYS + WAYS). */
    static uint64_t cybpe_thread_cache_mask(void) {
        return ((((uint64_t)1) << CYBPE_THREAD_CACHE_BITS) / CYBPE_THREAD_CACHE_WAYS) - 1;
    }

    /* This thread's entries (allocated zeroed on its first call), or NULL without memory. */
    static cybpe_thread_cache_entry* cybpe_thread_cache_entries(void) {
        cybpe_thread_cache_entry* entries;
        pthread_once(&cybpe_thread_cache_once, cybpe_thread_cache_make_key);
        if (!cybpe_thread_cache_key_ok) return NULL;
        entries = (cybpe_thread_cache_entry*)pthread_getspecific(cybpe_thread_cache_key);
        if (entries == NULL) {
            entries = (cybpe_thread_cache_entry*)calloc(
                ((size_t)1) << CYBPE_THREAD_CACHE_BITS, sizeof(cybpe_thread_cache_entry));
            if (entries == NULL) return NULL;
            if (pthread_setspecific(cybpe_thread_cache_key, entries) != 0) {
                free(entries);
                return NULL;
            }
        }
        return entries;
    }
    #endif
    """
    ctypedef struct ThreadCacheEntry "cybpe_thread_cache_entry":
        uint64_t owner
        uint32_t hash
        uint16_t length
        uint8_t n_ids
        uint8_t spelled
        uint32_t ids[12]
    uint8_t* thread_cache_key_of "cybpe_thread_cache_key_of"(ThreadCacheEntry* e) noexcept nogil
    const int THREAD_CACHE_MAX_BYTES "CYBPE_THREAD_CACHE_MAX_BYTES"
    const int THREAD_CACHE_MAX_IDS "CYBPE_THREAD_CACHE_MAX_IDS"
    const int THREAD_CACHE_MAX_SPELLED_IDS "CYBPE_THREAD_CACHE_MAX_SPELLED_IDS"
    const int THREAD_CACHE_MAX_SPELLED_BYTES "CYBPE_THREAD_CACHE_MAX_SPELLED_BYTES"
    const int THREAD_CACHE_WAYS "CYBPE_THREAD_CACHE_WAYS"
    uint64_t next_encoder_serial "cybpe_next_encoder_serial"() noexcept nogil
    uint64_t thread_cache_mask "cybpe_thread_cache_mask"() noexcept nogil
    ThreadCacheEntry* thread_cache_entries "cybpe_thread_cache_entries"() noexcept nogil
