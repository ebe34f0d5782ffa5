/* recio: see recio.h. */
#include "recio.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "marker.h"

void sp_recio_init(struct sp_recio *io, int fd, int marks)
{
    memset(io, 0, sizeof *io - sizeof io->rec);
    io->fd = fd;
    io->marks = marks;
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
        int r = next_record(io);
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
static unsigned describe(const uint8_t *p, size_t len, unsigned long *records)
{
    unsigned first = 0, n = 0;
    size_t off = 0;
    while (off + 5 <= len) {
        size_t rl = ((size_t)p[off + 3] << 8) | p[off + 4];
        if (n == 0) {
            unsigned hs = (p[off] == 22 && rl > 0 && off + 5 < len) ? p[off + 5] : SP_HS_TYPE_UNKNOWN;
            first = ((unsigned)p[off] << 24) | (hs << 16);
        }
        n++;
        off += 5 + rl;
    }
    *records += n;
    return first | (n & 0xffff);
}

ssize_t sp_recio_write(struct sp_recio *io, const void *buf, size_t len)
{
    if (io->marks)
        sp_mark(SP_MARK_SEND, describe(buf, len, &io->records_out));
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
