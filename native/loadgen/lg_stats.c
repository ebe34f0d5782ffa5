/* lg_stats: latency samples (µs) with percentiles, and failure counts by reason. */
#include "lg_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lg_samples_add(lg_samples *s, uint64_t us)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        uint32_t *v = realloc(s->v, cap * sizeof(*v));
        if (v == NULL)
            return 0;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
    return 1;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

void lg_samples_sort(lg_samples *s)
{
    if (s->n > 1)
        qsort(s->v, s->n, sizeof(*s->v), cmp_u32);
}

uint32_t lg_samples_quantile(lg_samples *s, double q)
{
    if (s->n == 0)
        return 0;
    size_t k = (size_t)(q * (double)s->n + 0.999999); /* nearest rank: ceil(q n) */
    if (k < 1)
        k = 1;
    if (k > s->n)
        k = s->n;
    return s->v[k - 1];
}

void lg_samples_clear(lg_samples *s) { s->n = 0; }

void lg_samples_free(lg_samples *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}

unsigned lg_hist_index(uint32_t us)
{
    if (us < LG_HIST_LINEAR)
        return us;
    unsigned b = 31u - (unsigned)__builtin_clz(us); /* floor(log2 us), 7..31 */
    unsigned sub = (us >> (b - LG_HIST_SUB_BITS)) - (1u << LG_HIST_SUB_BITS);
    return LG_HIST_LINEAR + (b - 7u) * (1u << LG_HIST_SUB_BITS) + sub;
}

uint32_t lg_hist_lower(unsigned index)
{
    if (index < LG_HIST_LINEAR)
        return index;
    unsigned k = index - LG_HIST_LINEAR;
    unsigned b = 7u + (k >> LG_HIST_SUB_BITS), sub = k & ((1u << LG_HIST_SUB_BITS) - 1u);
    return (uint32_t)(((1u << LG_HIST_SUB_BITS) + sub) << (b - LG_HIST_SUB_BITS));
}

void lg_hist_write(FILE *f, lg_samples *s)
{
    lg_samples_sort(s);
    fputc('[', f);
    size_t i = 0;
    int first = 1;
    while (i < s->n) {
        unsigned idx = lg_hist_index(s->v[i]);
        size_t j = i;
        while (j < s->n && lg_hist_index(s->v[j]) == idx)
            j++;
        fprintf(f, "%s[%u,%zu]", first ? "" : ",", (unsigned)lg_hist_lower(idx), j - i);
        first = 0;
        i = j;
    }
    fputc(']', f);
}

void lg_reasons_add(lg_reasons *r, const char *reason)
{
    for (unsigned i = 0; i < r->n; i++) {
        if (strncmp(r->text[i], reason, LG_REASON_LEN - 1) == 0) {
            r->count[i]++;
            return;
        }
    }
    if (r->n == LG_REASONS_MAX) {
        r->other++;
        return;
    }
    snprintf(r->text[r->n], LG_REASON_LEN, "%s", reason);
    r->count[r->n++] = 1;
}
