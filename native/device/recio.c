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
/* the longest connection ID tried when a datagram's records carry one of unknown length */
#define CID_MAX 32

/* the random of a HelloRetryRequest (RFC 8446 section 4.1.3): a ServerHello carrying it is one */
static const uint8_t hrr_random[32] = {
    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
    0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c};

/* One DTLS record at p + off: its size (0: it does not fit in len), its content type and first
 * handshake type. DTLS 1.3 encrypted records (unified header, first bits 001: RFC 9147 section 4)
 * hide their type: they are reported as application data (23) of unknown handshake type, as are
 * DTLS 1.2 records with a connection ID (tls12_cid, 25: RFC 9146). cid_len: the length of a
 * connection ID in the records (the receiver's, which the header does not carry). A plaintext
 * ServerHello that is a HelloRetryRequest reports handshake type SP_HS_HRR. */
static size_t dtls_record(const uint8_t *p, size_t off, size_t len, size_t cid_len, unsigned *type, unsigned *hs)
{
    *hs = SP_HS_TYPE_UNKNOWN;
    if (off >= len)
        return 0;
    if ((p[off] & 0xe0) == 0x20) { /* unified header: flags C (CID), S (16-bit sequence), L (length) */
        size_t j = off + 1 + ((p[off] & 0x10) ? cid_len : 0) + ((p[off] & 0x08) ? 2 : 1);
        size_t rl;
        if (p[off] & 0x04) {
            if (j + 2 > len)
                return 0;
            rl = ((size_t)p[j] << 8) | p[j + 1];
            j += 2;
        } else {
            if (j > len)
                return 0;
            rl = len - j;
        }
        *type = 23;
        return j + rl <= len ? j + rl - off : 0;
    }
    size_t hdr = DTLS_HDR + (p[off] == 25 ? cid_len : 0);
    if (off + hdr > len)
        return 0;
    size_t rl = ((size_t)p[off + hdr - 2] << 8) | p[off + hdr - 1];
    if (off + hdr + rl > len)
        return 0;
    unsigned epoch = ((unsigned)p[off + 3] << 8) | p[off + 4];
    *type = p[off] == 25 ? 23 : p[off];
    if (p[off] == 22 && epoch == 0 && rl > 0) {
        *hs = p[off + hdr];
        /* DTLS handshake header (12 bytes), then legacy_version (2) and the random */
        if (*hs == 2 && rl >= 12 + 2 + 32 && memcmp(p + off + hdr + 14, hrr_random, 32) == 0)
            *hs = SP_HS_HRR;
    }
    return hdr + rl;
}

/* The connection ID length with which the datagram's records fill it exactly (the first that does,
 * from hint on); hint when none does. */
static size_t dtls_cid_len(const uint8_t *p, size_t len, size_t hint)
{
    for (size_t k = 0; k <= CID_MAX; k++) {
        size_t c = k == 0 ? hint : (k <= hint ? k - 1 : k), off = 0, n;
        unsigned t, h;
        while ((n = dtls_record(p, off, len, c, &t, &h)) > 0)
            off += n;
        if (off == len)
            return c;
    }
    return hint;
}

/* the next datagram into io->rec, announced by markers (RECV_INFO describes each record; an
 * encrypted one names no handshake type). 1 ok, -1 error. */
static int next_datagram(struct sp_recio *io)
{
    sp_mark(SP_MARK_RECV_BEGIN, (unsigned)io->records_in);
    ssize_t r;
    do {
        r = recv(io->fd, io->rec, sizeof io->rec, 0);
    } while (r < 0 && errno == EINTR);
    if (r <= 0)
        return -1;
    size_t len = (size_t)r, off = 0, rl;
    size_t cid = dtls_cid_len(io->rec, len, 0);
    unsigned n = 0, type, hs;
    while ((rl = dtls_record(io->rec, off, len, cid, &type, &hs)) > 0) { /* one RECV_INFO per record, in order */
        sp_mark(SP_MARK_RECV_INFO, (type << 24) | (hs << 16) | (unsigned)(rl & 0xffff));
        n++;
        off += rl;
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
    size_t off = 0;
    if (dgram) { /* DTLS: records of either version, a connection ID (the server's) of the length that fits */
        size_t cid = dtls_cid_len(p, len, 0), rl;
        unsigned type, hs;
        while ((rl = dtls_record(p, off, len, cid, &type, &hs)) > 0) {
            if (n++ == 0)
                first = (type << 24) | (hs << 16);
            off += rl;
        }
        *records += n;
        return first | (n & 0xffff);
    }
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
