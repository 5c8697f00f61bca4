# The cross-call piece cache: each OS thread keeps, for as long as it lives, the ids of the last
# pieces that needed BPE, whichever encoder and call produced them. Header-only (the C below
# is pasted into each module that cimports this); used by cybpe/encode/encoder.pyx.
#
# Usage:
#
#     from cybpe.encode.thread_cache cimport (
#         ThreadCacheEntry, THREAD_CACHE_MAX_BYTES, THREAD_CACHE_MAX_IDS, THREAD_CACHE_WAYS,
#         next_encoder_serial,
#         thread_cache_entries, thread_cache_mask, thread_cache_salt, thread_cache_tag, thread_cache_tags)
#
#     serial = next_encoder_serial()                  # once per encoder, never reused
#     salt = thread_cache_salt(serial)
#     entries = thread_cache_entries()                # once per call, with or without the GIL;
#     if entries != NULL:                             # NULL: no memory, carry on without it
#         first = (hash & thread_cache_mask()) * THREAD_CACHE_WAYS   # the piece's set
#         ways, tags = &entries[first], &thread_cache_tags(entries)[first]
#         for w in range(THREAD_CACHE_WAYS):          # newest first
#             if tags[w] == 0:                        # the filled tags are always a prefix
#                 break
#             e = &ways[tags[w] & 3]                  # the entry this tag stands for
#             if tags[w] & ~3 == thread_cache_tag(hash, salt) and e.owner == serial and e.length == n \
#                     and (memcmp(thread_cache_key_of(e), s, n) == 0 if not e.spelled
#                          else the tokens of e.ids[0:e.n_ids], end to end, are s[0:n]):
#                 ...  # e.ids[0:e.n_ids] are the piece's ids
#         # not there: BPE; the new entry takes the oldest tag's entry (or the next unused one),
#         # tags[1:] = tags[:-1], tags[0] = thread_cache_tag(hash, salt) | that entry's index
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
# Each entry has a 32-bit tag (bits of the piece's hash xor its encoder's salt, and the entry's
# place in its set) in an array after the entries: a set's four tags share 16 bytes, so a piece
# that is not cached (nearly every piece of a document no cache has seen) costs one read of a
# small, mostly cached array instead of four lines of entries; only a matching tag reads its
# entry. Entries never move: a new one is written over the oldest, and only the tags are shifted.
#
# The front table (after the tags: a 64-byte header, then 2^15 entries of 64 bytes, 2 MiB) is a
# direct-mapped cache in front of both the token table and the entries above, for pieces of
# 2..16 bytes with a non-ASCII byte in blocks mostly of non-ASCII text (encoder.pyx,
# encode_block_front): one entry, keyed by the piece's head_word, tail_word and length (which
# for at most 16 bytes are its bytes), answers a piece, token or not, in one cache line. In
# other blocks (encode_block) a piece of 2..16 bytes that the token table does not hold looks
# in it after the token table, where the thread cache would read two dependent lines. An entry
# holds for the thread's generation: a call from another encoder than the last takes a new one
# (so nothing is cleared), and a wrap-around of the 32-bit count clears the table.
#
#     front = thread_front(entries, serial)           # once per call
#     e = &front.entries[hash >> (64 - FRONT_BITS)]
#     if e.generation == front.generation and e.length == n and e.head == head_word(s, n) \
#             and e.tail == tail_word(s, n):
#         ...  # e.ids[0:e.n_ids]
#
# After the front table, the cut-point memo (cut_points.pxd, CutMemo: 2^14 slots, 128 KiB) keeps
# the thread's answers to "may a token cross this place?" for the same generation: documents of
# one language test the same character pairs call after call.
#
#     memo = thread_cut_memo(entries)                 # slots valid for front.generation's low 30 bits
#
# front_pays / front_count keep, per thread and encoder, how many of the pieces the table
# answered were one token: where most are (o200k's Cyrillic or Devanagari), the table steps
# aside but for one block in 16.
#
# Performance notes (the simulations, timings and dropped variants: docs/history.md, "Thread
# piece cache" and "Front table"): 2^16 entries (4 MiB per thread, and 256 KiB of tags) in sets of four, the oldest evicted
# (insertion order; LRU gains little). Fewer ways or entries leave sets that several common
# pieces share missing on every pass; more cost the languages whose pieces nearly all hit
# already. Spelled entries cover the pieces a keyed one cannot hold (longer than 32 bytes,
# like table rules, or of 5-12 ids), which would otherwise be merged again on every warm pass.
#
# Thread safety: every thread has its own entries, tags and front table (a pthread key; freed by
# its destructor when the thread ends), so no entry is ever read or written by two threads.
# next_encoder_serial is an atomic increment. All of it is callable without the GIL.

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t

from cybpe._c.cpu cimport FIBONACCI      # (its C first: CYBPE_FIBONACCI, for the tag salt)
from cybpe._c.system cimport page_size   # (its C first: pthread keys, also on Windows; the atomic add)

cdef extern from *:
    """
    #ifndef CYBPE_THREAD_CACHE
    #define CYBPE_THREAD_CACHE
    #include <stdint.h>
    #include <stdlib.h>
    #include <string.h>

    #define CYBPE_THREAD_CACHE_BITS 16   /* entries: 2^16 * 64 bytes = 4 MiB */
    #define CYBPE_THREAD_CACHE_WAYS 4
    #if CYBPE_THREAD_CACHE_WAYS != 4
    #error "a tag's low two bits name its entry: four ways"
    #endif
    #define CYBPE_THREAD_CACHE_MAX_BYTES 32          /* most bytes of a piece kept with its key */
    #define CYBPE_THREAD_CACHE_MAX_IDS 4             /* most ids of a piece kept with its key */
    #define CYBPE_THREAD_CACHE_MAX_SPELLED_IDS 12    /* most ids of a piece kept without it */
    #define CYBPE_THREAD_CACHE_MAX_SPELLED_BYTES 65535

    typedef struct {                /* 64 bytes: one cache line (the block is 64-byte aligned) */
        uint64_t owner;             /* the encoder's serial; 0 = empty */
        uint32_t hash;              /* low 32 bits of the piece's hash */
        uint16_t length;            /* the piece's length in bytes, >= 2 */
        uint8_t n_ids;              /* >= 1 */
        uint8_t spelled;            /* 0: a keyed entry, 1: a spelled one (see above) */
        uint32_t ids[CYBPE_THREAD_CACHE_MAX_SPELLED_IDS];  /* keyed: ids[0:4], then the key */
    } cybpe_thread_cache_entry;
    /* The bytes of one thread's entries and their tags, in small pages from the C allocator (a
       huge page's first touch can wait for compaction, and it would come in an encode call:
       _c/system.pxd, big_table_alloc). */
    /* The front table: one entry per slot (direct-mapped), for pieces of 2..16 bytes and at
       most 10 ids, tokens included, checked before the token table and the entries above.
       An entry is valid only while its generation is the thread's: the thread takes a new
       generation whenever a call comes from another encoder than the last one. */
    #define CYBPE_FRONT_BITS 15
    #define CYBPE_FRONT_MAX_BYTES 16
    #define CYBPE_FRONT_MAX_IDS 10
    typedef struct {                /* 64 bytes */
        uint64_t head;              /* head_word of the piece */
        uint64_t tail;              /* tail_word of the piece (0 for <= 8 bytes) */
        uint32_t generation;        /* 0: empty */
        uint16_t length;
        uint8_t n_ids;
        uint8_t unused;
        uint32_t ids[CYBPE_FRONT_MAX_IDS];
    } cybpe_front_entry;
    typedef struct {                /* 64 bytes, before the front entries */
        uint64_t owner;             /* the serial of the encoder of the last call */
        uint32_t generation;
        /* Of the pieces the table answered or took lately for this encoder: how many were one
           token, how many more ids (halved now and then). Where most are tokens, the token
           table answers as fast and the table only costs. */
        uint32_t token_answers;
        uint32_t other_answers;
        uint32_t blocks;            /* blocks that chose by the two counts, for sampling */
        uint32_t unused[10];
    } cybpe_front_header;
    typedef struct {
        cybpe_front_entry* entries; /* NULL: no front table */
        uint32_t generation;
        cybpe_front_header* header;
    } cybpe_front;
    #define CYBPE_THREAD_CACHE_MAIN_SIZE ((((size_t)1) << CYBPE_THREAD_CACHE_BITS) \
                                          * (sizeof(cybpe_thread_cache_entry) + sizeof(uint32_t)))
    /* The cut-point memo (cut_points.pxd, CutMemo), after the front entries: 2^14 slots of 8
       bytes (128 KiB), valid, like the front entries, for their generation, whose low 30 bits
       each slot holds; the memo is cleared whenever those bits come round again. */
    #define CYBPE_CUT_MEMO_BITS 14
    #define CYBPE_CUT_MEMO_GENERATIONS 0x3FFFFFFFu
    #define CYBPE_THREAD_CACHE_SIZE (CYBPE_THREAD_CACHE_MAIN_SIZE + sizeof(cybpe_front_header) \
                                     + (((size_t)1) << CYBPE_FRONT_BITS) * sizeof(cybpe_front_entry) \
                                     + (((size_t)1) << CYBPE_CUT_MEMO_BITS) * sizeof(uint64_t))
    /* The header of the front table, after a thread's entries and tags. */
    static inline cybpe_front_header* cybpe_front_header_of(cybpe_thread_cache_entry* entries) {
        return (cybpe_front_header*)((uint8_t*)entries + CYBPE_THREAD_CACHE_MAIN_SIZE);
    }
    /* The cut-point memo of this thread's cache (its slots are valid for the front generation
       they hold). */
    static inline uint64_t* cybpe_thread_cut_memo(cybpe_thread_cache_entry* entries) {
        return (uint64_t*)((cybpe_front_entry*)(cybpe_front_header_of(entries) + 1)
                           + (((size_t)1) << CYBPE_FRONT_BITS));
    }
    /* The front table of this thread's cache, bound to the encoder of serial `owner`. */
    static inline cybpe_front cybpe_thread_front(cybpe_thread_cache_entry* entries, uint64_t owner) {
        cybpe_front f;
        cybpe_front_header* h;
        f.entries = NULL;
        f.generation = 0;
        f.header = NULL;
        if (entries == NULL) return f;
        h = cybpe_front_header_of(entries);
        f.entries = (cybpe_front_entry*)(h + 1);
        f.header = h;
        if (h->owner != owner || h->generation == 0) {
            h->owner = owner;
            h->token_answers = h->other_answers = h->blocks = 0;
            h->generation += 1;
            if (h->generation == 0xFFFFFFFFu) {  /* never reuse a generation: clear, start again */
                memset(f.entries, 0, (((size_t)1) << CYBPE_FRONT_BITS) * sizeof(cybpe_front_entry));
                h->generation = 1;
            }
            if (h->generation == 1 || (h->generation & CYBPE_CUT_MEMO_GENERATIONS) == 0)
                memset(cybpe_thread_cut_memo(entries), 0,
                       (((size_t)1) << CYBPE_CUT_MEMO_BITS) * sizeof(uint64_t));
        }
        f.generation = h->generation;
        return f;
    }
    /* The front table should take this block (of mostly non-ASCII bytes): it does while at most
       a third of the pieces it answered lately were one token, and for one block in 16
       either way, so that the counts follow the text. */
    static inline int cybpe_front_pays(const cybpe_front* f) {
        cybpe_front_header* h = f->header;
        h->blocks += 1;
        return 3 * (uint64_t)h->token_answers <= (uint64_t)h->token_answers + h->other_answers
               || (h->blocks & 15) == 0;
    }
    /* Count a block's answers: tokens, and pieces of more ids. */
    static inline void cybpe_front_count(const cybpe_front* f, uint32_t tokens, uint32_t others) {
        cybpe_front_header* h = f->header;
        h->token_answers += tokens;
        h->other_answers += others;
        if (h->token_answers + h->other_answers > 4096) {
            h->token_answers /= 2;
            h->other_answers /= 2;
        }
    }
    /* For tests: make this thread's front generation `generation` (bound to no encoder, so the
       next call takes generation + 1; 0xFFFFFFFE makes it clear the table and start again). */
    static inline void cybpe_thread_front_set_generation(cybpe_thread_cache_entry* entries,
                                                         uint32_t generation) {
        cybpe_front_header* h;
        if (entries == NULL) return;
        h = cybpe_front_header_of(entries);
        h->owner = 0;
        h->generation = generation;
    }

    /* The tags after the entries, four per set like the entries: a set's tags are in insertion
       order, newest first, 0 where empty; a tag's low two bits say which of the set's entries
       it stands for. */
    static inline uint32_t* cybpe_thread_cache_tags(cybpe_thread_cache_entry* entries) {
        return (uint32_t*)(entries + (((size_t)1) << CYBPE_THREAD_CACHE_BITS));
    }

    /* A piece's tag without its entry bits: bits 3-31 of its hash xor the encoder's salt
       (cybpe_thread_cache_salt), and bit 2 set (never 0). The salt keeps another encoder's
       entries for the same text from matching by tag: each such match would read an entry
       (a cache miss) only to find another owner. */
    static inline uint32_t cybpe_thread_cache_tag(uint64_t hash, uint32_t salt) {
        return ((((uint32_t)hash) ^ salt) & ~(uint32_t)7) | 4u;
    }
    /* An encoder's tag salt, from its serial: its high bits vary (a set's tags share their
       bits 3-15 with the set index; bits 16-31 tell pieces and encoders apart). */
    static inline uint32_t cybpe_thread_cache_salt(uint64_t serial) {
        return (uint32_t)((serial * CYBPE_FIBONACCI) >> 32);
    }

    /* A keyed entry's key: the bytes after its first MAX_IDS ids. */
    static inline uint8_t* cybpe_thread_cache_key_of(cybpe_thread_cache_entry* e) {
        return (uint8_t*)(e->ids + CYBPE_THREAD_CACHE_MAX_IDS);
    }

    static uint64_t cybpe_encoder_serials = 0;
    static pthread_key_t cybpe_thread_cache_key;
    static pthread_once_t cybpe_thread_cache_once = PTHREAD_ONCE_INIT;
    static int cybpe_thread_cache_key_ok = 0;

    static void cybpe_thread_cache_free(void* entries) {
        cybpe_big_table_free(entries, CYBPE_THREAD_CACHE_SIZE, 0);
    }
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
            entries = (cybpe_thread_cache_entry*)cybpe_big_table_alloc(CYBPE_THREAD_CACHE_SIZE, 0);
            if (entries == NULL) return NULL;
            if (pthread_setspecific(cybpe_thread_cache_key, entries) != 0) {
                cybpe_big_table_free(entries, CYBPE_THREAD_CACHE_SIZE, 0);
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
    uint32_t* thread_cache_tags "cybpe_thread_cache_tags"(ThreadCacheEntry* entries) noexcept nogil
    uint32_t thread_cache_tag "cybpe_thread_cache_tag"(uint64_t hash, uint32_t salt) noexcept nogil
    uint32_t thread_cache_salt "cybpe_thread_cache_salt"(uint64_t serial) noexcept nogil
    const int THREAD_CACHE_MAX_BYTES "CYBPE_THREAD_CACHE_MAX_BYTES"
    const int THREAD_CACHE_MAX_IDS "CYBPE_THREAD_CACHE_MAX_IDS"
    const int THREAD_CACHE_MAX_SPELLED_IDS "CYBPE_THREAD_CACHE_MAX_SPELLED_IDS"
    const int THREAD_CACHE_MAX_SPELLED_BYTES "CYBPE_THREAD_CACHE_MAX_SPELLED_BYTES"
    const int THREAD_CACHE_WAYS "CYBPE_THREAD_CACHE_WAYS"
    ctypedef struct FrontEntry "cybpe_front_entry":
        uint64_t head
        uint64_t tail
        uint32_t generation
        uint16_t length
        uint8_t n_ids
        uint32_t ids[10]
    ctypedef struct Front "cybpe_front":
        FrontEntry* entries
        uint32_t generation
    bint front_pays "cybpe_front_pays"(const Front* front) noexcept nogil
    void front_count "cybpe_front_count"(const Front* front, uint32_t tokens,
                                         uint32_t others) noexcept nogil
    const int FRONT_BITS "CYBPE_FRONT_BITS"
    const int FRONT_MAX_BYTES "CYBPE_FRONT_MAX_BYTES"
    const int FRONT_MAX_IDS "CYBPE_FRONT_MAX_IDS"
    Front thread_front "cybpe_thread_front"(ThreadCacheEntry* entries, uint64_t owner) noexcept nogil
    uint64_t* thread_cut_memo "cybpe_thread_cut_memo"(ThreadCacheEntry* entries) noexcept nogil
    const int CUT_MEMO_BITS "CYBPE_CUT_MEMO_BITS"
    const uint32_t CUT_MEMO_GENERATIONS "CYBPE_CUT_MEMO_GENERATIONS"
    void thread_front_set_generation "cybpe_thread_front_set_generation"(
        ThreadCacheEntry* entries, uint32_t generation) noexcept nogil
    uint64_t next_encoder_serial "cybpe_next_encoder_serial"() noexcept nogil
    uint64_t thread_cache_mask "cybpe_thread_cache_mask"() noexcept nogil
    ThreadCacheEntry* thread_cache_entries "cybpe_thread_cache_entries"() noexcept nogil
