/* link: loss (Bernoulli, Gilbert-Elliott), serialisation at a rate with a bounded drop-tail queue,
 * delay with jitter (normal or Pareto), duplication and reordering, for one direction. */
#include "link.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int set_field(link_cfg *c, const char *k, const char *v, char *err, int errlen)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    int numeric = end != v && *end == '\0' && errno == 0;
    if (strcmp(k, "jitter_dist") == 0) {
        if (strcmp(v, "normal") == 0) c->jitter_dist = JITTER_NORMAL;
        else if (strcmp(v, "pareto") == 0) c->jitter_dist = JITTER_PARETO;
        else goto bad;
        return 0;
    }
    if (!numeric || x < 0)
        goto bad;
    if (strcmp(k, "delay_ns") == 0) c->delay_ns = (int64_t)x;
    else if (strcmp(k, "jitter_ns") == 0) c->jitter_ns = (int64_t)x;
    else if (strcmp(k, "rate_bps") == 0) c->rate_bps = x;
    else if (strcmp(k, "queue") == 0) {
        if (x < 1 || x > LINK_TXQ_MAX) goto bad;
        c->queue = (int)x;
    } else if (strcmp(k, "mtu") == 0) {
        if (x < 68 || x > 65535) goto bad;
        c->mtu = (int)x;
    } else {
        if (x > 1) goto bad;
        if (strcmp(k, "loss") == 0) c->loss = x;
        else if (strcmp(k, "ge_p") == 0) c->ge_p = x;
        else if (strcmp(k, "ge_r") == 0) c->ge_r = x;
        else if (strcmp(k, "ge_bad_loss") == 0) c->ge_bad_loss = x;
        else if (strcmp(k, "ge_good_loss") == 0) c->ge_good_loss = x;
        else if (strcmp(k, "dup") == 0) c->dup = x;
        else if (strcmp(k, "reorder") == 0) c->reorder = x;
        else {
            snprintf(err, errlen, "unknown field %s", k);
            return -1;
        }
    }
    return 0;
bad:
    snprintf(err, errlen, "field %s: bad value %s", k, v);
    return -1;
}

/* "delay_ns=50000000,loss=0.01,..." (the Python side validates and converts user specs) */
int link_parse(link_cfg *c, const char *spec, char *err, int errlen)
{
    memset(c, 0, sizeof *c);
    c->queue = 1000;
    c->mtu = 1500;
    c->ge_bad_loss = 1.0;
    char buf[1024];
    if (strlen(spec) >= sizeof buf) {
        snprintf(err, errlen, "spec too long");
        return -1;
    }
    memcpy(buf, spec, strlen(spec) + 1);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            snprintf(err, errlen, "field %s: expected key=value", tok);
            return -1;
        }
        *eq = '\0';
        if (set_field(c, tok, eq + 1, err, errlen) < 0)
            return -1;
    }
    return 0;
}

int link_init(link_state *l, const link_cfg *c, uint64_t seed)
{
    memset(l, 0, sizeof *l);
    l->cfg = *c;
    rng_seed(&l->r, seed);
    l->txq = calloc(LINK_TXQ_MAX, sizeof *l->txq);
    return l->txq ? 0 : -1;
}

static int lost(link_state *l)
{
    const link_cfg *c = &l->cfg;
    if (c->ge_p > 0) {
        /* as Linux netem's Gilbert-Elliott: transition first, then loss in the current state */
        if (!l->ge_bad) {
            if (rng_chance(&l->r, c->ge_p)) l->ge_bad = 1;
        } else if (rng_chance(&l->r, c->ge_r)) {
            l->ge_bad = 0;
        }
        return rng_chance(&l->r, l->ge_bad ? c->ge_bad_loss : c->ge_good_loss);
    }
    return rng_chance(&l->r, c->loss);
}

static int64_t delay_sample(link_state *l)
{
    const link_cfg *c = &l->cfg;
    if (c->jitter_ns <= 0)
        return c->delay_ns;
    double z = c->jitter_dist == JITTER_PARETO ? rng_pareto0(&l->r) : rng_normal(&l->r);
    double d = (double)c->delay_ns + z * (double)c->jitter_ns;
    return d < 0 ? 0 : (int64_t)d;
}

/* Serialisation: a packet waits for the packets ahead of it, then takes len*8/rate. The queue
 * holds packets whose serialisation has not ended; when it is full the packet is dropped. */
static int serialise(link_state *l, int len, int64_t now, int64_t *done)
{
    const link_cfg *c = &l->cfg;
    if (c->rate_bps <= 0) {
        *done = now;
        return 0;
    }
    while (l->txq_len > 0 && l->txq[l->txq_head] <= now) {
        l->txq_head = (l->txq_head + 1) % LINK_TXQ_MAX;
        l->txq_len--;
    }
    if (l->txq_len >= c->queue)
        return -1;
    int64_t start = l->tx_busy_until > now ? l->tx_busy_until : now;
    int64_t end = start + (int64_t)((double)len * 8.0 * 1e9 / c->rate_bps + 0.5);
    l->tx_busy_until = end;
    l->txq[(l->txq_head + l->txq_len) % LINK_TXQ_MAX] = end;
    l->txq_len++;
    *done = end;
    return 0;
}

int link_admit(link_state *l, int len, int64_t now, int64_t rel[2])
{
    const link_cfg *c = &l->cfg;
    l->st.rx_packets++;
    l->st.rx_bytes += (uint64_t)len;
    if (len > c->mtu) {
        l->st.dropped_mtu++;
        return 0;
    }
    if (lost(l)) {
        l->st.dropped_loss++;
        return 0;
    }
    int copies = rng_chance(&l->r, c->dup) ? 2 : 1;
    if (copies == 2)
        l->st.duplicated++;
    for (int i = 0; i < copies; i++) {
        int64_t done;
        if (serialise(l, len, now, &done) < 0) {
            l->st.dropped_queue++;
            if (i == 0)
                return 0;
            copies = 1;
            break;
        }
        if (c->reorder > 0 && rng_chance(&l->r, c->reorder)) {
            rel[i] = done;  /* skips the propagation delay: overtakes the packets in flight */
            l->st.reordered++;
        } else {
            int64_t t = done + delay_sample(l);
            if (t < l->last_release)
                t = l->last_release;
            l->last_release = t;
            rel[i] = t;
        }
        if (rel[i] > now)
            l->st.delayed++;
    }
    return copies;
}
