/* recio: record-at-a-time socket I/O for a TLS library's I/O callbacks. The library is handed at
 * most the rest of one TLS record per read, so it must finish processing a record before it can
 * ask for the next one; the first byte of each record is preceded by a RECV_BEGIN marker, which
 * therefore closes the processing of the previous record. Every write is preceded by a SEND
 * marker describing the records written. DTLS (dgram): the library is handed one datagram (which may
 * carry several records) per read, announced like a record; writes are one datagram each. */
#ifndef SP_RECIO_H
#define SP_RECIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SP_RECORD_MAX (5 + 16384 + 2048)

struct sp_recio {
    int fd;
    int marks;            /* 0: plain I/O (no markers, whatever size the library asks) */
    int dgram;            /* 1: DTLS over a connected UDP socket: one datagram per read and write */
    size_t have, pos;     /* bytes of the current record in rec[] and bytes already handed out */
    uint8_t rec[SP_RECORD_MAX];
    unsigned long records_in, records_out;
    unsigned long bytes_in, bytes_out;
};

void sp_recio_init(struct sp_recio *io, int fd, int marks);
/* >0 bytes copied, 0 end of stream, -1 error (errno set; EAGAIN/EWOULDBLOCK for a timeout) */
ssize_t sp_recio_read(struct sp_recio *io, void *buf, size_t len);
ssize_t sp_recio_write(struct sp_recio *io, const void *buf, size_t len);

#endif
