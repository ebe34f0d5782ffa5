/* link: the impairment of one direction (device -> server "up", server -> device "down"):
 * what happens to one packet arriving at the emulated link. */
#ifndef SECPERF_NETEM_LINK_H
#define SECPERF_NETEM_LINK_H

#include <stdint.h>
#include "draw.h"

enum { JITTER_NORMAL = 0, JITTER_PARETO = 1 };

typedef struct link_cfg {
    int64_t delay_ns;     /* one-way propagation delay */
    int64_t jitter_ns;    /* standard deviation of the delay variation */
    int jitter_dist;      /* JITTER_NORMAL | JITTER_PARETO */
    double loss;          /* Bernoulli loss probability */
    double ge_p, ge_r;    /* Gilbert-Elliott: P(good->bad), P(bad->good) per packet (ge_p > 0 enables) */
    double ge_bad_loss;   /* loss probability in the bad state (1-h) */
    double ge_good_loss;  /* loss probability in the good state (1-k) */
    double dup;           /* duplication probability */
    double reorder;       /* probability that a packet skips the delay (overtakes queued ones) */
    double rate_bps;      /* serialisation rate in bit/s, 0 = unlimited */
    int queue;            /* packets waiting for serialisation (drop-tail) when rate_bps > 0 */
    int mtu;              /* larger packets are dropped (the TUN MTU normally prevents them) */
} link_cfg;

typedef struct link_stats {
    uint64_t rx_packets, rx_bytes;    /* read from the sending side's TUN */
    uint64_t tx_packets, tx_bytes;    /* written to the receiving side's TUN */
    uint64_t dropped_loss, dropped_queue, dropped_mtu, dropped_pool, dropped_write;
    uint64_t duplicated, reordered, delayed, pending_at_exit;
} link_stats;

#define LINK_TXQ_MAX 65536

typedef struct link_state {
    link_cfg cfg;
    rng r;
    int ge_bad;
    int64_t tx_busy_until;  /* when the serialiser is free again */
    int64_t last_release;   /* keeps FIFO order under jitter (links do not reorder by themselves) */
    int64_t *txq;           /* ring of serialisation end times of queued packets */
    int txq_head, txq_len;
    link_stats st;
} link_state;

int link_parse(link_cfg *c, const char *spec, char *err, int errlen);
int link_init(link_state *l, const link_cfg *c, uint64_t seed);
/* decide one packet's fate: returns the number of copies to send (0 = dropped) and the release
 * time of each (rel[0], rel[1]) */
int link_admit(link_state *l, int len, int64_t now, int64_t rel[2]);

#endif
