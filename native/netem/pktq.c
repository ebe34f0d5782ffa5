/* pktq: the release-time min-heap and its fixed packet pool. */
#include "pktq.h"

#include <stdlib.h>

int sched_init(sched *s, int cap, int bufsize)
{
    s->n = 0;
    s->cap = cap;
    s->seq = 0;
    s->heap = calloc((size_t)cap, sizeof *s->heap); /* NOLINT(bugprone-sizeof-expression): an array of pkt pointers */
    s->slots = calloc((size_t)cap, sizeof *s->slots);
    s->free_list = calloc((size_t)cap, sizeof *s->free_list); /* NOLINT(bugprone-sizeof-expression): an array of pkt pointers */
    unsigned char *mem = s->mem = malloc((size_t)cap * (size_t)bufsize);
    if (!s->heap || !s->slots || !s->free_list || !mem)
        return -1;
    for (int i = 0; i < cap; i++) {
        s->slots[i].data = mem + (size_t)i * (size_t)bufsize;
        s->free_list[i] = &s->slots[i];
    }
    s->nfree = cap;
    return 0;
}

void sched_destroy(sched *s)
{
    free(s->heap);
    free(s->slots);
    free(s->free_list);
    free(s->mem);
    s->heap = NULL;
    s->slots = NULL;
    s->free_list = NULL;
    s->mem = NULL;
    s->n = s->nfree = 0;
}

pkt *sched_alloc(sched *s) { return s->nfree > 0 ? s->free_list[--s->nfree] : NULL; }

void sched_free(sched *s, pkt *p) { s->free_list[s->nfree++] = p; }

static int before(const pkt *a, const pkt *b)
{
    return a->release < b->release || (a->release == b->release && a->seq < b->seq);
}

void sched_push(sched *s, pkt *p)
{
    p->seq = s->seq++;
    int i = s->n++;
    while (i > 0) {
        int up = (i - 1) / 2;
        if (!before(p, s->heap[up]))
            break;
        s->heap[i] = s->heap[up];
        i = up;
    }
    s->heap[i] = p;
}

pkt *sched_top(const sched *s) { return s->n ? s->heap[0] : NULL; }

pkt *sched_pop(sched *s)
{
    if (!s->n)
        return NULL;
    pkt *top = s->heap[0], *last = s->heap[--s->n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= s->n)
            break;
        if (c + 1 < s->n && before(s->heap[c + 1], s->heap[c]))
            c++;
        if (!before(s->heap[c], last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->n)
        s->heap[i] = last;
    return top;
}
