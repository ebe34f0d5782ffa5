/* relay: the event loop between the two TUN devices. */
#ifndef SECPERF_NETEM_RELAY_H
#define SECPERF_NETEM_RELAY_H

#include <stdint.h>
#include "link.h"

typedef struct relay {
    int fd[2];          /* [0] device side, [1] server side; dir 0 (up) reads fd[0], writes fd[1] */
    link_state dir[2];  /* [0] up (device -> server), [1] down (server -> device) */
    int pool, bufsize;
    int64_t spin_ns;
    unsigned long long load_sleeps; /* spin windows ended because tasks waited for a CPU */
} relay;

int relay_run(relay *r);

#endif
