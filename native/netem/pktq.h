/* pktq: packets held for later release, in a binary min-heap keyed by CLOCK_MONOTONIC release
 * time (ties in arrival order), with buffers from a fixed pool (no allocation per packet). */
#ifndef SECPERF_NETEM_PKTQ_H
#define SECPERF_NETEM_PKTQ_H

#include <stdint.h>

typedef struct pkt {
    int64_t release;
    uint64_t seq;
    int dir, len;
    unsigned char *data;
} pkt;

typedef struct sched {
    pkt **heap;
    int n, cap;
    pkt *slots;
    unsigned char *mem; /* every packet's buffer, one allocation */
    pkt **free_list;
    int nfree;
    uint64_t seq;
} sched;

int sched_init(sched *s, int cap, int bufsize);
pkt *sched_alloc(sched *s);            /* NULL when the pool is exhausted */
void sched_push(sched *s, pkt *p);
pkt *sched_top(const sched *s);
pkt *sched_pop(sched *s);
void sched_free(sched *s, pkt *p);
/* Releases what sched_init allocated (also after it failed half-way). */
void sched_destroy(sched *s);

#endif
