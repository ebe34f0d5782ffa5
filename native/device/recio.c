/* recio: see recio.h. */
#include "recio.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "marker.h"

void sp_recio_init(struct sp_recio *io, int fd, int marks)
{
    io->fd = fd;
    io->marks = marks;
    io->dgram = 0;
    io->have = io->pos = 0;
    io->records_in = io->records_out = io->bytes_in = io->bytes_out = 0;
}

/* DTLS record header: type, version (2), epoch (2), sequence number (6), length (2) */
#define DTLS_HDR 13

/* the next datagram into io->rec, announced by markers (RECV_INFO describes its first record; an
 * encrypted one, epoch > 0, names no handshake type). 1 ok, -1 error. */
static int next_datagram(struct sp_recio *io)
{
    sp_mark(SP_MARK_RECV_BEGIN, (unsigned)io->records_in);
    ssize_t r;
    do {
        r = recv(io->fd, io->rec, sizeof io->rec, 0);
    } while (r < 0 && errno == EINTR);
    if (r <= 0)
        return -1;
    size_t len = (size_t)r, off = 0;
    unsigned n = 0;
    while (off + DTLS_HDR <= len) { /* one RECV_INFO per record, in order: the first names the datagram */
        size_t rl = ((size_t)io->rec[off + 11] << 8) | io->rec[off + 12];
        unsigned type = io->rec[off], epoch = ((unsigned)io->rec[off + 3] << 8) | io->rec[off + 4];
        unsigned hs = (type == 22 && epoch == 0 && rl > 0 && off + DTLS_HDR < len) ? io->rec[off + DTLS_HDR]
                                                                                 : SP_HS_TYPE_UNKNOWN;
        sp_mark(SP_MARK_RECV_INFO, (type << 24) | (hs << 16) | (unsigned)(rl & 0xffff));
        n++;
        off += DTLS_HDR + rl;
    }
    io->have = len;
    io->pos = 0;
    io->records_in += n;
    io->bytes_in += len;
    return 1;
}

static int read_full(int fd, uint8_t *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, p + got, n - got, 0);
        if (r == 0)
            return got == 0 ? 0 : -1;
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)r;
    }
    return 1;
}

/* The next whole record into io->rec, announced by markers. 1 ok, 0 end of stream, -1 error. */
static int next_record(struct sp_recio *io)
{
    sp_mark(SP_MARK_RECV_BEGIN, (unsigned)io->records_in);
    int r = read_full(io->fd, io->rec, 5);
    if (r <= 0)
        return r;
    size_t len = ((size_t)io->rec[3] << 8) | io->rec[4];
    if (len > SP_RECORD_MAX - 5) {
        errno = EPROTO;
        return -1;
    }
    if (len > 0 && read_full(io->fd, io->rec + 5, len) != 1) {
        if (errno == 0)
            errno = ECONNRESET;
        return -1;
    }
    unsigned type = io->rec[0];
    unsigned hs = (type == 22 && len > 0) ? io->rec[5] : SP_HS_TYPE_UNKNOWN;
    sp_mark(SP_MARK_RECV_INFO, (type << 24) | (hs << 16) | (unsigned)(len & 0xffff));
    io->have = 5 + len;
    io->pos = 0;
    io->records_in++;
    io->bytes_in += io->have;
    return 1;
}

ssize_t sp_recio_read(struct sp_recio *io, void *buf, size_t len)
{
    if (!io->marks) {
        for (;;) {
            ssize_t r = recv(io->fd, buf, len, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r > 0)
                io->bytes_in += (size_t)r;
            return r;
        }
    }
    if (io->pos == io->have) {
        int r = io->dgram ? next_datagram(io) : next_record(io);
        if (r <= 0)
            return r;
    }
    size_t n = io->have - io->pos;
    if (n > len)
        n = len;
    memcpy(buf, io->rec + io->pos, n);
    io->pos += n;
    return (ssize_t)n;
}

/* type << 24 | first handshake type << 16 | number of whole records in buf */
static unsigned describe(const uint8_t *p, size_t len, unsigned long *records, int dgram)
{
    unsigned first = 0, n = 0;
    size_t off = 0, hdr = dgram ? DTLS_HDR : 5;
    while (off + hdr <= len) {
        size_t rl = ((size_t)p[off + hdr - 2] << 8) | p[off + hdr - 1];
        if (n == 0) {
            int plain = !dgram || (p[off + 3] == 0 && p[off + 4] == 0);   /* DTLS: epoch 0 */
            unsigned hs = (p[off] == 22 && plain && rl > 0 && off + hdr < len) ? p[off + hdr] : SP_HS_TYPE_UNKNOWN;
            first = ((unsigned)p[off] << 24) | (hs << 16);
        }
        n++;
        off += hdr + rl;
    }
    *records += n;
    return first | (n & 0xffff);
}

ssize_t sp_recio_write(struct sp_recio *io, const void *buf, size_t len)
{
    if (io->marks)
        sp_mark(SP_MARK_SEND, describe(buf, len, &io->records_out, io->dgram));
    size_t done = 0;
    while (done < len) {
        ssize_t r = send(io->fd, (const uint8_t *)buf + done, len - done, MSG_NOSIGNAL);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return done ? (ssize_t)done : -1;
        }
        done += (size_t)r;
    }
    io->bytes_out += len;
    return (ssize_t)len;
}
