/* hs_report: the JSON lines of the client and server subcommands (meta, conn, server_conn, end). */
#include "hs_report.h"

#include <stdlib.h>

#include <openssl/crypto.h>

#include "args.h"
#include "hs_net.h"
#include "json.h"
#include "timing.h"

static double us(uint64_t ns)
{
    return (double)ns / 1e3;
}

static const char *tf(int b)
{
    return b ? "true" : "false";
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Median wall cost of one thread-CPU clock read: what each traced event adds. */
static double cpu_clock_read_ns(void)
{
    enum { N = 1001 };
    uint64_t d[N];
    for (int i = 0; i < N; i++) {
        uint64_t w0 = hs_now_ns();
        (void)hs_cpu_ns();
        d[i] = hs_now_ns() - w0;
    }
    qsort(d, N, sizeof(d[0]), cmp_u64);
    size_t mid = N / 2;
    return (double)d[mid];
}

void hs_report_meta(FILE *f, const hs_client_args *a)
{
    fputs("{\"type\":\"meta\",\"tool\":\"secperf-probe\",\"subcommand\":\"client\",\"version\":", f);
    json_str(f, PROBE_VERSION);
    fputs(",\"openssl_version\":", f);
    json_str(f, OpenSSL_version(OPENSSL_VERSION));
    fprintf(f, ",\"openssl_version_num\":%lu,\"timer_overhead_ns\":%.1f,"
            "\"cpu_clock_read_ns\":%.1f,\"clock\":",
            (unsigned long)OpenSSL_version_num(), timing_overhead_ns(), cpu_clock_read_ns());
    json_str(f, TIMING_CLOCK_NAME);
    fputs(",\"cpu_clock\":\"CLOCK_THREAD_CPUTIME_ID\",\"proto\":", f);
    json_str(f, a->tls.proto == HS_DTLS ? "dtls" : "tls");
    fputs(",\"tls\":", f);
    json_str(f, hs_version_name(a->tls.version));
    fputs(",\"mode\":", f);
    json_str(f, hs_mode_name(a->mode));
    fprintf(f, ",\"n\":%llu,\"warmup\":%llu,\"warmup_printed\":false,\"app\":%s",
            (unsigned long long)a->n, (unsigned long long)a->warmup, tf(!a->no_app));
    json_end_line(f);
}

/* the stage and reason of a failed connection, closing its JSON line */
static void report_failure_end(FILE *f, const char *stage, const char *reason)
{
    fputs(",\"stage\":", f);
    json_str(f, stage);
    fputs(",\"reason\":", f);
    json_str(f, reason);
    json_end_line(f);
}

void hs_report_conn(FILE *f, uint64_t i, const hs_conn_result *r, const hs_trace *t)
{
    fprintf(f, "{\"type\":\"conn\",\"i\":%llu,\"ok\":%s", (unsigned long long)i, tf(r->ok));
    if (!r->ok) {
        report_failure_end(f, r->stage, r->reason);
        return;
    }
    uint64_t lib = t->call_cpu_ns;
    uint64_t wait = r->hs_wall_ns > lib ? r->hs_wall_ns - lib : 0;
    fprintf(f, ",\"tcp_connect_us\":%.3f,\"handshake_wall_us\":%.3f,\"lib_cpu_us\":%.3f,"
            "\"wait_us\":%.3f,\"messages_cpu_sum_us\":%.3f,\"lib_calls\":%u,\"clock_reads\":%u",
            us(r->tcp_ns), us(r->hs_wall_ns), us(lib), us(wait), us(hs_trace_sum_ns(t)), t->calls,
            t->clock_reads);
    fputs(",\"version\":", f);
    json_str(f, r->version);
    fputs(",\"cipher\":", f);
    json_str(f, r->cipher);
    fputs(",\"cipher_std\":", f);
    json_str(f, r->cipher_std);
    fputs(",\"group\":", f);
    json_str(f, r->group);
    fputs(",\"kex\":", f);
    json_str(f, r->kex);
    fputs(",\"signature\":", f);
    json_str(f, r->signature[0] ? r->signature : NULL);
    fprintf(f, ",\"resumed\":%s,\"resumption_expected\":%s,\"early_data\":\"%s\"",
            tf(r->resumed), tf(r->resumption_expected), r->early_data);
    if (r->early_data_bytes > 0)
        fprintf(f, ",\"early_data_bytes\":%zu", r->early_data_bytes);
    fprintf(f, ",\"client_cert_sent\":%s", tf(r->client_cert_sent));
    if (r->dtls)
        fprintf(f, ",\"cookie_exchange\":%s,\"cookie_expected\":%s", tf(r->cookie_exchange),
                tf(r->cookie_expected));
    hs_trace_write_json(f, t);
    if (r->app_done)
        hs_app_write_json(f, &r->app);
    fprintf(f, ",\"tickets_after\":%u,\"close_us\":%.3f,\"usable_us\":%.3f,\"t0_ns\":%llu,"
            "\"t1_ns\":%llu", r->tickets, us(r->close_ns), us(r->usable_ns),
            (unsigned long long)r->t0_mono_ns, (unsigned long long)r->t1_mono_ns);
    json_end_line(f);
}

void hs_report_end(FILE *f, uint64_t ok, uint64_t failed)
{
    fprintf(f, "{\"type\":\"end\",\"ok\":%llu,\"failed\":%llu", (unsigned long long)ok,
            (unsigned long long)failed);
    json_end_line(f);
}

void hs_report_listening(FILE *f, unsigned port, const char *proto)
{
    fprintf(f, "{\"type\":\"listening\",\"port\":%u,\"proto\":\"%s\",\"tool\":\"secperf-probe\","
            "\"version\":", port, proto);
    json_str(f, PROBE_VERSION);
    fputs(",\"openssl_version\":", f);
    json_str(f, OpenSSL_version(OPENSSL_VERSION));
    json_end_line(f);
}

void hs_report_server_conn(FILE *f, uint64_t i, const hs_server_conn *r, const hs_trace *t)
{
    fprintf(f, "{\"type\":\"server_conn\",\"i\":%llu,\"ok\":%s", (unsigned long long)i,
            tf(r->ok));
    if (!r->ok) {
        report_failure_end(f, r->stage, r->reason);
        return;
    }
    fprintf(f, ",\"handshake_cpu_us\":%.3f,\"handshake_wall_us\":%.3f,\"version\":",
            us(t->call_cpu_ns), us(r->hs_wall_ns));
    json_str(f, r->version);
    fputs(",\"cipher\":", f);
    json_str(f, r->cipher);
    fprintf(f, ",\"resumed\":%s,\"early_data\":\"%s\",\"early_data_bytes\":%zu,"
            "\"client_cert\":%s", tf(r->resumed), r->early_data, r->early_bytes,
            tf(r->client_cert));
    if (r->dtls)
        fprintf(f, ",\"cookie_exchange\":%s", tf(r->cookie_exchange));
    fprintf(f, ",\"served\":%s,\"request_bytes\":%zu,\"response_bytes\":%zu,\"answered_again\":%u,"
            "\"closed_by\":", tf(r->serve.served), r->serve.request_bytes, r->serve.response_bytes,
            r->serve.answered_again);
    json_str(f, r->serve.closed_by);
    hs_trace_write_json(f, t);
    json_end_line(f);
}

void hs_report_server_end(FILE *f, uint64_t conns, uint64_t ok, uint64_t failed,
                          const char *stopped)
{
    fprintf(f, "{\"type\":\"end\",\"conns\":%llu,\"ok\":%llu,\"failed\":%llu,\"stopped\":\"%s\"",
            (unsigned long long)conns, (unsigned long long)ok, (unsigned long long)failed,
            stopped);
    json_end_line(f);
}
