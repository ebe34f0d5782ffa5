/* err: how inner functions hand a failure back to main (code + one-line message), never printing it. */
#ifndef SECPERF_PROBE_ERR_H
#define SECPERF_PROBE_ERR_H

enum probe_exit {
    PROBE_OK = 0,
    PROBE_FAILED = 1,    /* the measurement failed: OpenSSL error, I/O error, bad signature */
    PROBE_BAD_INPUT = 2  /* the command line asked for something that does not exist */
};

typedef struct probe_err {
    int code;       /* enum probe_exit */
    char msg[1024]; /* one line, no trailing newline */
} probe_err;

/* Each setter fills err and returns 0, so callers can write `return err_input(err, ...)`. */
int err_input(probe_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int err_fail(probe_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Marks a message already written into err->msg (by a common/ parser) as bad input; returns 0. */
int err_as_input(probe_err *err);
/* Like err_fail, then appends the queued OpenSSL errors (ERR_error_string_n) and clears the queue. */
int err_ossl(probe_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
