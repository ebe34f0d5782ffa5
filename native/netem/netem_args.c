/* netem_args: getopt_long tables and range checks for `secperf-netem relay` and `secperf-netem flood`. */
#include "netem_args.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "opts.h"

enum {
    OPT_DEV_NETNS = 256, OPT_SRV_NETNS, OPT_IFNAME, OPT_UP, OPT_DOWN, OPT_SEED, OPT_SPIN_US, OPT_POOL,
    OPT_USERNS, OPT_TUN_DEVICE,
    OPT_DST, OPT_PORT, OPT_SIZE, OPT_COUNT, OPT_PPS, OPT_MAX_SECONDS
};

static const struct option relay_options[] = {
    {"dev-netns", required_argument, NULL, OPT_DEV_NETNS},
    {"srv-netns", required_argument, NULL, OPT_SRV_NETNS},
    {"ifname", required_argument, NULL, OPT_IFNAME},
    {"up", required_argument, NULL, OPT_UP},
    {"down", required_argument, NULL, OPT_DOWN},
    {"seed", required_argument, NULL, OPT_SEED},
    {"spin-us", required_argument, NULL, OPT_SPIN_US},
    {"pool", required_argument, NULL, OPT_POOL},
    {"userns", required_argument, NULL, OPT_USERNS},
    {"tun-device", required_argument, NULL, OPT_TUN_DEVICE},
    {NULL, 0, NULL, 0},
};

static const struct option flood_options[] = {
    {"dst", required_argument, NULL, OPT_DST},
    {"port", required_argument, NULL, OPT_PORT},
    {"size", required_argument, NULL, OPT_SIZE},
    {"count", required_argument, NULL, OPT_COUNT},
    {"pps", required_argument, NULL, OPT_PPS},
    {"max-seconds", required_argument, NULL, OPT_MAX_SECONDS},
    {NULL, 0, NULL, 0},
};

/* an interface name must fit IFNAMSIZ (16 with the NUL) */
#define IFNAME_MAX 15
/* buffers in the packet pool: enough for a long burst at the MTU; the upper bound keeps the pool
 * (pool x (MTU + 64) bytes) within memory */
#define POOL_MIN 16
#define POOL_MAX (1 << 20)
/* spin window: Python passes 1e9 (spin always) for --poll busy */
#define SPIN_US_MAX 1e12

int relay_args_parse(int argc, char **argv, relay_args *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    a->ifname = "sp0";
    a->up = a->down = "";
    a->tundev = "/dev/net/tun";
    a->seed = 1;
    a->spin_us = 10000;
    a->pool = 16384;
    opt_parser p;
    opt_init(&p, argc, argv, "", relay_options);
    int opt;
    uint64_t u;
    while ((opt = opt_next(&p, err, errlen)) != 0) {
        const char *v = p.arg;
        int rc = 0;
        switch (opt) {
        case OPT_DEV_NETNS: rc = opt_nonempty(p.name, v, &a->devns, err, errlen); break;
        case OPT_SRV_NETNS: rc = opt_nonempty(p.name, v, &a->srvns, err, errlen); break;
        case OPT_USERNS: rc = opt_nonempty(p.name, v, &a->userns, err, errlen); break;
        case OPT_TUN_DEVICE: rc = opt_nonempty(p.name, v, &a->tundev, err, errlen); break;
        case OPT_UP: a->up = v; break;
        case OPT_DOWN: a->down = v; break;
        case OPT_IFNAME:
            rc = opt_nonempty(p.name, v, &a->ifname, err, errlen);
            if (rc == 0 && strlen(v) > IFNAME_MAX) {
                snprintf(err, errlen, "%s '%s' is longer than %d characters", p.name, v, IFNAME_MAX);
                rc = -1;
            }
            break;
        case OPT_SEED: rc = opt_u64(p.name, v, 0, UINT64_MAX, &a->seed, err, errlen); break;
        case OPT_SPIN_US: rc = opt_double(p.name, v, 0, 0, SPIN_US_MAX, &a->spin_us, err, errlen); break;
        case OPT_POOL:
            if ((rc = opt_u64(p.name, v, POOL_MIN, POOL_MAX, &u, err, errlen)) == 0)
                a->pool = (int)u;
            break;
        default: rc = -1; /* opt_next's message */
        }
        if (rc < 0)
            return -1;
    }
    if (!a->devns || !a->srvns) {
        snprintf(err, errlen, "missing %s", a->devns ? "--srv-netns" : "--dev-netns");
        return -1;
    }
    return 0;
}

int flood_args_parse(int argc, char **argv, flood_args *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    a->port = 9;
    a->size = 18;
    a->count = 1000;
    a->max_s = 30;
    opt_parser p;
    opt_init(&p, argc, argv, "", flood_options);
    int opt;
    uint64_t u;
    while ((opt = opt_next(&p, err, errlen)) != 0) {
        const char *v = p.arg;
        int rc = 0;
        switch (opt) {
        case OPT_DST: rc = opt_nonempty(p.name, v, &a->dst, err, errlen); break;
        case OPT_PORT:
            if ((rc = opt_u64(p.name, v, 1, 65535, &u, err, errlen)) == 0)
                a->port = (int)u;
            break;
        case OPT_SIZE:
            if ((rc = opt_u64(p.name, v, 1, 65000, &u, err, errlen)) == 0)
                a->size = (int)u;
            break;
        case OPT_COUNT:
            if ((rc = opt_u64(p.name, v, 1, LONG_MAX, &u, err, errlen)) == 0)
                a->count = (long)u;
            break;
        case OPT_PPS: rc = opt_double(p.name, v, 0, 0, 1e9, &a->pps, err, errlen); break;
        case OPT_MAX_SECONDS: rc = opt_double(p.name, v, 0, 1, 1e6, &a->max_s, err, errlen); break;
        default: rc = -1;
        }
        if (rc < 0)
            return -1;
    }
    if (!a->dst) {
        snprintf(err, errlen, "missing --dst");
        return -1;
    }
    return 0;
}
