/* netem_args: the relay's and the flood sender's command lines, parsed and validated into structs
 * (bad input -> one line naming the option, exit 2). */
#ifndef SECPERF_NETEM_NETEM_ARGS_H
#define SECPERF_NETEM_NETEM_ARGS_H

#include <stddef.h>
#include <stdint.h>

typedef struct relay_args {
    const char *devns, *srvns;  /* network namespace paths (required) */
    const char *ifname;         /* TUN name in both namespaces */
    const char *up, *down;      /* link specs (link_parse), "" = an ideal link */
    const char *userns;         /* rootless: the user namespace owning both network namespaces */
    const char *tundev;
    uint64_t seed;
    double spin_us;
    int pool;                   /* packet buffers */
} relay_args;

typedef struct flood_args {
    const char *dst;
    int port, size;
    long count;
    double pps;                 /* 0: as fast as possible */
    double max_s;
} flood_args;

/* argv[0] is the subcommand ("relay", "flood"). 0: parsed; -1: message in err. */
int relay_args_parse(int argc, char **argv, relay_args *a, char *err, size_t errlen);
int flood_args_parse(int argc, char **argv, flood_args *a, char *err, size_t errlen);

#endif
