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

#include "relay.h"

int flood_main(int argc, char **argv)
{
    const char *dst = NULL;
    int port = 9, size = 18;
    long count = 1000;
    double pps = 0, max_s = 30;
    for (int i = 0; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--dst")) dst = argv[i + 1];
        else if (!strcmp(argv[i], "--port")) port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--size")) size = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--count")) count = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--pps")) pps = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--max-seconds")) max_s = atof(argv[i + 1]);
        else {
            fprintf(stderr, "secperf-netem flood: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!dst || size < 1 || size > 65000 || count < 1 || port < 1 || port > 65535) {
        fprintf(stderr, "secperf-netem flood: need --dst IP, --size 1..65000, --count >= 1, --port 1..65535\n");
        return 2;
    }
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
    int64_t t0 = relay_now_ns(), deadline = t0 + (int64_t)(max_s * 1e9);
    while (sent < count) {
        int64_t now = relay_now_ns();
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
    double el = (double)(relay_now_ns() - t0) / 1e9;
    printf("{\"type\":\"flood\",\"sent\":%ld,\"errors\":%ld,\"elapsed_s\":%.6f,\"pps\":%.1f}\n", sent, errors, el,
           el > 0 ? (double)sent / el : 0.0);
    close(s);
    free(payload);
    return 0;
}
