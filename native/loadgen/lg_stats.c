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
