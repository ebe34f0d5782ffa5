/* secperf-netem: a userspace link emulator between two TUN devices in two network namespaces
 * (device side and server side), applying per direction delay, jitter, loss, duplication,
 * reordering, a rate limit with a bounded queue and an MTU. The kernels' own TCP and UDP run on
 * both ends; only the link is emulated.
 *
 *   secperf-netem relay --dev-netns PATH --srv-netns PATH [--ifname sp0] [--seed N]
 *                       [--spin-us 10000] [--pool 16384] [--userns PATH] [--tun-device /dev/net/tun]
 *                       --up SPEC --down SPEC
 *   secperf-netem flood --dst IP [--port 9] [--size 18] [--count N] [--pps R] [--max-seconds S]
 *
 * SPEC is the canonical form written by secperf's Python side (secperf.inputs.netspec):
 * delay_ns, jitter_ns, jitter_dist=normal|pareto, loss, ge_p, ge_r, ge_bad_loss, ge_good_loss,
 * dup, reorder (probabilities 0..1), rate_bps, queue (packets), mtu.
 *
 * stdout: {"type":"ready",...} once both TUN devices exist; {"type":"stats",...} on SIGUSR1 and a
 * final one on SIGTERM/SIGINT/SIGHUP (or when the parent dies: PR_SET_PDEATHSIG).
 *
 * Without root, secperf passes --userns (the user namespace that owns both network namespaces,
 * e.g. /proc/PID/ns/user of the process holding them): the relay joins it first, which gives it
 * CAP_SYS_ADMIN/CAP_NET_ADMIN over those namespaces only, and --tun-device, a TUN node it can open. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "netem_args.h"
#include "flood.h"
#include "json.h"
#include "link.h"
#include "relay.h"
#include "tun.h"

static int usage(void)
{
    fprintf(stderr, "usage: secperf-netem relay --dev-netns PATH --srv-netns PATH --up SPEC --down SPEC "
                    "[--ifname sp0] [--seed N] [--spin-us US] [--pool N] [--userns PATH] [--tun-device PATH]\n"
                    "       secperf-netem flood --dst IP [--port P] [--size B] [--count N] [--pps R]\n");
    return 2;
}

/* join the user namespace at userns_path, then make the device's network namespace this process's
 * own: the initial one belongs to the initial user namespace, where an unprivileged relay has no
 * right to setns() back after creating a TUN elsewhere (tun_open_in_netns returns to it) */
static int join_userns(const char *userns_path, const char *home_netns_path, char *err, int errlen)
{
    const char *what = userns_path;
    int fd = open(userns_path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && setns(fd, CLONE_NEWUSER) == 0) {
        close(fd);
        what = home_netns_path;
        fd = open(home_netns_path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && setns(fd, CLONE_NEWNET) == 0) {
            close(fd);
            return 0;
        }
    }
    snprintf(err, errlen, "cannot join namespace %s: %s", what, strerror(errno));
    if (fd >= 0)
        close(fd);
    return -1;
}

static int relay_main(int argc, char **argv)
{
    relay_args a;
    char err[512];
    if (relay_args_parse(argc, argv, &a, err, sizeof err) < 0) {
        fprintf(stderr, "secperf-netem relay: %s\n", err);
        return 2;
    }
    /* the relay never outlives the secperf process that started it */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1)
        return 1;

    relay r;
    memset(&r, 0, sizeof r);
    if (a.userns && join_userns(a.userns, a.devns, err, sizeof err) < 0) {
        fprintf(stderr, "secperf-netem relay: %s\n", err);
        return 1;
    }
    link_cfg cfg[2];
    const char *specs[2] = {a.up, a.down}, *names[2] = {"up", "down"};
    int mtu = 0;
    for (int d = 0; d < 2; d++) {
        if (link_parse(&cfg[d], specs[d], err, sizeof err) < 0) {
            fprintf(stderr, "secperf-netem relay: --%s: %s\n", names[d], err);
            return 2;
        }
        if (link_init(&r.dir[d], &cfg[d], a.seed * 2 + (uint64_t)d) < 0)
            return 1;
        if (cfg[d].mtu > mtu)
            mtu = cfg[d].mtu;
    }
    r.pool = a.pool;
    r.bufsize = mtu + 64;
    r.spin_ns = (int64_t)(a.spin_us * 1000);
    /* SIOCSIFTXQLEN wants CAP_NET_ADMIN in the initial user namespace: under --userns the caller
     * sets the input queue over netlink instead (ip link set IFNAME txqueuelen N) */
    int txqlen = a.userns ? 0 : TUN_TXQUEUELEN;
    r.fd[0] = tun_open_in_netns(a.devns, a.tundev, a.ifname, txqlen, err, sizeof err);
    if (r.fd[0] < 0) {
        fprintf(stderr, "secperf-netem relay: %s\n", err);
        return 1;
    }
    r.fd[1] = tun_open_in_netns(a.srvns, a.tundev, a.ifname, txqlen, err, sizeof err);
    if (r.fd[1] < 0) {
        fprintf(stderr, "secperf-netem relay: %s\n", err);
        return 1;
    }
    json_obj o;
    json_obj_begin(&o, stdout);
    json_obj_str(&o, "type", "ready");
    json_obj_i64(&o, "pid", getpid());
    json_obj_str(&o, "ifname", a.ifname);
    json_obj_i64(&o, "mtu", mtu);
    json_obj_u64(&o, "seed", a.seed);
    json_end_line(stdout);
    return relay_run(&r);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    if (!strcmp(argv[1], "relay"))
        return relay_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "flood"))
        return flood_main(argc - 1, argv + 1);
    return usage();
}
