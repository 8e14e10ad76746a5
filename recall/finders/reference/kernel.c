/* The reference finder's inner loop: one pass over every name for a query.
 *
 * kernel.py compiles this file with the C compiler on PATH on first use and loads it
 * with ctypes; rank.py calls rk_match and rk_near over its flat arrays (each name's
 * folded codes, word starts and running skip costs, concatenated, with offsets).
 *
 * Every float operation is the one the NumPy ranker made before it, in float32 and in
 * the same order (built with -ffp-contract=off, so no multiply-add is fused), so rankings
 * are byte-identical to it. The weights come in from weights.py as -D definitions.
 */
#include <stdint.h>
#include <stdlib.h>

#define F(x) ((float)(x))

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

/* The glob's segments (q[seg[t]:seg[t + 1]]) appear in the name in order, each
 * contiguous: the leftmost place of each after the previous one decides existence. */
static int glob_holds(const int32_t *q, const int64_t *seg, int64_t nseg, const int32_t *s,
                      int64_t n) {
    int64_t pos = 0;
    for (int64_t t = 0; t < nseg; t++) {
        int64_t a = seg[t], size = seg[t + 1] - seg[t], found = -1;
        for (int64_t p = pos; p + size <= n; p++) {
            int64_t u = 0;
            while (u < size && s[p + u] == q[a + u]) u++;
            if (u == size) {
                found = p;
                break;
            }
        }
        if (found < 0) return 0;
        pos = found + size;
    }
    return 1;
}

/* Best alignment score of q against one name: an fzy-style programme with one step per
 * query character, as rank.py's NumPy version computed it (see weights.py).
 *
 * Step i fills only the cells where q[i] can sit in a complete match (first[i] to
 * last[i]); the cells around them that step i + 1 reads are NEG, and so is a cell whose
 * character is not q[i] (NumPy added NEG to what it would have held, and kept it at NEG
 * or above). A value that no complete match reaches is NEG plus at most the bonuses of a
 * query's length, below -9.9e8, and stays there; a complete match always exists here and
 * scores above -1e6: so no such value is ever the maximum that decides a score, and
 * where NumPy computed it exactly and this code puts NEG, no result changes. */
static float align(const int32_t *q, const uint8_t *star, int is_glob, int64_t m,
                   const int32_t *s, const uint8_t *st, const float *through, int64_t n,
                   const int64_t *first, const int64_t *last, float *scratch, int64_t width) {
    float *bonus = scratch, *thr = scratch + width, *bef = scratch + 2 * width,
          *wrd = scratch + 3 * width, *cb = scratch + 4 * width, *land = scratch + 5 * width,
          *vowel = scratch + 6 * width, *arrive = scratch + 7 * width,
          *d = scratch + 8 * width, *nd = scratch + 9 * width, *swap;
    const float neg = F(NEG);
    int64_t count = 0;
    /* Cells past last[m - 1] are never read, so they are not filled: only the word count
     * runs to the end of the name. */
    int64_t end = last[m - 1];
    for (int64_t j = 0; j <= end; j++) {
        if (st[j]) count++;
        float b = j == 0 ? F(BONUS_FIRST) : st[j] ? F(BONUS_WORD) : F(0.0);
        float t = through[j];
        float bf = j > 0 ? thr[j - 1] : F(0.0);
        bonus[j] = b;
        thr[j] = t;
        bef[j] = bf;
        wrd[j] = (float)count;
        cb[j] = F(BASE) + (b > F(BONUS_CONSEC) ? b : F(BONUS_CONSEC));
        float lv = b > F(0.0) ? b + F(BASE - TAIL_JUMP) : neg;
        if (j > 0) lv = lv - F(SKIP_WORD) * wrd[j - 1];
        land[j] = lv;
        vowel[j] = (double)(t - bf) < (SKIP_VOWEL + SKIP_OTHER) / 2 ? F(0.0) : neg;
        arrive[j] = (b + F(BASE - GAP_OPEN)) - bf;
    }
    for (int64_t j = end + 1; j < n; j++)
        if (st[j]) count++;
    float total_cost = through[n - 1], total_words = (float)count;
    int64_t lo = first[0], hi = last[0], reach_end = m > 1 ? last[1] : n - 1;
    /* Step i + 1 reads step i's cells from first[i] - 2 on (first[i + 1] > first[i]), so
     * only the three below the band are set to NEG. */
    for (int64_t j = lo > 3 ? lo - 3 : 0; j < lo; j++) d[j] = neg;
    for (int64_t j = lo; j <= hi; j++)
        d[j] = s[j] == q[0] ? (F(BASE) + bonus[j]) - F(SKIP_LEAD) * bef[j] : neg;
    for (int64_t j = hi + 1; j < reach_end; j++) d[j] = neg;
    for (int64_t i = 1; i < m; i++) {
        int32_t qc = q[i];
        int64_t prev_lo = lo;
        lo = first[i];
        hi = last[i];
        reach_end = i + 1 < m ? last[i + 1] : n - 1;
        for (int64_t j = lo > 3 ? lo - 3 : 0; j < lo; j++) nd[j] = neg;
        if (star[i]) {
            float smax = neg;
            for (int64_t k = prev_lo; k < lo - 1; k++) {
                float c = d[k] + F(STAR_FACTOR) * thr[k];
                if (c > smax) smax = c;
            }
            for (int64_t j = lo; j <= hi; j++) {
                float c = d[j - 1] + F(STAR_FACTOR) * thr[j - 1];
                if (c > smax) smax = c;
                if (s[j] != qc) {
                    nd[j] = neg;
                    continue;
                }
                float v = (smax - F(STAR_FACTOR) * bef[j]) + (F(BASE) + bonus[j]);
                nd[j] = v > neg ? v : neg;
            }
        } else if (is_glob) {
            for (int64_t j = lo; j <= hi; j++) {
                float v = d[j - 1] + cb[j];
                nd[j] = s[j] == qc && v > neg ? v : neg;
            }
        } else {
            float rmax = neg, fmax = neg;
            for (int64_t k = prev_lo; k < lo - 2; k++) {
                float r = d[k] + thr[k];
                if (r > rmax) rmax = r;
                float f = d[k] + F(SKIP_WORD) * wrd[k];
                if (f > fmax) fmax = f;
            }
            for (int64_t j = lo; j <= hi; j++) {
                if (j >= 2) {
                    int64_t k = j - 2;
                    float r = d[k] + thr[k];
                    if (r > rmax) rmax = r;
                    float f = d[k] + F(SKIP_WORD) * wrd[k];
                    if (f > fmax) fmax = f;
                }
                if (s[j] != qc) {
                    nd[j] = neg;
                    continue;
                }
                float best = d[j - 1] + cb[j];
                if (j >= 2) {
                    int64_t k = j - 2;
                    float x = rmax + arrive[j];
                    if (x > best) best = x;
                    x = fmax + land[j];
                    if (x > best) best = x;
                    x = d[k] + ((cb[j] + vowel[j - 1]) - F(VOWEL_HOP));
                    if (x > best) best = x;
                    if (j >= 3) {
                        x = d[j - 3] + (((cb[j] + vowel[k]) + vowel[j - 1]) - F(2 * VOWEL_HOP));
                        if (x > best) best = x;
                    }
                }
                nd[j] = best > neg ? best : neg;
            }
        }
        for (int64_t j = hi + 1; j < reach_end; j++) nd[j] = neg;
        swap = d;
        d = nd;
        nd = swap;
    }
    float result = neg;
    for (int64_t j = lo; j <= hi; j++) {
        float v = d[j] - F(SKIP_TRAIL) * (total_cost - thr[j]);
        v = v - F(TRAIL_WORD) * (total_words - wrd[j]);
        if (j == n - 1) v = v + F(BONUS_END);
        if (j == lo || v > result) result = v;
    }
    return result;
}

/* Every name that holds q (as a subsequence, or the glob's segments in order): its index
 * into ids and its raw alignment score into raw, in name order; the names whose letters
 * and digits are q's exactly into exact (*exacts of them, a glob's included whether the
 * glob holds or not). Returns the number of matches, or -1 if memory ran out. */
int64_t rk_match(const int32_t *q, const uint8_t *star, const int64_t *seg, int64_t nseg,
                 int32_t is_glob, int64_t m, uint64_t qmask, const uint64_t *masks,
                 const int64_t *offsets, const int64_t *lengths, const int32_t *codes,
                 const uint8_t *starts, const float *through, int64_t count, int64_t width,
                 int64_t *ids, float *raw, int64_t *exact, int64_t *exacts) {
    float *scratch = malloc(sizeof(float) * 10 * (size_t)(width > 0 ? width : 1));
    int64_t *first = malloc(sizeof(int64_t) * 2 * (size_t)m);
    if (!scratch || !first) {
        free(scratch);
        free(first);
        return -1;
    }
    int64_t *last = first + m, found = 0, nexact = 0;
    for (int64_t i = 0; i < count; i++) {
        if (qmask & ~masks[i]) continue;
        const int32_t *s = codes + offsets[i];
        int64_t n = lengths[i];
        if (n < m || !band(q, m, s, n, first, last)) continue;
        if (n == m) exact[nexact++] = i;
        if (is_glob && !glob_holds(q, seg, nseg, s, n)) continue;
        ids[found] = i;
        raw[found] = align(q, star, is_glob, m, s, starts + offsets[i], through + offsets[i],
                           n, first, last, scratch, width);
        found++;
    }
    free(scratch);
    free(first);
    *exacts = nexact;
    return found;
}

/* The names that hold all but at most one of q's characters in order (their longest
 * common subsequence with q is m - 1 or more), in name order, into ids; returns how many,
 * or -1 if memory ran out. q[t] can be left out when q[:t], matched greedily from the
 * left, ends before q[t + 1:], matched greedily from the right, starts. */
int64_t rk_near(const int32_t *q, int64_t m, uint64_t qmask, const uint64_t *masks,
                const int64_t *offsets, const int64_t *lengths, const int32_t *codes,
                int64_t count, int64_t *ids) {
    int64_t *ends = malloc(sizeof(int64_t) * (size_t)(m + 1));
    if (!ends) return -1;
    int64_t found = 0;
    for (int64_t i = 0; i < count; i++) {
        uint64_t missing = qmask & ~masks[i];
        if (missing & (missing - 1)) continue;
        const int32_t *s = codes + offsets[i];
        int64_t n = lengths[i], k = 0;
        ends[0] = 0;
        for (int64_t j = 0; j < n && k < m; j++)
            if (s[j] == q[k]) ends[++k] = j + 1;
        for (int64_t t = k + 1; t <= m; t++) ends[t] = n + 1;
        int64_t begin = n, t = m - 1, j = n - 1;
        int ok = 0;
        for (;;) {
            if (ends[t] <= begin) {
                ok = 1;
                break;
            }
            if (t == 0) break;
            while (j >= 0 && s[j] != q[t]) j--;
            if (j < 0) break;
            begin = j--;
            t--;
        }
        if (ok) ids[found++] = i;
    }
    free(ends);
    return found;
}
