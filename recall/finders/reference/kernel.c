/* The reference finder's query, compiled: every rule of rank.py over every name.
 *
 * kernel.py compiles this file with the C compiler on PATH when the finder indexes (the
 * index carries the library, so a query process only loads it) and calls it with ctypes:
 * rk_open takes the names' arrays (an index's, mapped from its file, or the path mode's,
 * built in memory) and the weights, and computes what depends on the weights (each
 * name's running skip cost); rk_search answers one query with its JSON list, best first.
 *
 * A query's candidates come from five rules, merged by the highest score each gives a
 * name (rank.py says why each exists): the alignment of the query as a subsequence (for a
 * glob, its segments in order; raised where the name holds the query as whole words), the
 * weak pass (a character left out), typos (an optimal string alignment distance of one or
 * two), prefixes of the lowercased name, and exact names (their word starts compared with
 * the query's). Ties break by the tie rank the index keeps (shorter name, then name).
 *
 * Where the alignment's time goes, and so how its pass is laid out: a query's character
 * sets (and the characters it holds twice) rule out most names by ANDs of bit sets over
 * the names; the names left are scanned as bytes, 16 at a time (SSE2), through the
 * positions of each query character as the bits of a word; their arrays are fetched from
 * memory a few names ahead, since they are seldom in cache; and the alignment visits
 * only the cells where a query character sits, not every cell of its band.
 *
 * Every float operation is the one the NumPy ranker made before it, in float32 (the
 * alignment) or float64 (the merged scale) and in the same order (built with
 * -ffp-contract=off, so no multiply-add is fused), so rankings are byte-identical to it.
 * The weights come in at run time (rk_weights), so the library depends on this file and
 * the compiler alone, and a change of weights compiles nothing and indexes nothing.
 * RK_SCALAR (no SSE2) and RK_LIST (the list alignment for every name) build the other
 * paths for every name, for tests that they answer alike.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__) && !defined(RK_SCALAR)
#include <emmintrin.h>
#endif

/* Names up to this many characters are scanned through the positions of each query
 * character as the bits of one word; longer ones, a place at a time. */
#define WIDE 64
/* How many names ahead of the one being scanned are fetched from memory. */
#define AHEAD 8

/* A query byte as positions() compares it: with SSE2, the byte in every lane of a vector,
 * made once a query (a broadcast per name and character was a tenth of the pass). */
#if defined(__SSE2__) && !defined(RK_SCALAR)
typedef __m128i Want;
static inline Want want_of(uint8_t c) { return _mm_set1_epi8((char)c); }
#else
typedef uint8_t Want;
static inline Want want_of(uint8_t c) { return c; }
#endif

/* The positions of a byte (want) among the name's first n (at most WIDE) bytes (its codes,
 * each below 255 as itself and any other as 255), as bits. With SSE2 (every x86-64) 16
 * bytes a compare, in blocks counted from the name's start, so a scan never reads before
 * the name and after it at most 15 bytes (arrays.py's PAD); else a byte a step
 * (RK_SCALAR builds that one, for tests). Either way the same bits: only the speed
 * differs. */
static inline uint64_t positions(const uint8_t *b, int64_t n, Want want) {
    uint64_t bits = 0;
#if defined(__SSE2__) && !defined(RK_SCALAR)
    for (int64_t at = 0; at < n; at += 16)
        bits |= (uint64_t)(uint32_t)_mm_movemask_epi8(
                    _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(b + at)), want))
                << at;
#else
    for (int64_t j = 0; j < n; j++) bits |= (uint64_t)(b[j] == want) << j;
#endif
    return n < 64 ? bits & ((UINT64_C(1) << n) - 1) : bits;
}

/* The bits above position p (p from -1: every bit) and at or below position p (p from -1:
 * none), of positions 0 to 63. */
static inline uint64_t above(int64_t p) { return p >= 63 ? 0 : ~UINT64_C(0) << (p + 1); }
static inline uint64_t upto(int64_t p) {
    return p >= 63 ? ~UINT64_C(0) : (UINT64_C(1) << (p + 1)) - 1;
}

/* The first place from `from` on (or, last_at, the last up to `upto`) where the name's
 * bytes hold c; -1 if none. Read as positions() reads them. */
static inline int64_t next_at(const uint8_t *b, int64_t n, uint8_t c, int64_t from) {
    if (from >= n) return -1;
#if defined(__SSE2__) && !defined(RK_SCALAR)
    __m128i want = _mm_set1_epi8((char)c);
    int64_t at = from & ~(int64_t)15;
    uint32_t bits = (uint32_t)_mm_movemask_epi8(
                        _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(b + at)), want)) &
                    (0xFFFFu << (from - at));
    while (!bits) {
        at += 16;
        if (at >= n) return -1;
        bits = (uint32_t)_mm_movemask_epi8(
            _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(b + at)), want));
    }
    int64_t p = at + __builtin_ctz(bits);
    return p < n ? p : -1;
#else
    for (int64_t j = from; j < n; j++)
        if (b[j] == c) return j;
    return -1;
#endif
}

static inline int64_t last_at(const uint8_t *b, uint8_t c, int64_t upto) {
    if (upto < 0) return -1;
#if defined(__SSE2__) && !defined(RK_SCALAR)
    __m128i want = _mm_set1_epi8((char)c);
    int64_t at = upto & ~(int64_t)15;
    uint32_t bits = (uint32_t)_mm_movemask_epi8(
                        _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(b + at)), want)) &
                    (0xFFFFu >> (15 - (upto - at)));
    while (!bits) {
        if (at == 0) return -1;
        at -= 16;
        bits = (uint32_t)_mm_movemask_epi8(
            _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(b + at)), want));
    }
    return at + 31 - __builtin_clz(bits);
#else
    for (int64_t j = upto; j >= 0; j--)
        if (b[j] == c) return j;
    return -1;
#endif
}

/* Whether q (m characters) is a subsequence of the name; if so, first[i] and last[i] are
 * the earliest and the latest positions where q[i] can sit in a complete match. */
static int band(const int32_t *q, int64_t m, const int32_t *s, int64_t n, int64_t *first,
                int64_t *last) {
    int64_t k = 0;
    for (int64_t j = 0; j < n && k < m; j++)
        if (s[j] == q[k]) first[k++] = j;
    if (k < m) return 0;
    k = m - 1;
    for (int64_t j = n - 1; j >= 0 && k >= 0; j--)
        if (s[j] == q[k]) last[k--] = j;
    return 1;
}

/* band() over the name's bytes, for a query of one-byte characters (qb): the same first
 * and last places, found a block of bytes at a time where band() takes a step and a
 * guess a character. A name of at most WIDE characters goes by the bits of each query
 * character's positions (kept in at[]), a longer one by next_at() and last_at(). */
static int band_bytes(const uint8_t *qb, const Want *wants, int64_t m, const uint8_t *b,
                      int64_t n, int64_t *first, int64_t *last, uint64_t *at) {
    int64_t p = -1;
    if (n > WIDE) {
        for (int64_t i = 0; i < m; i++)
            if ((first[i] = p = next_at(b, n, qb[i], p + 1)) < 0) return 0;
        p = n;
        for (int64_t i = m - 1; i >= 0; i--) last[i] = p = last_at(b, qb[i], p - 1);
        return 1;
    }
    for (int64_t i = 0; i < m; i++) {
        uint64_t next = (at[i] = positions(b, n, wants[i])) & above(p);
        if (!next) return 0;
        first[i] = p = __builtin_ctzll(next);
    }
    p = n;
    for (int64_t i = m - 1; i >= 0; i--) last[i] = p = 63 - __builtin_clzll(at[i] & upto(p - 1));
    return 1;
}

/* The glob's segments (q[seg[t]:seg[t + 1]]) appear in the name in order, each
 * contiguous: the leftmost place of each after the previous one decides existence.
 * Defined for codes (glob_holds) and for bytes (glob_holds_bytes, a query of one-byte
 * characters), as band() and band_bytes() are. */
#define GLOB_HOLDS(NAME, T)                                                                 \
    static int NAME(const T *q, const int64_t *seg, int64_t nseg, const T *s, int64_t n) { \
        int64_t pos = 0;                                                                    \
        for (int64_t t = 0; t < nseg; t++) {                                                \
            int64_t a = seg[t], size = seg[t + 1] - seg[t], found = -1;                     \
            for (int64_t p = pos; p + size <= n; p++) {                                     \
                int64_t u = 0;                                                              \
                while (u < size && s[p + u] == q[a + u]) u++;                               \
                if (u == size) {                                                            \
                    found = p;                                                              \
                    break;                                                                  \
                }                                                                           \
            }                                                                               \
            if (found < 0) return 0;                                                        \
            pos = found + size;                                                             \
        }                                                                                   \
        return 1;                                                                           \
    }
GLOB_HOLDS(glob_holds, int32_t)
GLOB_HOLDS(glob_holds_bytes, uint8_t)

/* glob_holds_bytes() for a name of at most WIDE characters, from the positions of each
 * query character (at[], as band_bytes() leaves them): the places where a segment starts
 * are those where its first character sits, its second one place on, and so on, so the
 * leftmost one after the previous segment is the lowest bit of an AND of shifted words. */
static int glob_holds_bits(const int64_t *seg, int64_t nseg, const uint64_t *at) {
    int64_t pos = 0;
    for (int64_t t = 0; t < nseg; t++) {
        uint64_t starts = above(pos - 1);
        for (int64_t u = seg[t]; u < seg[t + 1]; u++) starts &= at[u] >> (u - seg[t]);
        if (!starts) return 0;
        pos = __builtin_ctzll(starts) + (seg[t + 1] - seg[t]);
    }
    return 1;
}

/* The alignment's weights as the float32 terms it adds (each the expression the NumPy
 * ranker evaluated: a weight, or a difference of two taken in double, then rounded), and
 * the skip cost below which a character is a vowel. Made once, by rk_open. */
typedef struct {
    float first, word, base, consec, base_gap, base_tail, skip_word, hop, hop2, star, lead,
        trail, trail_word, end, neg;
    double vowel_cut;
} Cells;

/* The terms of a cell j of the name, computed where a matched character needs them (a
 * few cells a step) rather than for every cell, from st (word starts) and thr (the
 * running skip cost); each is the float32 expression the NumPy ranker evaluated. BONUS:
 * matching the name's first character or a word start. BEFORE: the skip cost before the
 * cell. CONSEC: a match right after the previous one, given its BONUS. VOWEL: 0 where
 * the cell's character is a vowel (its skip cost is the cheap one), else NEG. */
#define BONUS(j) ((j) == 0 ? w->first : st[j] ? w->word : 0.0f)
#define BEFORE(j) ((j) > 0 ? thr[(j) - 1] : 0.0f)
#define CONSEC(b) (w->base + ((b) > w->consec ? (b) : w->consec))
#define VOWEL(j) ((double)(thr[j] - BEFORE(j)) < w->vowel_cut ? 0.0f : neg)

/* The word starts up to each cell as a float, into wrd, to the band's last place (end),
 * past which no cell is read; returns the whole name's count. */
static inline float words(const uint8_t *st, int64_t n, int64_t end, float *wrd) {
    int64_t count = 0;
    for (int64_t j = 0; j <= end; j++) {
        count += st[j];
        wrd[j] = (float)count;
    }
    for (int64_t j = end + 1; j < n; j++) count += st[j];
    return (float)count;
}

/* The value of cell j of a plain step (no glob) from the reachable cells of the step
 * before: before1 to before3 point at the values of cells j - 1 to j - 3 where those are
 * reachable (else NULL); rmax and fmax are the gap jump's maxima over the reachable cells
 * up to j - 2, of which there is at least one if any. NEG if no term reads a reachable
 * cell: such a cell is not reachable. */
static inline __attribute__((always_inline)) float plain_cell(const Cells *w, int64_t j, const uint8_t *st, const float *thr, const float *wrd,
                               const float *before1, const float *before2,
                               const float *before3, int any, float rmax, float fmax) {
    const float neg = w->neg;
    float b = BONUS(j), cb = CONSEC(b), best = neg;
    if (before1) best = *before1 + cb;
    if (any) {
        float bf = BEFORE(j);
        float x = rmax + ((b + w->base_gap) - bf);
        if (x > best) best = x;
        x = fmax + ((b > 0.0f ? b + w->base_tail : neg) - w->skip_word * wrd[j - 1]);
        if (x > best) best = x;
        float vowel_back = VOWEL(j - 1);
        if (before2) {
            x = *before2 + ((cb + vowel_back) - w->hop);
            if (x > best) best = x;
        }
        if (before3) {
            x = *before3 + (((cb + VOWEL(j - 2)) + vowel_back) - w->hop2);
            if (x > best) best = x;
        }
    }
    return best > neg ? best : neg;
}

/* Best alignment score of q against one name of at most WIDE characters: an fzy-style
 * programme with one step per query character, as the NumPy ranker computed it
 * (see weights.py), with at[i] the positions of q[i] (band_bytes).
 *
 * The NumPy ranker filled every cell of a step, a cell whose character is not q[i] with
 * NEG plus what it would have held. Here a step visits only the cells where q[i] sits in
 * its band (first[i] to last[i]): a few, not the band. A cell is reachable when a cell of
 * the step before is (at step 0, every one); a reachable cell's value is the maximum of
 * the same terms, from the same cells of the step before, in the same float32 operations,
 * as the NumPy ranker's. Every term it took from the other cells is NEG plus at most the
 * bonuses of a query's length, below -9.9e8, while a reachable cell always has a real term
 * (the gap jump, rmax, covers every reachable cell two or more back; the consecutive
 * match, the one just before), above -1e6: so no such term ever decided a maximum, and
 * each reachable cell and the score (the best final cell; a complete match exists, since
 * band_bytes found one) are the NumPy ranker's to the bit. */
static float align_bits(const Cells *w, const uint8_t *star, int is_glob, int64_t m, const uint8_t *st,
                        const float *thr, int64_t n, const int64_t *first, const int64_t *last,
                        const uint64_t *at, float *wrd) {
    const float neg = w->neg;
    float values[2][WIDE], *d = values[0], *nd = values[1], *swap;
    float total_cost = thr[n - 1], total_words = words(st, n, last[m - 1], wrd);
    uint64_t reach = at[0] & above(first[0] - 1) & upto(last[0]);
    for (uint64_t c = reach; c; c &= c - 1) {
        int64_t j = __builtin_ctzll(c);
        d[j] = (w->base + BONUS(j)) - w->lead * BEFORE(j);
    }
    for (int64_t i = 1; i < m; i++) {
        uint64_t cells = at[i] & above(first[i] - 1) & upto(last[i]), pending = reach, held = 0;
        float rmax = neg, fmax = neg;
        int any = 0; /* a reachable cell has entered rmax and fmax (smax for a star) */
        for (uint64_t c = cells; c; c &= c - 1) {
            int64_t j = __builtin_ctzll(c);
            if (star[i]) {
                for (uint64_t take = pending & upto(j - 1); take; take &= take - 1) {
                    int64_t k = __builtin_ctzll(take);
                    float v = d[k] + w->star * thr[k];
                    if (v > rmax) rmax = v;
                    any = 1;
                }
                pending &= ~upto(j - 1);
                if (!any) continue;
                float v = (rmax - w->star * BEFORE(j)) + (w->base + BONUS(j));
                nd[j] = v > neg ? v : neg;
                held |= UINT64_C(1) << j;
                continue;
            }
            int just_before = j >= 1 && (reach >> (j - 1) & 1);
            if (is_glob) {
                if (!just_before) continue;
                float v = d[j - 1] + CONSEC(BONUS(j));
                nd[j] = v > neg ? v : neg;
                held |= UINT64_C(1) << j;
                continue;
            }
            if (j >= 2) {
                for (uint64_t take = pending & upto(j - 2); take; take &= take - 1) {
                    int64_t k = __builtin_ctzll(take);
                    float r = d[k] + thr[k];
                    if (r > rmax) rmax = r;
                    float f = d[k] + w->skip_word * wrd[k];
                    if (f > fmax) fmax = f;
                    any = 1;
                }
                pending &= ~upto(j - 2);
            }
            if (!just_before && !any) continue;
            nd[j] = plain_cell(w, j, st, thr, wrd, just_before ? &d[j - 1] : NULL,
                               any && (reach >> (j - 2) & 1) ? &d[j - 2] : NULL,
                               any && j >= 3 && (reach >> (j - 3) & 1) ? &d[j - 3] : NULL, any,
                               rmax, fmax);
            held |= UINT64_C(1) << j;
        }
        reach = held;
        swap = d;
        d = nd;
        nd = swap;
    }
    float result = neg;
    int first_cell = 1;
    for (uint64_t c = reach; c; c &= c - 1) {
        int64_t j = __builtin_ctzll(c);
        float v = d[j] - w->trail * (total_cost - thr[j]);
        v = v - w->trail_word * (total_words - wrd[j]);
        if (j == n - 1) v = v + w->end;
        if (first_cell || v > result) result = v;
        first_cell = 0;
    }
    return result;
}

/* The next cell of step i from j on: a place up to last (the band's end) where the name
 * holds q[i]; -1 if none. */
static inline int64_t next_cell(const int32_t *q, const uint8_t *qb, int qbytes, const int32_t *s,
                                const uint8_t *b, int64_t i, int64_t j, int64_t last) {
    if (qbytes) return next_at(b, last + 1, qb[i], j);
    for (; j <= last; j++)
        if (s[j] == q[i]) return j;
    return -1;
}

/* align_bits() for any name and query (a name longer than WIDE, a query character of more
 * than a byte): the reachable cells of a step as a sorted list of places (pc) and their
 * values (pv), the cells of the next step found by scanning its band (next_cell). A cell j
 * of step i reads the cells of step i - 1 up to j - 2 in place order (pend counts those
 * read), and j - 1, j - 2 and j - 3 beside that count. */
static float align_list(const Cells *w, const int32_t *q, const uint8_t *qb, int qbytes, const uint8_t *star,
                        int is_glob, int64_t m, const int32_t *s, const uint8_t *b,
                        const uint8_t *st, const float *thr, int64_t n, const int64_t *first,
                        const int64_t *last, float *scratch, int64_t *places, int64_t width) {
    const float neg = w->neg;
    float *wrd = scratch, *pv = scratch + width, *cv = scratch + 2 * width, *values;
    int64_t *pc = places, *cc = places + width, *cells, np = 0;
    float total_cost = thr[n - 1], total_words = words(st, n, last[m - 1], wrd);
#define CELLS(I)                                                                  \
    for (int64_t j = next_cell(q, qb, qbytes, s, b, I, first[I], last[I]); j >= 0; \
         j = next_cell(q, qb, qbytes, s, b, I, j + 1, last[I]))
    CELLS(0) {
        pc[np] = j;
        pv[np++] = (w->base + BONUS(j)) - w->lead * BEFORE(j);
    }
    for (int64_t i = 1; i < m; i++) {
        int64_t nc = 0, pend = 0;
        float rmax = neg, fmax = neg;
        CELLS(i) {
            if (star[i]) {
                for (; pend < np && pc[pend] <= j - 1; pend++) {
                    float v = pv[pend] + w->star * thr[pc[pend]];
                    if (v > rmax) rmax = v;
                }
                if (!pend) continue;
                float v = (rmax - w->star * BEFORE(j)) + (w->base + BONUS(j));
                cc[nc] = j;
                cv[nc++] = v > neg ? v : neg;
                continue;
            }
            if (is_glob) {
                while (pend < np && pc[pend] < j - 1) pend++;
                if (pend == np || pc[pend] != j - 1) continue;
                float v = pv[pend] + CONSEC(BONUS(j));
                cc[nc] = j;
                cv[nc++] = v > neg ? v : neg;
                continue;
            }
            for (; pend < np && pc[pend] <= j - 2; pend++) {
                int64_t k = pc[pend];
                float r = pv[pend] + thr[k];
                if (r > rmax) rmax = r;
                float f = pv[pend] + w->skip_word * wrd[k];
                if (f > fmax) fmax = f;
            }
            int just_before = pend < np && pc[pend] == j - 1;
            if (!just_before && !pend) continue;
            int64_t three = -1; /* where cell j - 3 is among the cells read, if it is */
            if (pend && pc[pend - 1] == j - 3)
                three = pend - 1;
            else if (pend > 1 && pc[pend - 2] == j - 3)
                three = pend - 2;
            cc[nc] = j;
            cv[nc++] = plain_cell(w, j, st, thr, wrd, just_before ? &pv[pend] : NULL,
                                  pend && pc[pend - 1] == j - 2 ? &pv[pend - 1] : NULL,
                                  three >= 0 ? &pv[three] : NULL, pend > 0, rmax, fmax);
        }
        cells = pc, pc = cc, cc = cells;
        values = pv, pv = cv, cv = values;
        np = nc;
    }
#undef CELLS
    float result = neg;
    for (int64_t t = 0; t < np; t++) {
        int64_t j = pc[t];
        float v = pv[t] - w->trail * (total_cost - thr[j]);
        v = v - w->trail_word * (total_words - wrd[j]);
        if (j == n - 1) v = v + w->end;
        if (t == 0 || v > result) result = v;
    }
    return result;
}

/* What kernel.py passes in (its ctypes structures mirror these three). */

/* The weights: weights.py's (the alignment) and rank.py's (the merged scale). */
typedef struct {
    double base, bonus_first, bonus_word, bonus_consec, bonus_end, gap_open, vowel_hop,
        tail_jump, skip_word, skip_vowel, skip_other, skip_lead, skip_trail, trail_word,
        star_factor, neg;
    double exact_case, exact_lower, exact_squashed, typo_one, typo_short, typo_two, prefix,
        weak, whole, exact_words;
    int64_t typo_long, weak_cap, weak_when;
} rk_weights;

/* The names' arrays, as the index keeps them (store.py; arrays.py builds them). */
typedef struct {
    int64_t count; /* distinct names */
    int64_t chars; /* letters and digits of all of them */
    const int64_t *offsets, *lengths; /* each name's run of codes: contiguous, in order */
    const int32_t *codes;             /* the folded code points of every name's letters and digits */
    const uint8_t *bytes;  /* the codes as bytes (255 for a code of 255 or more), PAD after */
    const uint8_t *starts; /* 1 where a word starts */
    const uint64_t *masks; /* each name's character-set bits */
    const uint64_t *sets, *twice_sets; /* for each bit, the names with it (twice), 64 a word */
    const int64_t *by_length;     /* the names by the length of their lowercased form */
    const uint64_t *length_masks; /* their character-set masks, in that order */
    const int64_t *length_starts; /* where each such length starts in by_length */
    int64_t lengths_count;        /* entries of length_starts: the longest + 2 */
    const uint8_t *lower;         /* the lowercased names, sorted, as UTF-8 */
    int64_t lower_size;
    const int64_t *lower_ends;  /* where each one ends in lower */
    const int64_t *lower_order; /* the name at each place of the sorted list */
    const int64_t *lower_rank;  /* the place of each name in it */
    const uint8_t *names;       /* the names as UTF-8 */
    int64_t names_size;
    const int64_t *name_ends;
    const int64_t *tie_rank; /* each name's place in the tie order */
    const uint8_t *rows;     /* each name's answer row, JSON */
    int64_t rows_size;
    const int64_t *row_ends;
} rk_names;

/* One query, as rank.parse_query splits it. Code points are UTF-32, texts UTF-8; a text
 * pointer is NULL where its rule does not apply to the query. */
typedef struct {
    const uint32_t *chars; /* its letters and digits, folded to lowercase */
    int64_t m;
    const uint8_t *star; /* m bytes: 1 where a glob `*` stands before chars[i] */
    int32_t is_glob;
    const uint32_t *typo_text; /* the query lowercased, separators and all (typos) */
    int64_t typo_len;
    const uint32_t *typo_chars; /* that text's letters and digits, if not chars */
    int64_t typo_chars_len;
    const uint8_t *prefix; /* the query lowercased, for the names that start with it */
    int64_t prefix_len;
    const uint8_t *exact; /* the text an exact name is compared with, as typed */
    int64_t exact_len;
    const uint8_t *exact_lower; /* and lowercased */
    int64_t exact_lower_len;
} rk_query;

/* A candidate of the order: its rounded, negated score, its tie rank and its name. */
typedef struct {
    double key;
    int64_t tie, id;
} Entry;

/* A candidate as the radix sort moves it: its key (see order()) and its name. */
typedef struct {
    uint64_t key;
    int64_t id;
} Keyed;

/* An open set of names: what rk_open was given, what it made of the weights, and the
 * buffers a query writes, one slot a name at most (kept: fresh arrays of that size would
 * be fresh pages, each faulted in at every query). */
typedef struct {
    rk_names n;
    rk_weights w;
    Cells c;
    float *through; /* each character's skip cost, summed from its name's start */
    int64_t width;  /* the longest name's letters and digits */
    int64_t lower_widest; /* the most bytes of a lowercased name */
    int64_t *ids, *exact, *near; /* the names match() and near() find, and an order */
    float *raw;                  /* match()'s scores */
    uint8_t *whole;              /* and whether each holds the query as whole words */
    uint32_t *mark, gen; /* mark[i] == gen: name i is a candidate of this query, value[i] */
    double *value;
    int64_t *cand; /* the candidates, in the order they came */
    double *cand_value;
    Entry *order;  /* the candidates as order() compares them, where keys do not fit */
    Keyed *keyed;  /* as it radix sorts them, and room for as many more */
    int64_t tie_bits; /* the bits of the names' count: every tie rank is below 2 ** this */
    uint32_t *text; /* a lowercased name's code points, for the typo distance */
    int64_t answered; /* the last query's answer: its names, best first, in ids */
} rk_state;

/* A query as the passes read it: its codes (and bytes), stars, glob segments, and the
 * character-set bits it needs. */
typedef struct {
    int32_t *q;
    uint8_t *qb;
    int qbytes; /* every code below BYTE_OTHER: the passes may compare bytes */
    const uint8_t *star;
    int64_t *seg, nseg;
    int is_glob;
    int64_t m;
    uint64_t qmask, qtwice, *qbits;
    Want *wants; /* each byte of qb as positions() compares it */
} Q;

#define BYTE_OTHER 255

/* The bit of a folded code point in a name's character-set mask (chars.py's char_bit). */
static uint64_t char_bit(uint32_t code) {
    if (code >= 97 && code <= 122) return UINT64_C(1) << (code - 97);
    if (code >= 48 && code <= 57) return UINT64_C(1) << (26 + code - 48);
    return UINT64_C(1) << (36 + code % 28);
}

/* The bits set in x (the machine's popcount where the build has it, else a few shifts
 * and masks: baseline x86-64 has no popcount instruction, and a call per name costs). */
static inline int64_t ones(uint64_t x) {
#ifdef __POPCNT__
    return __builtin_popcountll(x);
#else
    x -= x >> 1 & UINT64_C(0x5555555555555555);
    x = (x & UINT64_C(0x3333333333333333)) + (x >> 2 & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
    return (int64_t)(x * UINT64_C(0x0101010101010101) >> 56);
#endif
}

static void q_free(Q *q) {
    free(q->q);
    free(q->qb);
    free(q->seg);
    free(q->qbits);
    free(q->wants);
}

/* The query's chars made into what the passes read; 0 if memory ran out. */
static int q_make(Q *q, const rk_query *in) {
    int64_t m = in->m;
    size_t room = (size_t)(m ? m : 1);
    q->q = malloc(sizeof(int32_t) * room);
    q->qb = malloc(room);
    q->seg = malloc(sizeof(int64_t) * (room + 1));
    q->qbits = malloc(sizeof(uint64_t) * room);
    q->wants = aligned_alloc(16, sizeof(Want) * room);
    if (!q->q || !q->qb || !q->seg || !q->qbits || !q->wants) {
        q_free(q);
        return 0;
    }
    q->m = m;
    q->star = in->star;
    q->is_glob = in->is_glob;
    q->qbytes = m > 0;
    q->qmask = q->qtwice = 0;
    q->nseg = 0;
    q->seg[0] = 0;
    for (int64_t i = 0; i < m; i++) {
        uint32_t c;
        memcpy(&c, in->chars + i, sizeof c);
        q->q[i] = (int32_t)c;
        q->qb[i] = (uint8_t)c;
        q->wants[i] = want_of((uint8_t)c);
        if (c >= BYTE_OTHER) q->qbytes = 0;
        q->qbits[i] = char_bit(c);
        if (q->qmask & q->qbits[i]) {
            for (int64_t k = 0; k < i; k++)
                if ((uint32_t)q->q[k] == c) q->qtwice |= q->qbits[i];
        }
        q->qmask |= q->qbits[i];
        if (i > 0 && in->star[i]) q->seg[++q->nseg] = i;
    }
    q->seg[++q->nseg] = m;
    return 1;
}

/* The bitsets over the names (words of 64, name i at bit i % 64 of word i / 64) that a
 * name must be in: for each bit of qmask, the names whose character set has it (sets), and
 * for each bit of qtwice, the names holding such a character twice (twice_sets). Into
 * need (room for 128); returns how many. */
static int64_t required(uint64_t qmask, uint64_t qtwice, const uint64_t *sets,
                        const uint64_t *twice_sets, int64_t words, const uint64_t **need) {
    int64_t count = 0;
    for (int64_t b = 0; b < 64; b++) {
        if (qmask >> b & 1) need[count++] = sets + b * words;
        if (qtwice >> b & 1) need[count++] = twice_sets + b * words;
    }
    return count;
}

/* Whether a name (its word starts st, len of them) holds m characters from p on as whole
 * words: from a word start to the end of a word, with no word of one letter among them
 * (one letter typed is no word typed whole: `bc` is as likely in key_bch as in
 * key_b_c_hash, and the alignment decides). */
static int whole_at(const uint8_t *st, int64_t len, int64_t p, int64_t m) {
    if (!st[p] || (p + m < len && !st[p + m])) return 0;
    int64_t word = p;
    for (int64_t j = p + 1; j <= p + m; j++)
        if (j == p + m || st[j]) {
            if (j - word < 2) return 0;
            word = j;
        }
    return 1;
}

/* Whether name i holds the query's letters and digits as one run of its whole words
 * (whole_at: `results` in collect_results_ok, `float limits` in test_float_limits), where
 * an alignment only sees a run at a word start. From at, the positions of each query
 * character (band_bytes() on a name of at most WIDE characters), the places where the
 * run starts are the bits of an AND of shifted words; else the name is scanned. */
static int whole_words(const Q *q, const rk_names *n, int64_t i, const uint64_t *at) {
    int64_t m = q->m, len = n->lengths[i], o = n->offsets[i];
    const uint8_t *st = n->starts + o;
    if (at) {
        uint64_t run = ~UINT64_C(0);
        for (int64_t k = 0; k < m && run; k++) run &= at[k] >> k;
        for (; run; run &= run - 1)
            if (whole_at(st, len, __builtin_ctzll(run), m)) return 1;
        return 0;
    }
    const uint8_t *b = n->bytes + o;
    const int32_t *c = n->codes + o;
    for (int64_t p = 0; p + m <= len; p++)
        if (st[p] && (p + m == len || st[p + m]) &&
            (q->qbytes ? !memcmp(b + p, q->qb, (size_t)m)
                       : !memcmp(c + p, q->q, sizeof(int32_t) * (size_t)m)) &&
            whole_at(st, len, p, m))
            return 1;
    return 0;
}

/* Every name that holds q (as a subsequence, or the glob's segments in order): its index
 * into s->ids, its raw alignment score into s->raw and whether it holds q as whole words
 * (not for a glob) into s->whole, in name order; the names whose
 * letters and digits are q's exactly into s->exact (*exacts of them, a glob's included
 * whether the glob holds or not). Returns the number of matches, or -1 if memory ran
 * out. */
static int64_t match(rk_state *s, const Q *q, int64_t *exacts) {
    const rk_names *n = &s->n;
    const Cells *w = &s->c;
    int64_t m = q->m, width = s->width;
    size_t room = (size_t)(width > WIDE ? width : WIDE);
    float *scratch = malloc(sizeof(float) * 3 * room);
    int64_t *places = malloc(sizeof(int64_t) * 2 * room);
    int64_t *first = malloc(sizeof(int64_t) * 2 * (size_t)m);
    uint64_t *at = malloc(sizeof(uint64_t) * (size_t)m);
    if (!scratch || !places || !first || !at) {
        free(scratch);
        free(places);
        free(first);
        free(at);
        return -1;
    }
    int64_t *ids = s->ids, *exact = s->exact, *last = first + m, found = 0, nexact = 0, held = 0;
    float *raw = s->raw;
    const int64_t *offsets = n->offsets, *lengths = n->lengths;
    const uint8_t *bytes = n->bytes, *starts = n->starts;
    const int32_t *codes = n->codes;
    const float *through = s->through;
    const int32_t *qc = q->q;
    const uint8_t *qb = q->qb;
    int qbytes = q->qbytes, is_glob = q->is_glob;
    /* First the names whose character set holds the query's, and that hold each character
     * the query holds twice twice or more, into ids: an AND of the bitsets of those names,
     * 64 names a word. Then the ones a few places on are fetched from memory while one is
     * scanned (a name's arrays are seldom in cache). A match is written into ids at or
     * before its own place, so no place is written before it is read. */
    const uint64_t *need[128];
    int64_t needs = required(q->qmask, q->qtwice, n->sets, n->twice_sets,
                             (n->count + 63) / 64, need);
    for (int64_t word = 0; word < (n->count + 63) / 64; word++) {
        uint64_t in = ~UINT64_C(0);
        for (int64_t k = 0; k < needs; k++) in &= need[k][word];
        for (; in; in &= in - 1) ids[held++] = word * 64 + __builtin_ctzll(in);
    }
    for (int64_t c = 0; c < held; c++) {
        if (c + 2 * AHEAD < held) {
            __builtin_prefetch(offsets + ids[c + 2 * AHEAD]);
            __builtin_prefetch(lengths + ids[c + 2 * AHEAD]);
        }
        if (c + AHEAD < held) {
            int64_t ahead = ids[c + AHEAD], o = offsets[ahead];
            __builtin_prefetch(bytes + o);
            __builtin_prefetch(starts + o);
            __builtin_prefetch(through + o);
            __builtin_prefetch(through + o + lengths[ahead] - 1);
            if (!qbytes) __builtin_prefetch(codes + o);
        }
        int64_t i = ids[c], len = lengths[i];
        const int32_t *sc = codes + offsets[i];
        const uint8_t *b = bytes + offsets[i];
        if (len < m) continue;
        if (qbytes ? !band_bytes(qb, q->wants, m, b, len, first, last, at)
                   : !band(qc, m, sc, len, first, last))
            continue;
        if (len == m) exact[nexact++] = i;
        if (is_glob && !(qbytes && len <= WIDE ? glob_holds_bits(q->seg, q->nseg, at)
                         : qbytes              ? glob_holds_bytes(qb, q->seg, q->nseg, b, len)
                                               : glob_holds(qc, q->seg, q->nseg, sc, len)))
            continue;
        ids[found] = i;
#ifndef RK_LIST
        if (qbytes && len <= WIDE)
            raw[found] = align_bits(w, q->star, is_glob, m, starts + offsets[i],
                                    through + offsets[i], len, first, last, at, scratch);
        else
#endif
            raw[found] = align_list(w, qc, qb, qbytes, q->star, is_glob, m, sc, b,
                                    starts + offsets[i], through + offsets[i], len, first, last,
                                    scratch, places, width);
        s->whole[found] = !is_glob && whole_words(q, n, i, qbytes && len <= WIDE ? at : NULL);
        found++;
    }
    free(scratch);
    free(places);
    free(first);
    free(at);
    *exacts = nexact;
    return found;
}

/* Whether the name holds all but at most one of q's characters in order: q[t] can be
 * left out when q[:t], matched greedily from the left (ends[t] past its last place),
 * ends before q[t + 1:], matched greedily from the right, starts. ends holds m + 1. */
static int near_scan(const int32_t *q, int64_t m, const int32_t *s, int64_t n, int64_t *ends) {
    int64_t k = 0;
    ends[0] = 0;
    for (int64_t j = 0; j < n && k < m; j++)
        if (s[j] == q[k]) ends[++k] = j + 1;
    for (int64_t t = k + 1; t <= m; t++) ends[t] = n + 1;
    int64_t begin = n, t = m - 1, j = n - 1;
    for (;;) {
        if (ends[t] <= begin) return 1;
        if (t == 0) return 0;
        while (j >= 0 && s[j] != q[t]) j--;
        if (j < 0) return 0;
        begin = j--;
        t--;
    }
}

/* near_scan() over the name's bytes, for a query of one-byte characters: the same
 * answer, as band_bytes() is band(). */
static int near_bytes(const uint8_t *qb, int64_t m, const uint8_t *b, int64_t n, int64_t *ends) {
    int64_t k = 0, p = -1;
    ends[0] = 0;
    while (k < m && (p = next_at(b, n, qb[k], p + 1)) >= 0) ends[++k] = p + 1;
    for (int64_t t = k + 1; t <= m; t++) ends[t] = n + 1;
    int64_t begin = n, t = m - 1, j = n - 1;
    for (;;) {
        if (ends[t] <= begin) return 1;
        if (t == 0) return 0;
        if ((j = last_at(b, qb[t], j)) < 0) return 0;
        begin = j--;
        t--;
    }
}

/* near_bytes() for a name of at most WIDE characters, over the positions of each query
 * character (as band_bytes() goes for such a name): the same answer. A name that holds
 * all of q in order is near at once, as near_scan() finds at its first test. */
static int near_bits(const Want *wants, int64_t m, const uint8_t *b, int64_t n, int64_t *ends,
                     uint64_t *at) {
    int64_t k = 0, p = -1;
    ends[0] = 0;
    for (; k < m; k++) {
        uint64_t next = (at[k] = positions(b, n, wants[k])) & above(p);
        if (!next) break;
        ends[k + 1] = (p = __builtin_ctzll(next)) + 1;
    }
    if (k == m) return 1;
    for (int64_t t = k + 1; t <= m; t++) ends[t] = n + 1;
    int64_t begin = n, t = m - 1, j = n - 1;
    for (;;) {
        if (ends[t] <= begin) return 1;
        if (t == 0 || j < 0) return 0;
        uint64_t before = (t <= k ? at[t] : positions(b, n, wants[t])) & upto(j);
        if (!before) return 0;
        begin = 63 - __builtin_clzll(before);
        j = begin - 1;
        t--;
    }
}

/* Whether q without its character at t is a subsequence of the name. */
static int holds_without(const int32_t *q, const uint8_t *qb, const Want *wants, int qbytes,
                         int64_t m, int64_t t, const int32_t *s, const uint8_t *b, int64_t n) {
    if (qbytes && n <= WIDE) {
        int64_t p = -1;
        for (int64_t i = 0; i < m; i++) {
            if (i == t) continue;
            uint64_t next = positions(b, n, wants[i]) & above(p);
            if (!next) return 0;
            p = __builtin_ctzll(next);
        }
        return 1;
    }
    if (qbytes) {
        int64_t p = -1;
        for (int64_t i = 0; i < m; i++)
            if (i != t && (p = next_at(b, n, qb[i], p + 1)) < 0) return 0;
        return 1;
    }
    int64_t k = t == 0 ? 1 : 0;
    for (int64_t j = 0; j < n && k < m; j++)
        if (s[j] == q[k] && ++k == t) k++;
    return k >= m;
}

/* The names that hold all but at most one of q's characters in order (their longest
 * common subsequence with q is m - 1 or more), in name order, into s->near; returns how
 * many, or -1 if memory ran out. A name whose mask lacks one of the query's bits lacks
 * every query character of that bit, so it can only be the one left out: none if two
 * query characters have it, else the rest must be a subsequence. A name with every bit is
 * tested by near_bits or near_scan. */
static int64_t near(rk_state *s, const Q *q) {
    const rk_names *n = &s->n;
    int64_t m = q->m, count = n->count, words = (count + 63) / 64;
    int64_t *ends = malloc(sizeof(int64_t) * (size_t)(m + 1));
    uint64_t *at = malloc(sizeof(uint64_t) * (size_t)m);
    if (!ends || !at) {
        free(ends);
        free(at);
        return -1;
    }
    const int64_t *offsets = n->offsets, *lengths = n->lengths;
    const int32_t *codes = n->codes, *qc = q->q;
    const uint8_t *bytes = n->bytes, *qb = q->qb;
    int qbytes = q->qbytes;
    int64_t *ids = s->near;
    int64_t lone[64]; /* by bit: the one query position with it, or -1 for several */
    for (int64_t i = 0; i < m; i++) lone[__builtin_ctzll(q->qbits[i])] = -2;
    for (int64_t i = 0; i < m; i++) {
        int64_t *slot = &lone[__builtin_ctzll(q->qbits[i])];
        *slot = *slot == -2 ? i : -1;
    }
    /* The names that fail at most one of the bitsets a match must be in (required()),
     * into ids: a character a name lacks is one query character to leave out, and so is
     * one the query holds twice and the name at most once. Counted a word of 64 names at
     * a time: `all` in every set so far, `one` out of exactly one. Then each scanned as
     * match() does (its arrays fetched a few names ahead). */
    const uint64_t *need[128];
    int64_t needs = required(q->qmask, q->qtwice, n->sets, n->twice_sets, words, need);
    int64_t held = 0, found = 0;
    for (int64_t word = 0; word < words; word++) {
        uint64_t all = ~UINT64_C(0), one = 0;
        for (int64_t k = 0; k < needs; k++) {
            uint64_t in = need[k][word];
            one = (one & in) | (all & ~in);
            all &= in;
        }
        uint64_t is_near = all | one;
        if (word == words - 1 && count % 64) is_near &= (UINT64_C(1) << (count % 64)) - 1;
        for (; is_near; is_near &= is_near - 1) ids[held++] = word * 64 + __builtin_ctzll(is_near);
    }
    for (int64_t c = 0; c < held; c++) {
        if (c + 2 * AHEAD < held) __builtin_prefetch(offsets + ids[c + 2 * AHEAD]);
        if (c + AHEAD < held) {
            int64_t o = offsets[ids[c + AHEAD]];
            __builtin_prefetch(qbytes ? (const void *)(bytes + o) : (const void *)(codes + o));
        }
        int64_t i = ids[c], len = lengths[i];
        uint64_t missing = q->qmask & ~n->masks[i];
        const int32_t *sc = codes + offsets[i];
        const uint8_t *b = bytes + offsets[i];
        int ok;
        if (missing) {
            int64_t t = lone[__builtin_ctzll(missing)];
            ok = t >= 0 && len >= m - 1 && holds_without(qc, qb, q->wants, qbytes, m, t, sc, b, len);
        } else {
            ok = !qbytes       ? near_scan(qc, m, sc, len, ends)
                 : len <= WIDE ? near_bits(q->wants, m, b, len, ends, at)
                               : near_bytes(qb, m, b, len, ends);
        }
        if (ok) ids[found++] = i;
    }
    free(ends);
    free(at);
    return found;
}

/* The optimal string alignment distance (an edit: insert, delete, substitute, or swap two
 * neighbours, no character edited twice) of pattern p (m code points) and text t, up to
 * max: max + 1 for anything further. For m up to 64, Hyyrö's bit-parallel form (2003), a
 * word operation a character of t, with pm the bits of p's places of each of t's
 * characters; else the table, a row at a time. Both are the distance RapidFuzz's
 * OSA.distance gave the NumPy ranker. */
typedef struct {
    uint64_t ascii[128];
    uint32_t wide[64]; /* p's code points of 128 and up, and their places */
    uint64_t wide_bits[64];
    int64_t nwide;
} Pattern;

static void pattern_make(Pattern *pm, const uint32_t *p, int64_t m) {
    memset(pm, 0, sizeof *pm);
    for (int64_t i = 0; i < m && i < 64; i++) {
        uint64_t bit = UINT64_C(1) << i;
        if (p[i] < 128) {
            pm->ascii[p[i]] |= bit;
            continue;
        }
        int64_t k = 0;
        while (k < pm->nwide && pm->wide[k] != p[i]) k++;
        if (k == pm->nwide) pm->wide[pm->nwide++] = p[i];
        pm->wide_bits[k] |= bit;
    }
}

static inline uint64_t pattern_bits(const Pattern *pm, uint32_t c) {
    if (c < 128) return pm->ascii[c];
    for (int64_t k = 0; k < pm->nwide; k++)
        if (pm->wide[k] == c) return pm->wide_bits[k];
    return 0;
}

static int64_t osa_bits(const Pattern *pm, int64_t m, const uint32_t *t, int64_t n, int64_t max) {
    uint64_t vp = ~UINT64_C(0), vn = 0, d0 = 0, pm_old = 0, last = UINT64_C(1) << (m - 1);
    int64_t dist = m;
    for (int64_t j = 0; j < n; j++) {
        uint64_t pm_j = pattern_bits(pm, t[j]);
        uint64_t tr = (((~d0) & pm_j) << 1) & pm_old;
        d0 = ((((pm_j & vp) + vp) ^ vp) | pm_j | vn) | tr;
        uint64_t hp = vn | ~(d0 | vp), hn = d0 & vp;
        dist += (hp & last) != 0;
        dist -= (hn & last) != 0;
        hp = (hp << 1) | 1;
        hn <<= 1;
        vp = hn | ~(d0 | hp);
        vn = hp & d0;
        pm_old = pm_j;
    }
    return dist <= max ? dist : max + 1;
}

static int64_t osa_table(const uint32_t *p, int64_t m, const uint32_t *t, int64_t n, int64_t max,
                         int64_t *rows) {
    int64_t *two = rows, *one = rows + (m + 1), *cur = rows + 2 * (m + 1);
    for (int64_t i = 0; i <= m; i++) one[i] = i;
    for (int64_t j = 1; j <= n; j++) {
        cur[0] = j;
        for (int64_t i = 1; i <= m; i++) {
            int64_t best = one[i - 1] + (p[i - 1] != t[j - 1]);
            if (one[i] + 1 < best) best = one[i] + 1;
            if (cur[i - 1] + 1 < best) best = cur[i - 1] + 1;
            if (i > 1 && j > 1 && p[i - 1] == t[j - 2] && p[i - 2] == t[j - 1] &&
                two[i - 2] + 1 < best)
                best = two[i - 2] + 1;
            cur[i] = best;
        }
        int64_t *spare = two;
        two = one, one = cur, cur = spare;
    }
    return one[m] <= max ? one[m] : max + 1;
}

/* A UTF-8 text's code points into out (room for len); bytes that are not UTF-8 (which an
 * index never holds) each as itself, so a read never runs past len. */
static int64_t utf8_decode(const uint8_t *b, int64_t len, uint32_t *out) {
    int64_t k = 0, i = 0;
    while (i < len) {
        uint32_t c = b[i];
        if (c < 0x80) {
            out[k++] = c;
            i++;
        } else if ((c >> 5) == 6 && i + 1 < len) {
            out[k++] = (c & 0x1F) << 6 | (b[i + 1] & 0x3F);
            i += 2;
        } else if ((c >> 4) == 14 && i + 2 < len) {
            out[k++] = (c & 0x0F) << 12 | (uint32_t)(b[i + 1] & 0x3F) << 6 | (b[i + 2] & 0x3F);
            i += 3;
        } else if ((c >> 3) == 30 && i + 3 < len) {
            out[k++] = (c & 0x07) << 18 | (uint32_t)(b[i + 1] & 0x3F) << 12 |
                       (uint32_t)(b[i + 2] & 0x3F) << 6 | (b[i + 3] & 0x3F);
            i += 4;
        } else {
            out[k++] = c;
            i++;
        }
    }
    return k;
}

static inline int64_t lower_start(const rk_names *n, int64_t place) {
    return place ? n->lower_ends[place - 1] : 0;
}

/* The first place of the sorted lowercased names whose text is t (nt bytes) or after it,
 * in UTF-8's byte order, which is the code points' order (Python's bisect_left). */
static int64_t lower_bound(const rk_names *n, const uint8_t *t, int64_t nt) {
    int64_t lo = 0, hi = n->count;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2, from = lower_start(n, mid);
        int64_t size = n->lower_ends[mid] - from, common = size < nt ? size : nt;
        int c = memcmp(n->lower + from, t, (size_t)common);
        if (c < 0 || (c == 0 && size < nt))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static inline int same_bytes(const uint8_t *a, int64_t na, const uint8_t *b, int64_t nb) {
    return na == nb && memcmp(a, b, (size_t)na) == 0;
}

/* The word starts of an ASCII text's letters and digits, as arrays.py marks a name's
 * (after a separator, at a camel hump, before the capital that starts a word after a run
 * of capitals, after digits), into st (m bytes): 1 if the text is ASCII and holds m
 * letters and digits, else 0 (its words are then not compared). */
static int word_starts(const uint8_t *t, int64_t len, int64_t m, uint8_t *st) {
    enum { OTHER, LOWER, UPPER, DIGIT };
#define KIND(c) ((c) >= 'a' && (c) <= 'z'   ? LOWER \
                 : (c) >= 'A' && (c) <= 'Z' ? UPPER \
                 : (c) >= '0' && (c) <= '9' ? DIGIT \
                                            : OTHER)
    int64_t at = 0;
    for (int64_t j = 0; j < len; j++) {
        if (t[j] >= 128) return 0;
        int kind = KIND(t[j]);
        if (kind == OTHER) continue;
        if (at == m) return 0;
        int prev = j ? KIND(t[j - 1]) : OTHER, next = j + 1 < len ? KIND(t[j + 1]) : OTHER;
        st[at++] = prev == OTHER || (kind == UPPER && prev == LOWER) ||
                   (kind == UPPER && prev == UPPER && next == LOWER) ||
                   (kind != DIGIT && prev == DIGIT);
    }
#undef KIND
    return at == m;
}

/* Name i a candidate of this query with score v, or its score raised to v. */
static inline void offer(rk_state *s, int64_t i, double v, int64_t *count) {
    if (s->mark[i] != s->gen) {
        s->mark[i] = s->gen;
        s->value[i] = v;
        s->cand[(*count)++] = i;
    } else if (v > s->value[i]) {
        s->value[i] = v;
    }
}

/* The candidates of a query and their scores, each the highest a rule gives it, into
 * s->cand and s->cand_value (in the order they came); returns how many, or -1 if memory
 * ran out. The rules are those rank.py's docstring lists, in its order. */
static int64_t score(rk_state *s, const rk_query *in) {
    const rk_names *n = &s->n;
    const rk_weights *w = &s->w;
    int64_t m = in->m, count = 0;
    if (m == 0) return 0;
    Q q;
    if (!q_make(&q, in)) return -1;
    if (++s->gen == 0) { /* wrapped: no mark may look like this query's */
        memset(s->mark, 0, sizeof(uint32_t) * (size_t)n->count);
        s->gen = 1;
    }
    int64_t nexact = 0, found = match(s, &q, &nexact);
    if (found < 0) {
        q_free(&q);
        return -1;
    }
    /* the alignment, on the scale of a perfect one: into (-1, ~1.1] */
    double ideal = w->base * (double)m + w->bonus_first + (w->base + w->bonus_consec) * (double)(m - 1) +
                   w->bonus_end;
    float ideal32 = (float)ideal;
    int64_t full = 0;
    for (int64_t k = 0; k < found; k++) {
        float ratio = s->raw[k] / ideal32;
        if (!(ratio > -1e6f)) continue;
        if (ratio < 0) ratio = ratio / (1.0f - ratio);
        double v = (double)ratio;
        if (s->whole[k]) v += w->whole;
        offer(s, s->ids[k], v, &count);
        full++;
    }
    /* the weak pass: names missing one query character, shortest first and capped */
    if (m >= 4 && full < w->weak_when) {
        int64_t near_count = near(s, &q);
        if (near_count < 0) {
            q_free(&q);
            return -1;
        }
        /* the first weak_cap of them stably by length: every one shorter than the cut,
         * and the first ones of the cut's length (the order they are offered in does not
         * matter: each is offered once) */
        int64_t *ids = s->near, *counts = calloc((size_t)s->width + 2, sizeof(int64_t));
        if (!counts) {
            q_free(&q);
            return -1;
        }
        for (int64_t k = 0; k < near_count; k++) counts[n->lengths[ids[k]]]++;
        int64_t cut = 0, below = 0;
        while (cut <= s->width && below + counts[cut] < w->weak_cap) below += counts[cut++];
        int64_t at_cut = w->weak_cap - below; /* names of the cut's length that make it */
        free(counts);
        for (int64_t k = 0; k < near_count; k++) {
            int64_t len = n->lengths[ids[k]];
            if (len > cut || (len == cut && at_cut-- <= 0)) continue;
            offer(s, ids[k], w->weak - (double)len / 1000.0, &count);
        }
    }
    /* typos: one or two edits from the lowercased name, among the names of about the
     * query's length whose character sets differ from its by no more than the edits */
    if (in->typo_text) {
        int64_t size = in->typo_len, cutoff = size < 8 ? 1 : 2, top = n->lengths_count - 1;
        uint64_t tmask = q.qmask;
        if (in->typo_chars) {
            tmask = 0;
            for (int64_t k = 0; k < in->typo_chars_len; k++) tmask |= char_bit(in->typo_chars[k]);
        }
        int64_t shortest = size - cutoff > 0 ? size - cutoff : 0;
        int64_t lo = n->length_starts[shortest < top ? shortest : top];
        int64_t hi = n->length_starts[size + cutoff + 1 < top ? size + cutoff + 1 : top];
        int64_t deficit = w->typo_long - m > 0 ? w->typo_long - m : 0;
        double one = w->typo_one - w->typo_short * (double)deficit;
        Pattern pm;
        int64_t *table = NULL;
        if (size <= 64) {
            pattern_make(&pm, in->typo_text, size);
        } else if (!(table = malloc(sizeof(int64_t) * 3 * (size_t)(size + 1)))) {
            q_free(&q);
            return -1;
        }
        for (int64_t k = lo; k < hi; k++) {
            uint64_t mask = n->length_masks[k]; /* read in order: no name's line fetched */
            if (ones(tmask & ~mask) > cutoff || ones(mask & ~tmask) > cutoff) continue;
            int64_t i = n->by_length[k];
            int64_t place = n->lower_rank[i], from = lower_start(n, place);
            int64_t len = utf8_decode(n->lower + from, n->lower_ends[place] - from, s->text);
            int64_t dist = table ? osa_table(in->typo_text, size, s->text, len, cutoff, table)
                                 : osa_bits(&pm, size, s->text, len, cutoff);
            if (dist <= cutoff) offer(s, i, dist <= 1 ? one : w->typo_two, &count);
        }
        free(table);
    }
    /* the names that start with the query as typed, lowercased */
    if (in->prefix) {
        uint8_t *upper = malloc((size_t)in->prefix_len + 4);
        if (!upper) {
            q_free(&q);
            return -1;
        }
        memcpy(upper, in->prefix, (size_t)in->prefix_len);
        memcpy(upper + in->prefix_len, "\xf4\x8f\xbf\xbf", 4); /* U+10FFFF */
        int64_t from = lower_bound(n, in->prefix, in->prefix_len);
        int64_t to = lower_bound(n, upper, in->prefix_len + 4);
        free(upper);
        for (int64_t k = from; k < to; k++) offer(s, n->lower_order[k], w->prefix, &count);
    }
    /* the whole name typed, in any case or separator convention; where the query's
     * word starts can be read (an ASCII text with the query's letters and digits), a
     * name with the same ones fits it better than one that folds to it alone */
    uint8_t *qst = NULL;
    if (nexact && !(qst = malloc((size_t)m))) {
        q_free(&q);
        return -1;
    }
    int words_known = nexact && word_starts(in->exact, in->exact_len, m, qst);
    for (int64_t k = 0; k < nexact; k++) {
        int64_t i = s->exact[k], place = n->lower_rank[i];
        int64_t from = i ? n->name_ends[i - 1] : 0, lfrom = lower_start(n, place);
        int words = words_known && !memcmp(n->starts + n->offsets[i], qst, (size_t)m);
        double v = words ? w->exact_words : w->exact_squashed;
        if ((words || !words_known) &&
            same_bytes(n->lower + lfrom, n->lower_ends[place] - lfrom, in->exact_lower,
                       in->exact_lower_len))
            v = w->exact_lower;
        if (same_bytes(n->names + from, n->name_ends[i] - from, in->exact, in->exact_len))
            v = w->exact_case;
        offer(s, i, v, &count);
    }
    free(qst);
    q_free(&q);
    for (int64_t k = 0; k < count; k++) s->cand_value[k] = s->value[s->cand[k]];
    return count;
}

/* Entries in order: by key (the score rounded to 6 decimals, negated: best first), then
 * by tie rank. Keys never hold a NaN, and distinct names have distinct tie ranks, so the
 * order is total and any correct sort gives it: NumPy's lexsort of (ties, -round(v, 6))
 * gave the same. An introsort: quicksort on the median of three, a heapsort past a depth
 * of twice the log, an insertion sort for short runs. */
static inline int before(const Entry *a, const Entry *b) {
    return a->key < b->key || (a->key == b->key && a->tie < b->tie);
}

static void sift(Entry *e, int64_t root, int64_t size) {
    for (;;) {
        int64_t child = 2 * root + 1;
        if (child >= size) return;
        if (child + 1 < size && before(&e[child], &e[child + 1])) child++;
        if (!before(&e[root], &e[child])) return;
        Entry t = e[root];
        e[root] = e[child];
        e[child] = t;
        root = child;
    }
}

static void sort_entries(Entry *e, int64_t size, int depth) {
    while (size > 16) {
        if (depth-- == 0) {
            for (int64_t k = size / 2 - 1; k >= 0; k--) sift(e, k, size);
            for (int64_t k = size - 1; k > 0; k--) {
                Entry t = e[0];
                e[0] = e[k];
                e[k] = t;
                sift(e, 0, k);
            }
            return;
        }
        int64_t mid = size / 2;
        Entry t;
#define SWAP(A, B) (t = e[A], e[A] = e[B], e[B] = t)
        if (before(&e[mid], &e[0])) SWAP(mid, 0);
        if (before(&e[size - 1], &e[0])) SWAP(size - 1, 0);
        if (before(&e[size - 1], &e[mid])) SWAP(size - 1, mid);
        SWAP(mid, size - 2);
        Entry pivot = e[size - 2];
        int64_t i = 0, j = size - 2;
        for (;;) {
            while (before(&e[++i], &pivot)) {
            }
            while (before(&pivot, &e[--j])) {
            }
            if (i >= j) break;
            SWAP(i, j);
        }
        SWAP(i, size - 2);
#undef SWAP
        sort_entries(e + i + 1, size - i - 1, depth);
        size = i;
    }
    for (int64_t k = 1; k < size; k++) {
        Entry t = e[k];
        int64_t j = k;
        for (; j > 0 && before(&t, &e[j - 1]); j--) e[j] = e[j - 1];
        e[j] = t;
    }
}

/* a sorted by key, least first, through tmp (as long): a byte of the key a pass, least
 * significant first, each pass stable, a pass skipped where every key has the same byte.
 * No comparison, so no branch to mispredict: a query's candidates number a thousand
 * on average and fifteen thousand at most on rails. */
static void radix_sort(Keyed *a, Keyed *tmp, int64_t n) {
    if (n <= 32) {
        for (int64_t k = 1; k < n; k++) {
            Keyed t = a[k];
            int64_t j = k;
            for (; j > 0 && a[j - 1].key > t.key; j--) a[j] = a[j - 1];
            a[j] = t;
        }
        return;
    }
    int64_t counts[8][256];
    memset(counts, 0, sizeof counts);
    for (int64_t k = 0; k < n; k++)
        for (int d = 0; d < 8; d++) counts[d][a[k].key >> (8 * d) & 255]++;
    Keyed *src = a, *dst = tmp;
    for (int d = 0; d < 8; d++) {
        if (counts[d][a[0].key >> (8 * d) & 255] == n) continue;
        int64_t at = 0;
        for (int v = 0; v < 256; v++) {
            int64_t c = counts[d][v];
            counts[d][v] = at;
            at += c;
        }
        for (int64_t k = 0; k < n; k++) dst[counts[d][src[k].key >> (8 * d) & 255]++] = src[k];
        Keyed *t = src;
        src = dst, dst = t;
    }
    if (src != a) memcpy(a, src, sizeof(Keyed) * (size_t)n);
}

/* ids best first into out (limit of them; 0 for all); returns how many. The order is by
 * the score rounded to 6 decimals and negated (rint(v * -1e6): best first, and float noise
 * between equal alignments cannot decide a tie), then by tie rank; distinct names have
 * distinct tie ranks, so the order is total and any correct sort gives it, NumPy's lexsort
 * of (ties, -round(v, 6)) included. Each pair is one integer key, rounded score times
 * 2 ** tie_bits plus tie rank, radix sorted, unless a score is too large for that (none
 * that the rules give): then the pairs themselves are compared. */
static int64_t order(rk_state *s, const int64_t *ids, const double *values, int64_t count,
                     int64_t limit, int64_t *out) {
    int64_t bits = s->tie_bits;
    double room = ldexp(1.0, (int)(62 - bits));
    int fits = 1;
    Keyed *keyed = s->keyed;
    for (int64_t k = 0; k < count; k++) {
        double scaled = rint(values[k] * -1e6);
        if (!(fabs(scaled) < room)) fits = 0;
        uint64_t key = ((uint64_t)(int64_t)scaled << bits) + (uint64_t)s->n.tie_rank[ids[k]];
        keyed[k].key = key ^ (UINT64_C(1) << 63); /* signed order as unsigned */
        keyed[k].id = ids[k];
    }
    if (fits) {
        radix_sort(keyed, keyed + count, count);
        int64_t kept = limit > 0 && limit < count ? limit : count;
        for (int64_t k = 0; k < kept; k++) out[k] = keyed[k].id;
        return kept;
    }
    Entry *e = s->order;
    int depth = 0;
    for (int64_t k = 0; k < count; k++) {
        e[k].key = rint(values[k] * -1e6);
        e[k].tie = s->n.tie_rank[ids[k]];
        e[k].id = ids[k];
    }
    for (int64_t size = count; size > 1; size >>= 1) depth += 2;
    sort_entries(e, count, depth);
    int64_t kept = limit > 0 && limit < count ? limit : count;
    for (int64_t k = 0; k < kept; k++) out[k] = e[k].id;
    return kept;
}

/* The JSON list of the rows of ids, in their order, into out (room bytes); returns its
 * size, or, where it would not fit, minus the room it needs (and writes nothing). */
static int64_t rows(const rk_state *s, const int64_t *ids, int64_t count, uint8_t *out,
                    int64_t room) {
    const int64_t *ends = s->n.row_ends;
    int64_t need = count + 1 + (count == 0);
    for (int64_t k = 0; k < count; k++) need += ends[ids[k]] - (ids[k] ? ends[ids[k] - 1] : 0);
    if (need > room) return -need;
    int64_t at = 0;
    out[at++] = '[';
    for (int64_t k = 0; k < count; k++) {
        int64_t i = ids[k], from = i ? ends[i - 1] : 0, size = ends[i] - from;
        if (k) out[at++] = ',';
        memcpy(out + at, s->n.rows + from, (size_t)size);
        at += size;
    }
    out[at++] = ']';
    return at;
}

/* The version of the interface below: kernel.py refuses a library of another. */
int64_t rk_version(void) { return 5; }

/* What is wrong with names' arrays, as a read past an array's end would follow from it,
 * or NULL: an index is checked before it is used, whatever wrote it. */
const char *rk_check(const rk_names *n) {
    int64_t count = n->count, at = 0;
    if (count < 0 || n->chars < 0) return "negative counts";
    for (int64_t i = 0; i < count; i++) {
        if (n->offsets[i] != at || n->lengths[i] < 0 || n->lengths[i] > n->chars - at)
            return "the names' runs of codes";
        at += n->lengths[i];
    }
    if (at != n->chars) return "the names' runs of codes";
    if (n->lengths_count < 2 || n->length_starts[0] != 0 ||
        n->length_starts[n->lengths_count - 1] != count)
        return "the names by length";
    for (int64_t k = 1; k < n->lengths_count; k++)
        if (n->length_starts[k] < n->length_starts[k - 1]) return "the names by length";
    const int64_t *ends[] = {n->lower_ends, n->name_ends, n->row_ends};
    int64_t sizes[] = {n->lower_size, n->names_size, n->rows_size};
    for (int e = 0; e < 3; e++) {
        int64_t last = 0;
        for (int64_t i = 0; i < count; i++) {
            if (ends[e][i] < last || ends[e][i] > sizes[e]) return "the ends of the texts";
            last = ends[e][i];
        }
    }
    const int64_t *ids[] = {n->by_length, n->lower_order, n->lower_rank, n->tie_rank};
    for (int e = 0; e < 4; e++)
        for (int64_t i = 0; i < count; i++)
            if (ids[e][i] < 0 || ids[e][i] >= count) return "a name's number";
    return NULL;
}

void rk_close(rk_state *s) {
    if (!s) return;
    free(s->through);
    free(s->ids);
    free(s->exact);
    free(s->near);
    free(s->raw);
    free(s->whole);
    free(s->mark);
    free(s->value);
    free(s->cand);
    free(s->cand_value);
    free(s->order);
    free(s->keyed);
    free(s->text);
    free(s);
}

/* names (checked by rk_check) opened for queries with the weights w: the float terms of
 * the alignment, each character's skip cost, and the query's buffers; NULL if memory ran
 * out. The skip cost of a character is SKIP_VOWEL for a vowel, else SKIP_OTHER; through[k]
 * is the sum over its name up to it, taken as the NumPy ranker took it: one running sum
 * in float64 over every character of every name in order, less its value at the name's
 * start, rounded to float32. */
rk_state *rk_open(const rk_names *names, const rk_weights *w) {
    rk_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->n = *names;
    s->w = *w;
    s->c = (Cells){
        .first = (float)w->bonus_first, .word = (float)w->bonus_word, .base = (float)w->base,
        .consec = (float)w->bonus_consec, .base_gap = (float)(w->base - w->gap_open),
        .base_tail = (float)(w->base - w->tail_jump), .skip_word = (float)w->skip_word,
        .hop = (float)w->vowel_hop, .hop2 = (float)(2 * w->vowel_hop),
        .star = (float)w->star_factor, .lead = (float)w->skip_lead, .trail = (float)w->skip_trail,
        .trail_word = (float)w->trail_word, .end = (float)w->bonus_end, .neg = (float)w->neg,
        .vowel_cut = (w->skip_vowel + w->skip_other) / 2,
    };
    int64_t count = names->count, slots = count ? count : 1;
    for (int64_t i = 0; i < count; i++) {
        if (names->lengths[i] > s->width) s->width = names->lengths[i];
        int64_t from = i ? names->lower_ends[i - 1] : 0;
        if (names->lower_ends[i] - from > s->lower_widest) s->lower_widest = names->lower_ends[i] - from;
    }
    s->through = malloc(sizeof(float) * (size_t)(names->chars ? names->chars : 1));
    s->ids = malloc(sizeof(int64_t) * (size_t)slots);
    s->exact = malloc(sizeof(int64_t) * (size_t)slots);
    s->near = malloc(sizeof(int64_t) * (size_t)slots);
    s->raw = malloc(sizeof(float) * (size_t)slots);
    s->whole = malloc((size_t)slots);
    s->mark = calloc((size_t)slots, sizeof(uint32_t));
    s->value = malloc(sizeof(double) * (size_t)slots);
    s->cand = malloc(sizeof(int64_t) * (size_t)slots);
    s->cand_value = malloc(sizeof(double) * (size_t)slots);
    s->order = malloc(sizeof(Entry) * (size_t)slots);
    s->keyed = malloc(sizeof(Keyed) * 2 * (size_t)slots);
    while (s->tie_bits < 63 && count >> s->tie_bits) s->tie_bits++;
    s->text = malloc(sizeof(uint32_t) * (size_t)(s->lower_widest + 1));
    if (!s->through || !s->ids || !s->exact || !s->near || !s->raw || !s->whole || !s->mark ||
        !s->value || !s->cand || !s->cand_value || !s->order || !s->keyed || !s->text) {
        rk_close(s);
        return NULL;
    }
    double run = 0.0;
    for (int64_t i = 0; i < count; i++) {
        double start = run;
        const int32_t *c = names->codes + names->offsets[i];
        float *thr = s->through + names->offsets[i];
        for (int64_t j = 0; j < names->lengths[i]; j++) {
            int vowel = c[j] == 'a' || c[j] == 'e' || c[j] == 'i' || c[j] == 'o' || c[j] == 'u';
            run += vowel ? w->skip_vowel : w->skip_other;
            thr[j] = (float)(run - start);
        }
    }
    return s;
}

/* The candidates of a query and their scores (score()), in *ids and
 * *values (the state's buffers, valid until its next query); returns how many, or -1 if
 * memory ran out. */
int64_t rk_score(rk_state *s, const rk_query *q, const int64_t **ids, const double **values) {
    int64_t count = score(s, q);
    *ids = s->cand;
    *values = s->cand_value;
    return count;
}

/* ids (count of them, with their values) best first into out; returns how many. */
int64_t rk_order(rk_state *s, const int64_t *ids, const double *values, int64_t count,
                 int64_t limit, int64_t *out) {
    return order(s, ids, values, count, limit, out);
}

/* A query's answer, its JSON list of rows best first (limit of them; 0 for every
 * candidate), into out (room bytes: the caller's, so the answer is written once, where
 * it is sent from); returns its size, or, where it would not fit, minus the room it needs
 * (rk_answer then writes it into a larger buffer); INT64_MIN if memory ran out. */
int64_t rk_search(rk_state *s, const rk_query *q, int64_t limit, uint8_t *out, int64_t room) {
    int64_t count = score(s, q);
    if (count < 0) return INT64_MIN;
    s->answered = order(s, s->cand, s->cand_value, count, limit, s->ids);
    return rows(s, s->ids, s->answered, out, room);
}

/* The last query's answer again (rk_search's), into out (room bytes), as rows() writes. */
int64_t rk_answer(const rk_state *s, uint8_t *out, int64_t room) {
    return rows(s, s->ids, s->answered, out, room);
}

/* The alignment's matches of a query (match()), for tests: names into *ids, raw scores
 * into *raw, exact names into *exact (*exacts of them); returns how many, or -1. */
int64_t rk_match(rk_state *s, const rk_query *in, const int64_t **ids, const float **raw,
                 const int64_t **exact, int64_t *exacts) {
    Q q;
    if (!q_make(&q, in)) return -1;
    int64_t found = match(s, &q, exacts);
    q_free(&q);
    *ids = s->ids;
    *raw = s->raw;
    *exact = s->exact;
    return found;
}

/* The weak pass's names of a query (near()), for tests, into *ids; returns how many. */
int64_t rk_near(rk_state *s, const rk_query *in, const int64_t **ids) {
    Q q;
    if (!q_make(&q, in)) return -1;
    int64_t found = near(s, &q);
    q_free(&q);
    *ids = s->near;
    return found;
}

/* Each character's skip cost (rk_open's), for tests. */
const float *rk_through(const rk_state *s) { return s->through; }

/* The word starts of an ASCII text's m letters and digits (word_starts), for tests. */
int64_t rk_word_starts(const uint8_t *t, int64_t len, int64_t m, uint8_t *st) {
    return word_starts(t, len, m, st);
}

/* The optimal string alignment distance of two texts up to max, for tests. */
int64_t rk_osa(const uint32_t *p, int64_t m, const uint32_t *t, int64_t n, int64_t max) {
    if (m == 0) return n <= max ? n : max + 1;
    if (m <= 64) {
        Pattern pm;
        pattern_make(&pm, p, m);
        return osa_bits(&pm, m, t, n, max);
    }
    int64_t *table = malloc(sizeof(int64_t) * 3 * (size_t)(m + 1));
    if (!table) return -1;
    int64_t dist = osa_table(p, m, t, n, max, table);
    free(table);
    return dist;
}
