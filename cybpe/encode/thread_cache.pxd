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
# Performance notes: 2^16 entries (4 MiB per thread) in sets of four (2^15 until 2026-12-04,
# see below). Simulated on the English eval documents (cl100k, 31 k pieces needing BPE, 10 k
# distinct; a second pass over the same documents), the pieces that still needed BPE:
# direct-mapped 16 k entries 5,351, 2-way 16 k 4,024, direct-mapped 32 k 3,366, 2-way 32 k
# 1,904 (code: 7,782 / 6,416 / 4,794 / 2,910); an LRU order within the set instead of
# insertion order gained under 4% of that.
# Sets of two still left a set that three pieces share missing all three on every pass. A
# second simulation (2026-12-04, the bench's documents: 30 k pieces of <= 32 bytes and <= 4 ids
# needing BPE, 9.8 k distinct), pieces re-merged per warm pass, English / code: 2-way 1,172 /
# 2,457, 4-way 293 / 1,029, 8-way 27 / 210. The wall-clock effect, with the search stopping at
# the first empty way, is in encoder.pyx's performance notes; 8 ways cost Hindi (whose 2.6 k
# pieces needing BPE nearly all hit) 5%, and a victim named by the hash instead of the oldest
# (fewer misses on a repeated set) lost to a stream of mixed languages. Entries aligned to cache
# lines (posix_memalign instead of calloc, 2026-12-04; A/B process pairs, min / median of 10
# rounds): en 15.46 / 16.83 -> 15.91 / 17.02 ms, code 24.98 / 25.66 -> 25.07 / 25.88: no gain.
# Spelled entries (2026-12-04): before them, the warm English bench documents still merged
# ~780 pieces per pass (longer than 32 bytes, like "+-----+-----" table rules, or of 5-12 ids),
# and merges were 12% of the encode in perf. Paired A/B processes, median of the pair ratios:
# English 0.91x (8 pairs), code 0.97x, Chinese 0.96x, Hindi 0.95x; fresh documents 1.00x.
# They fill entries too: 466 pieces per warm English pass were still merged, all of them set
# conflicts (a uprobe count of merge_piece). 2^16 entries left 21; against 2^15, paired A/B:
# English 0.975x, code 0.95x, Hindi 0.98x, Chinese 0.77x, fresh English documents 0.87x, fresh
# code 1.01x. 2^17 against 2^16: English 1.02x, code 1.06x, Chinese 0.96x: not taken.
#
# Thread safety: every thread has its own entries (a pthread key; freed by its destructor when the
# thread ends), so no entry is ever read or written by two threads. next_encoder_serial is an
# atomic increment. All of it is callable without the GIL.

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t

cdef extern from *:
    """
    #ifndef CYBPE_THREAD_CACHE
    #define CYBPE_THREAD_CACHE
    #include <pthread.h>
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
                                       no measurable difference, see the notes above) */
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
        return __atomic_add_fetch(&cybpe_encoder_serials, 1, __ATOMIC_RELAXED);
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
