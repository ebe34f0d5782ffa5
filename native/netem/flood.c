/* flood: a paced UDP sender for the emulator's benchmarks (packet rate, loss, rate limit).
 * Sends --count datagrams of --size payload bytes to --dst:--port at --pps (0 = as fast as
 * possible), in sendmmsg batches of up to 32 timed against CLOCK_MONOTONIC. Prints one JSON line. */
#include "flood.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "netem_args.h"
#include "clock.h"
#include "json.h"

int flood_main(int argc, char **argv)
{
    flood_args a;
    char err[512];
    if (flood_args_parse(argc, argv, &a, err, sizeof err) < 0) {
        fprintf(stderr, "secperf-netem flood: %s\n", err);
        return 2;
    }
    const char *dst = a.dst;
    int port = a.port, size = a.size;
    long count = a.count;
    double pps = a.pps, max_s = a.max_s;
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, dst, &sin.sin_addr) != 1) {
        fprintf(stderr, "secperf-netem flood: --dst %s is not an IPv4 address\n", dst);
        return 2;
    }
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    int sndbuf = 4 << 20;
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    if (s < 0 || connect(s, (struct sockaddr *)&sin, sizeof sin) < 0) {
        perror("secperf-netem flood: socket");
        return 1;
    }
    enum { B = 32 };
    unsigned char *payload = calloc(B, (size_t)size);
    struct mmsghdr msgs[B];
    struct iovec iov[B];
    memset(msgs, 0, sizeof msgs);
    for (int i = 0; i < B; i++) {
        iov[i].iov_base = payload + (size_t)i * (size_t)size;
        iov[i].iov_len = (size_t)size;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    long sent = 0, errors = 0;
    int64_t t0 = clock_mono_ns(), deadline = t0 + (int64_t)(max_s * 1e9);
    while (sent < count) {
        int64_t now = clock_mono_ns();
        if (now > deadline)
            break;
        int batch = (int)(count - sent < B ? count - sent : B);
        if (pps > 0) {
            /* packets due by now, at most one batch */
            long due = (long)((double)(now - t0) * pps / 1e9) + 1 - sent;
            if (due <= 0) {
                int64_t wait = (int64_t)((double)(sent)*1e9 / pps) + t0 - now;
                if (wait > 200000) {
                    struct timespec ts = {0, (long)(wait - 100000)};
                    nanosleep(&ts, NULL);
                }
                continue;
            }
            if (due < batch)
                batch = (int)due;
        }
        for (int i = 0; i < batch; i++) /* sequence number in the first bytes */
            memcpy(payload + (size_t)i * (size_t)size, &(long){sent + i}, size >= 8 ? 8 : (size_t)size);
        int n = sendmmsg(s, msgs, (unsigned)batch, 0);
        if (n < 0) {
            if (errno != EAGAIN && errno != ENOBUFS && errno != ECONNREFUSED)
                errors++;
            if (errno == ECONNREFUSED)
                continue;
            n = 0;
        }
        sent += n;
    }
    double el = (double)(clock_mono_ns() - t0) / 1e9;
    json_obj o;
    json_obj_begin(&o, stdout);
    json_obj_str(&o, "type", "flood");
    json_obj_i64(&o, "sent", sent);
    json_obj_i64(&o, "errors", errors);
    json_obj_fixed(&o, "elapsed_s", 6, el);
    json_obj_fixed(&o, "pps", 1, el > 0 ? (double)sent / el : 0.0);
    json_end_line(stdout);
    close(s);
    free(payload);
    return 0;
}
