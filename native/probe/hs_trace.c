/* hs_trace: per-message CPU accounting and flight counting of one handshake (msg/info callbacks). */
#include "hs_trace.h"

#include <string.h>

/*
 * Attribution rule: how the library CPU of a handshake is split between its messages.
 *
 * Library CPU (lib_cpu) is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) spent inside
 * the OpenSSL calls that run the handshake (SSL_connect/SSL_accept, SSL_write_early_data and
 * SSL_read_early_data for 0-RTT, DTLSv1_listen, DTLSv1_handle_timeout). Waiting for the network
 * happens in poll() between those calls and costs no thread CPU; wait = wall - lib_cpu.
 *
 * Inside the calls, the thread CPU clock is read at every event; consecutive events cut the
 * call into segments, and every segment is given to exactly one message:
 *
 *  - Message events: the msg callback reporting a handshake message (type byte buf[0]) or a
 *    ChangeCipherSpec sent or received, and the received TLS record header of a
 *    ChangeCipherSpec record (OpenSSL 3.0 has no msg callback for a received TLS CCS).
 *    In 0-RTT, the record holding early data (inner content type 23 written during the
 *    handshake) is the event "EarlyData" (sent).
 *  - Boundaries: the info callback's SSL_CB_LOOP (every state-machine transition, read or
 *    write), SSL_CB_HANDSHAKE_START and SSL_CB_HANDSHAKE_DONE, and the msg callback of every
 *    received record header (SSL3_RT_HEADER, read_p).
 *
 *  1. A sent message costs the CPU from the previous event up to the msg callback reporting
 *     it sent: building it (ClientHello includes generating the key share; a TLS 1.2
 *     CertificateVerify includes the signature).
 *  2. A received message costs the CPU from the first event after the previous owner's
 *     segment closed up to its msg callback (reading and decrypting its record, parsing the
 *     header) plus everything from its msg callback up to the next boundary (processing it:
 *     ServerHello includes the shared-secret and key derivation, Certificate the chain
 *     verification, CertificateVerify the signature verification, Finished its check and the
 *     application key derivation).
 *  3. After its msg callback, a sent message also keeps the CPU up to the next boundary (the
 *     state machine's post-work: flushing the flight to the socket, switching keys; e.g. the
 *     TLS 1.2 ClientKeyExchange includes the master-secret derivation).
 *  4. The SSL_CB_LOOP that precedes the next state is the boundary between processing a
 *     received message and building the next sent one, so the server Finished (received) and
 *     the client Finished (sent) are separated. CPU from a boundary to the next message event
 *     belongs to that next message (rule 1 or 2), e.g. reading a record before its message
 *     is parsed. A received TLS ChangeCipherSpec owns the CPU up to the next record header
 *     (its processing, the read-key switch, happens after an SSL_CB_LOOP).
 *  5. CPU inside a call before its first message event belongs to the next message (for a
 *     call resumed after WANT_READ: reading and decrypting the next received message); a
 *     call with no message event at all (a read that found part of a record, a DTLS
 *     retransmission) is all "before" and goes to the next message too. CPU after the last
 *     timed event of a call that saw a message belongs to the message owning the CPU at that
 *     point or, if none does, to the last message of that call. CPU left unowned when the
 *     handshake ends goes to the last message.
 *
 * Only ownership changes are timed: a boundary reached while no message owns the CPU (the
 * SSL_CB_LOOP that follows a record header, SSL_CB_HANDSHAKE_START, ...) would move nothing,
 * so the clock is not read there.
 *
 * Hence the per-message segments partition lib_cpu exactly: their sum equals lib_cpu (up to
 * the rounding of the printed microseconds). The clock reads themselves (one per timed event,
 * about 20 per TLS 1.3 handshake; see clock_reads) are part of lib_cpu.
 *
 * Flights: every record header (SSL3_RT_HEADER, both directions) adds 5 (TLS) or 13 (DTLS)
 * bytes plus the record length to the current flight; a change of direction starts a new
 * flight. Written records are counted when the library writes them, which is before the flush.
 */

static int trace_idx = -1;

/* A boundary ends the owner's segment. With no owner it changes nothing (the unowned CPU goes
 * to the next message either way), so it is not timed: one clock read saved per boundary. */
static inline void boundary(hs_trace *t, int record_header)
{
    if (t->cur < 0)
        return;
    if (t->cur_sticky && !record_header)
        return;
    uint64_t now = hs_cpu_ns();
    t->msgs[t->cur].cpu_ns += now - t->last;
    t->last = now;
    t->clock_reads++;
    t->cur = -1;
    t->cur_sticky = 0;
}

static int new_msg(hs_trace *t, const char *event, int sent, size_t bytes)
{
    int i;
    if (t->nmsgs < HS_TRACE_MAX_MSGS) {
        i = t->nmsgs++;
        t->msgs[i].event = event;
        t->msgs[i].sent = sent;
        t->msgs[i].cpu_ns = 0;
        t->msgs[i].t_ns = hs_now_ns() - t->wall0;
        t->msgs[i].bytes = bytes;
    } else {
        i = HS_TRACE_MAX_MSGS - 1;
        t->folded++;
    }
    return i;
}

static void message(hs_trace *t, const char *event, int sent, size_t bytes)
{
    uint64_t now = hs_cpu_ns();
    uint64_t seg = now - t->last;
    t->last = now;
    t->clock_reads++;
    int i = new_msg(t, event, sent, bytes);
    t->msgs[i].cpu_ns += t->pending_ns + seg;
    t->pending_ns = 0;
    t->cur = i;
    t->cur_sticky = 0;
}

void hs_trace_call_end(hs_trace *t)
{
    uint64_t now = hs_cpu_ns();
    uint64_t seg = now - t->last;
    t->clock_reads++;
    /* No owner: the last message if this call saw one, else the next message (pending). */
    int owner = t->cur >= 0 ? t->cur : t->nmsgs > t->call_first_msg ? t->nmsgs - 1 : -1;
    if (owner >= 0)
        t->msgs[owner].cpu_ns += seg;
    else
        t->pending_ns += seg;
    t->last = now;
    t->call_cpu_ns += now - t->call_begin;
    t->calls++;
}

static void count_record(hs_trace *t, int out, uint64_t bytes)
{
    hs_flight *f = t->nflights > 0 ? &t->flights[t->nflights - 1] : NULL;
    if (f == NULL || f->out != out) {
        if (t->nflights < HS_TRACE_MAX_FLIGHTS) {
            f = &t->flights[t->nflights++];
            f->out = out;
            f->bytes = 0;
            f->records = 0;
        }
    }
    f->bytes += bytes;
    f->records++;
}

static const char *handshake_name(const unsigned char *p, size_t len)
{
    /* TLS 1.3 HelloRetryRequest is a ServerHello with this random (RFC 8446, 4.1.3). */
    static const unsigned char hrr_random[32] = {
        0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8,
        0x91, 0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8,
        0x33, 0x9c};
    switch (p[0]) {
    case 0: return "HelloRequest";
    case 1: return "ClientHello";
    case 2:
        /* The random sits after the 4-byte header (12 in DTLS, never an HRR) and the version. */
        if (len >= 4 + 2 + 32 && memcmp(p + 6, hrr_random, 32) == 0)
            return "HelloRetryRequest";
        return "ServerHello";
    case 3: return "HelloVerifyRequest";
    case 4: return "NewSessionTicket";
    case 5: return "EndOfEarlyData";
    case 8: return "EncryptedExtensions";
    case 11: return "Certificate";
    case 12: return "ServerKeyExchange";
    case 13: return "CertificateRequest";
    case 14: return "ServerHelloDone";
    case 15: return "CertificateVerify";
    case 16: return "ClientKeyExchange";
    case 20: return "Finished";
    case 22: return "CertificateStatus";
    case 24: return "KeyUpdate";
    case 25: return "CompressedCertificate";
    case 67: return "NextProtocol";
    case 254: return "MessageHash";
    default: return "Unknown";
    }
}

static void note_handshake(hs_trace *t, const char *name, int sent)
{
    if (!sent && strcmp(name, "CertificateRequest") == 0)
        t->cert_request_received = 1;
    else if (sent && strcmp(name, "Certificate") == 0)
        t->certificate_sent = 1;
    else if (!sent && strcmp(name, "HelloVerifyRequest") == 0)
        t->hello_verify_received = 1;
    else if (!sent && strcmp(name, "HelloRetryRequest") == 0)
        t->hello_retry_received = 1;
}

static void msg_cb(int write_p, int version, int content_type, const void *buf, size_t len,
                   SSL *ssl, void *arg)
{
    (void)version;
    (void)ssl;
    hs_trace *t = arg;
    const unsigned char *p = buf;
    if (t == NULL)
        return;
    switch (content_type) {
    case SSL3_RT_HEADER:
        if (!t->active)
            return;
        if (len == 13 && t->dtls) {
            count_record(t, write_p, 13 + ((uint64_t)p[11] << 8 | p[12]));
        } else if (len == 5) {
            count_record(t, write_p, 5 + ((uint64_t)p[3] << 8 | p[4]));
            if (write_p)
                t->last_out_record = (size_t)p[3] << 8 | p[4];
        }
        if (!write_p) {
            if (!t->dtls && len == 5 && p[0] == SSL3_RT_CHANGE_CIPHER_SPEC) {
                /* One clock read: it ends the owner's segment and starts the CCS message. */
                uint64_t now = hs_cpu_ns();
                uint64_t seg = now - t->last;
                t->last = now;
                t->clock_reads++;
                if (t->cur >= 0)
                    t->msgs[t->cur].cpu_ns += seg;
                else
                    t->pending_ns += seg;
                int i = new_msg(t, "ChangeCipherSpec", 0, 1);
                t->msgs[i].cpu_ns += t->pending_ns;
                t->pending_ns = 0;
                t->cur = i;
                t->cur_sticky = 1;
            } else {
                boundary(t, 1);
            }
        }
        return;
    case SSL3_RT_INNER_CONTENT_TYPE:
        if (t->active && write_p && len == 1 && p[0] == SSL3_RT_APPLICATION_DATA)
            message(t, "EarlyData", 1, t->last_out_record); /* encrypted payload */
        return;
    case SSL3_RT_HANDSHAKE:
        if (len < 1)
            return;
        if (!t->active) {
            if (!write_p && p[0] == SSL3_MT_NEWSESSION_TICKET)
                t->tickets_after++;
            return;
        }
        {
            const char *name = handshake_name(p, len);
            message(t, name, write_p, len);
            note_handshake(t, name, write_p);
        }
        return;
    case SSL3_RT_CHANGE_CIPHER_SPEC:
        if (t->active)
            message(t, "ChangeCipherSpec", write_p, len);
        return;
    default:
        return;
    }
}

static void info_cb(const SSL *ssl, int where, int ret)
{
    hs_trace *t = SSL_get_ex_data(ssl, trace_idx);
    if (t == NULL)
        return;
    if (where & SSL_CB_ALERT) {
        if (where & SSL_CB_READ)
            t->alert_received = ret & 0xff;
        else
            t->alert_sent = ret & 0xff;
        return;
    }
    if (t->active && (where & (SSL_CB_LOOP | SSL_CB_HANDSHAKE_START | SSL_CB_HANDSHAKE_DONE)))
        boundary(t, 0);
}

int hs_trace_install(SSL_CTX *ctx, probe_err *err)
{
    if (trace_idx < 0)
        trace_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
    if (trace_idx < 0)
        return err_ossl(err, "SSL_get_ex_new_index failed");
    SSL_CTX_set_msg_callback(ctx, msg_cb);
    SSL_CTX_set_info_callback(ctx, info_cb);
    return 1;
}

int hs_trace_bind(hs_trace *t, SSL *ssl)
{
    SSL_set_msg_callback_arg(ssl, t);
    return SSL_set_ex_data(ssl, trace_idx, t);
}

void hs_trace_start(hs_trace *t, int dtls)
{
    memset(t, 0, sizeof(*t));
    t->dtls = dtls;
    t->cur = -1;
    t->alert_received = -1;
    t->alert_sent = -1;
    t->wall0 = hs_now_ns();
    t->active = 1;
}

void hs_trace_finish(hs_trace *t)
{
    if (t->pending_ns > 0 && t->nmsgs > 0) {
        t->msgs[t->nmsgs - 1].cpu_ns += t->pending_ns;
        t->pending_ns = 0;
    }
    t->active = 0;
}

uint64_t hs_trace_sum_ns(const hs_trace *t)
{
    uint64_t sum = t->pending_ns;
    for (int i = 0; i < t->nmsgs; i++)
        sum += t->msgs[i].cpu_ns;
    return sum;
}

const char *hs_trace_last_received(const hs_trace *t)
{
    for (int i = t->nmsgs - 1; i >= 0; i--)
        if (!t->msgs[i].sent)
            return t->msgs[i].event;
    return NULL;
}

void hs_trace_write_json(FILE *f, const hs_trace *t)
{
    fputs(",\"messages\":[", f);
    for (int i = 0; i < t->nmsgs; i++) {
        const hs_msg *m = &t->msgs[i];
        fprintf(f, "%s{\"event\":\"%s\",\"dir\":\"%s\",\"cpu_us\":%.3f,\"t_us\":%.1f,\"bytes\":%zu}",
                i ? "," : "", m->event, m->sent ? "sent" : "received", (double)m->cpu_ns / 1e3,
                (double)m->t_ns / 1e3, m->bytes);
    }
    fputs("],\"flights\":[", f);
    for (int i = 0; i < t->nflights; i++) {
        const hs_flight *fl = &t->flights[i];
        fprintf(f, "%s{\"dir\":\"%s\",\"bytes\":%llu,\"records\":%u}", i ? "," : "",
                fl->out ? "out" : "in", (unsigned long long)fl->bytes, fl->records);
    }
    fputc(']', f);
    if (t->folded > 0)
        fprintf(f, ",\"messages_folded\":%u", t->folded);
}
