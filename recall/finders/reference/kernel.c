/* The reference finder's inner loop: one pass over every name for a query.
 *
 * kernel.py compiles this file with the C compiler on PATH (when the finder indexes, or
 * on first use) and loads it with ctypes; rank.py calls rk_match and rk_near over its
 * flat arrays (each name's folded codes, the same as bytes, word starts and running skip
 * costs, concatenated, with offsets) and rk_rows over the answer rows the index keeps.
 *
 * Where the time goes, and so how the pass is laid out: a query's character-set masks
 * (and the characters it holds twice) rule out most names at a few operations each; the
 * names left are scanned as bytes, 16 at a time (SSE2), through the positions of each
 * query character as the bits of a word; their arrays are fetched from memory a few
 * names ahead, since they are seldom in cache; and the alignment visits only the cells
 * where a query character sits, not every cell of its band.
 *
 * Every float operation is the one the NumPy ranker made before it, in float32 and in
 * the same order (built with -ffp-contract=off, so no multiply-add is fused), so rankings
 * are byte-identical to it. The weights come in from weights.py as -D definitions.
 * RK_SCALAR (no SSE2) and RK_LIST (the list alignment for every name) build the other
 * paths for every name, for tests that they answer alike.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__) && !defined(RK_SCALAR)
#include <emmintrin.h>
#endif

#define F(x) ((float)(x))
/* Names up to this many characters are scanned through the positions of each query
 * character as the bits of one word; longer ones, a place at a time. */
#define WIDE 64
/* How many names ahead of the one being scanned are fetched from memory. */
#define AHEAD 8

/* The positions of byte c among the name's first n (at most WIDE) bytes (its codes, each
 * below 255 as itself and any other as 255), as bits. With SSE2 (every x86-64) 16 bytes a
 * compare, in blocks counted from the name's start, so a scan never reads before the name
 * and after it at most 15 bytes (kernel.py's PAD); else a byte a step (RK_SCALAR builds
 * that one, for tests). Either way the same bits: only the speed differs. */
static inline uint64_t positions(const uint8_t *b, int64_t n, uint8_t c) {
    uint64_t bits = 0;
#if defined(__SSE2__) && !defined(RK_SCALAR)
    __m128i want = _mm_set1_epi8((char)c);
    for (int64_t at = 0; at < n; at += 16)
        bits |= (uint64_t)(uint32_t)_mm_movemask_epi8(
                    _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(b + at)), want))
                << at;
#else
    for (int64_t j = 0; j < n; j++) bits |= (uint64_t)(b[j] == c) << j;
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
static int band_bytes(const uint8_t *qb, int64_t m, const uint8_t *b, int64_t n,
                      int64_t *first, int64_t *last, uint64_t *at) {
    int64_t p = -1;
    if (n > WIDE) {
        for (int64_t i = 0; i < m; i++)
            if ((first[i] = p = next_at(b, n, qb[i], p + 1)) < 0) return 0;
        p = n;
        for (int64_t i = m - 1; i >= 0; i--) last[i] = p = last_at(b, qb[i], p - 1);
        return 1;
    }
    for (int64_t i = 0; i < m; i++) {
        uint64_t next = (at[i] = positions(b, n, qb[i])) & above(p);
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

/* The terms of a cell j of the name, computed where a matched character needs them (a
 * few cells a step) rather than for every cell, from st (word starts) and thr (the
 * running skip cost); each is the float32 expression the NumPy ranker evaluated. BONUS:
 * matching the name's first character or a word start. BEFORE: the skip cost before the
 * cell. CONSEC: a match right after the previous one, given its BONUS. VOWEL: 0 where
 * the cell's character is a vowel (its skip cost is the cheap one), else NEG. */
#define BONUS(j) ((j) == 0 ? F(BONUS_FIRST) : st[j] ? F(BONUS_WORD) : F(0.0))
#define BEFORE(j) ((j) > 0 ? thr[(j) - 1] : F(0.0))
#define CONSEC(b) (F(BASE) + ((b) > F(BONUS_CONSEC) ? (b) : F(BONUS_CONSEC)))
#define VOWEL(j) ((double)(thr[j] - BEFORE(j)) < (SKIP_VOWEL + SKIP_OTHER) / 2 ? F(0.0) : neg)

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
static inline float plain_cell(int64_t j, const uint8_t *st, const float *thr, const float *wrd,
                               const float *before1, const float *before2,
                               const float *before3, int any, float rmax, float fmax) {
    const float neg = F(NEG);
    float b = BONUS(j), cb = CONSEC(b), best = neg;
    if (before1) best = *before1 + cb;
    if (any) {
        float bf = BEFORE(j);
        float x = rmax + ((b + F(BASE - GAP_OPEN)) - bf);
        if (x > best) best = x;
        x = fmax + ((b > F(0.0) ? b + F(BASE - TAIL_JUMP) : neg) - F(SKIP_WORD) * wrd[j - 1]);
        if (x > best) best = x;
        float vowel_back = VOWEL(j - 1);
        if (before2) {
            x = *before2 + ((cb + vowel_back) - F(VOWEL_HOP));
            if (x > best) best = x;
        }
        if (before3) {
            x = *before3 + (((cb + VOWEL(j - 2)) + vowel_back) - F(2 * VOWEL_HOP));
            if (x > best) best = x;
        }
    }
    return best > neg ? best : neg;
}

/* Best alignment score of q against one name of at most WIDE characters: an fzy-style
 * programme with one step per query character, as rank.py's NumPy ranker computed it
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
static float align_bits(const uint8_t *star, int is_glob, int64_t m, const uint8_t *st,
                        const float *thr, int64_t n, const int64_t *first, const int64_t *last,
                        const uint64_t *at, float *wrd) {
    const float neg = F(NEG);
    float values[2][WIDE], *d = values[0], *nd = values[1], *swap;
    float total_cost = thr[n - 1], total_words = words(st, n, last[m - 1], wrd);
    uint64_t reach = at[0] & above(first[0] - 1) & upto(last[0]);
    for (uint64_t c = reach; c; c &= c - 1) {
        int64_t j = __builtin_ctzll(c);
        d[j] = (F(BASE) + BONUS(j)) - F(SKIP_LEAD) * BEFORE(j);
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
                    float v = d[k] + F(STAR_FACTOR) * thr[k];
                    if (v > rmax) rmax = v;
                    any = 1;
                }
                pending &= ~upto(j - 1);
                if (!any) continue;
                float v = (rmax - F(STAR_FACTOR) * BEFORE(j)) + (F(BASE) + BONUS(j));
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
                    float f = d[k] + F(SKIP_WORD) * wrd[k];
                    if (f > fmax) fmax = f;
                    any = 1;
                }
                pending &= ~upto(j - 2);
            }
            if (!just_before && !any) continue;
            nd[j] = plain_cell(j, st, thr, wrd, just_before ? &d[j - 1] : NULL,
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
        float v = d[j] - F(SKIP_TRAIL) * (total_cost - thr[j]);
        v = v - F(TRAIL_WORD) * (total_words - wrd[j]);
        if (j == n - 1) v = v + F(BONUS_END);
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
static float align_list(const int32_t *q, const uint8_t *qb, int qbytes, const uint8_t *star,
                        int is_glob, int64_t m, const int32_t *s, const uint8_t *b,
                        const uint8_t *st, const float *thr, int64_t n, const int64_t *first,
                        const int64_t *last, float *scratch, int64_t *places, int64_t width) {
    const float neg = F(NEG);
    float *wrd = scratch, *pv = scratch + width, *cv = scratch + 2 * width, *values;
    int64_t *pc = places, *cc = places + width, *cells, np = 0;
    float total_cost = thr[n - 1], total_words = words(st, n, last[m - 1], wrd);
#define CELLS(I)                                                                  \
    for (int64_t j = next_cell(q, qb, qbytes, s, b, I, first[I], last[I]); j >= 0; \
         j = next_cell(q, qb, qbytes, s, b, I, j + 1, last[I]))
    CELLS(0) {
        pc[np] = j;
        pv[np++] = (F(BASE) + BONUS(j)) - F(SKIP_LEAD) * BEFORE(j);
    }
    for (int64_t i = 1; i < m; i++) {
        int64_t nc = 0, pend = 0;
        float rmax = neg, fmax = neg;
        CELLS(i) {
            if (star[i]) {
                for (; pend < np && pc[pend] <= j - 1; pend++) {
                    float v = pv[pend] + F(STAR_FACTOR) * thr[pc[pend]];
                    if (v > rmax) rmax = v;
                }
                if (!pend) continue;
                float v = (rmax - F(STAR_FACTOR) * BEFORE(j)) + (F(BASE) + BONUS(j));
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
                float f = pv[pend] + F(SKIP_WORD) * wrd[k];
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
            cv[nc++] = plain_cell(j, st, thr, wrd, just_before ? &pv[pend] : NULL,
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
        float v = pv[t] - F(SKIP_TRAIL) * (total_cost - thr[j]);
        v = v - F(TRAIL_WORD) * (total_words - wrd[j]);
        if (j == n - 1) v = v + F(BONUS_END);
        if (t == 0 || v > result) result = v;
    }
    return result;
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

/* Every name that holds q (as a subsequence, or the glob's segments in order): its index
 * into ids and its raw alignment score into raw, in name order; the names whose letters
 * and digits are q's exactly into exact (*exacts of them, a glob's included whether the
 * glob holds or not). Returns the number of matches, or -1 if memory ran out. */
int64_t rk_match(const int32_t *q, const uint8_t *qb, int32_t qbytes, const uint8_t *star,
                 const int64_t *seg, int64_t nseg, int32_t is_glob, int64_t m, uint64_t qmask,
                 uint64_t qtwice, const uint64_t *sets, const uint64_t *twice_sets,
                 int64_t words, const int64_t *offsets, const int64_t *lengths,
                 const int32_t *codes, const uint8_t *bytes, const uint8_t *starts,
                 const float *through, int64_t width, int64_t *ids, float *raw,
                 int64_t *exact, int64_t *exacts) {
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
    int64_t *last = first + m, found = 0, nexact = 0, held = 0;
    /* First the names whose character set holds the query's, and that hold each character
     * the query holds twice twice or more, into ids: an AND of the bitsets of those names,
     * 64 names a word. Then the ones a few places on are fetched from memory while one is
     * scanned (a name's arrays are seldom in cache). A match is written into ids at or
     * before its own place, so no place is written before it is read. */
    const uint64_t *need[128];
    int64_t needs = required(qmask, qtwice, sets, twice_sets, words, need);
    for (int64_t w = 0; w < words; w++) {
        uint64_t in = ~UINT64_C(0);
        for (int64_t k = 0; k < needs; k++) in &= need[k][w];
        for (; in; in &= in - 1) ids[held++] = w * 64 + __builtin_ctzll(in);
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
        int64_t i = ids[c], n = lengths[i];
        const int32_t *s = codes + offsets[i];
        const uint8_t *b = bytes + offsets[i];
        if (n < m) continue;
        if (qbytes ? !band_bytes(qb, m, b, n, first, last, at) : !band(q, m, s, n, first, last))
            continue;
        if (n == m) exact[nexact++] = i;
        if (is_glob && !(qbytes ? glob_holds_bytes(qb, seg, nseg, b, n)
                                : glob_holds(q, seg, nseg, s, n)))
            continue;
        ids[found] = i;
#ifndef RK_LIST
        if (qbytes && n <= WIDE)
            raw[found] = align_bits(star, is_glob, m, starts + offsets[i], through + offsets[i],
                                    n, first, last, at, scratch);
        else
#endif
            raw[found] = align_list(q, qb, qbytes, star, is_glob, m, s, b, starts + offsets[i],
                                    through + offsets[i], n, first, last, scratch, places,
                                    width);
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
static int near_bits(const uint8_t *qb, int64_t m, const uint8_t *b, int64_t n, int64_t *ends,
                     uint64_t *at) {
    int64_t k = 0, p = -1;
    ends[0] = 0;
    for (; k < m; k++) {
        uint64_t next = (at[k] = positions(b, n, qb[k])) & above(p);
        if (!next) break;
        ends[k + 1] = (p = __builtin_ctzll(next)) + 1;
    }
    if (k == m) return 1;
    for (int64_t t = k + 1; t <= m; t++) ends[t] = n + 1;
    int64_t begin = n, t = m - 1, j = n - 1;
    for (;;) {
        if (ends[t] <= begin) return 1;
        if (t == 0 || j < 0) return 0;
        uint64_t before = (t <= k ? at[t] : positions(b, n, qb[t])) & upto(j);
        if (!before) return 0;
        begin = 63 - __builtin_clzll(before);
        j = begin - 1;
        t--;
    }
}

/* Whether q without its character at t is a subsequence of the name. */
static int holds_without(const int32_t *q, const uint8_t *qb, int qbytes, int64_t m, int64_t t,
                         const int32_t *s, const uint8_t *b, int64_t n) {
    if (qbytes && n <= WIDE) {
        int64_t p = -1;
        for (int64_t i = 0; i < m; i++) {
            if (i == t) continue;
            uint64_t next = positions(b, n, qb[i]) & above(p);
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
 * common subsequence with q is m - 1 or more), in name order, into ids; returns how many,
 * or -1 if memory ran out. qbits[i] is q[i]'s bit in the character-set masks. A name
 * whose mask lacks one of the query's bits lacks every query character of that bit, so
 * it can only be the one left out: none if two query characters have it, else the rest
 * must be a subsequence. A name with every bit is tested by near_bits or near_scan. */
int64_t rk_near(const int32_t *q, const uint8_t *qb, int32_t qbytes, const uint64_t *qbits,
                int64_t m, uint64_t qmask, uint64_t qtwice, const uint64_t *sets,
                const uint64_t *twice_sets, int64_t words, const uint64_t *masks,
                const int64_t *offsets,
                const int64_t *lengths, const int32_t *codes, const uint8_t *bytes,
                int64_t count, int64_t *ids) {
    int64_t *ends = malloc(sizeof(int64_t) * (size_t)(m + 1));
    uint64_t *at = malloc(sizeof(uint64_t) * (size_t)m);
    if (!ends || !at) {
        free(ends);
        free(at);
        return -1;
    }
    int64_t lone[64]; /* by bit: the one query position with it, or -1 for several */
    for (int64_t i = 0; i < m; i++) lone[__builtin_ctzll(qbits[i])] = -2;
    for (int64_t i = 0; i < m; i++) {
        int64_t *slot = &lone[__builtin_ctzll(qbits[i])];
        *slot = *slot == -2 ? i : -1;
    }
    /* The names that fail at most one of the bitsets a match must be in (required()),
     * into ids: a character a name lacks is one query character to leave out, and so is
     * one the query holds twice and the name at most once. Counted a word of 64 names at
     * a time: `all` in every set so far, `one` out of exactly one. Then each scanned as
     * rk_match() does (its arrays fetched a few names ahead). */
    const uint64_t *need[128];
    int64_t needs = required(qmask, qtwice, sets, twice_sets, words, need), held = 0, found = 0;
    for (int64_t w = 0; w < words; w++) {
        uint64_t all = ~UINT64_C(0), one = 0;
        for (int64_t k = 0; k < needs; k++) {
            uint64_t in = need[k][w];
            one = (one & in) | (all & ~in);
            all &= in;
        }
        uint64_t near = all | one;
        if (w == words - 1 && count % 64) near &= (UINT64_C(1) << (count % 64)) - 1;
        for (; near; near &= near - 1) ids[held++] = w * 64 + __builtin_ctzll(near);
    }
    for (int64_t c = 0; c < held; c++) {
        if (c + 2 * AHEAD < held) __builtin_prefetch(offsets + ids[c + 2 * AHEAD]);
        if (c + AHEAD < held) {
            int64_t o = offsets[ids[c + AHEAD]];
            __builtin_prefetch(qbytes ? (const void *)(bytes + o) : (const void *)(codes + o));
        }
        int64_t i = ids[c], n = lengths[i];
        uint64_t missing = qmask & ~masks[i];
        const int32_t *s = codes + offsets[i];
        const uint8_t *b = bytes + offsets[i];
        int near;
        if (missing) {
            int64_t t = lone[__builtin_ctzll(missing)];
            near = t >= 0 && n >= m - 1 && holds_without(q, qb, qbytes, m, t, s, b, n);
        } else {
            near = !qbytes     ? near_scan(q, m, s, n, ends)
                   : n <= WIDE ? near_bits(qb, m, b, n, ends, at)
                               : near_bytes(qb, m, b, n, ends);
        }
        if (near) ids[found++] = i;
    }
    free(ends);
    free(at);
    return found;
}

/* The JSON list of the rows of ids, in their order, into out (room bytes): rows holds
 * every name's row, ends[i] where name i's ends. Returns the bytes written, or, where
 * they would not fit, minus the room they need (and writes nothing). */
int64_t rk_rows(const uint8_t *rows, const int64_t *ends, const int64_t *ids, int64_t n,
                uint8_t *out, int64_t room) {
    int64_t need = n + 1 + (n == 0);
    for (int64_t k = 0; k < n; k++) need += ends[ids[k]] - (ids[k] ? ends[ids[k] - 1] : 0);
    if (need > room) return -need;
    int64_t w = 0;
    out[w++] = '[';
    for (int64_t k = 0; k < n; k++) {
        int64_t i = ids[k], from = i ? ends[i - 1] : 0, size = ends[i] - from;
        if (k) out[w++] = ',';
        memcpy(out + w, rows + from, (size_t)size);
        w += size;
    }
    out[w++] = ']';
    return w;
}
