/* err: filling a probe_err, including the text of OpenSSL's error queue. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>

static void set_msg(probe_err *err, int code, const char *fmt, va_list ap)
{
    err->code = code;
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

int err_input(probe_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_msg(err, PROBE_BAD_INPUT, fmt, ap);
    va_end(ap);
    return 0;
}

int err_as_input(probe_err *err)
{
    err->code = PROBE_BAD_INPUT;
    return 0;
}

int err_fail(probe_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_msg(err, PROBE_FAILED, fmt, ap);
    va_end(ap);
    ERR_clear_error();
    return 0;
}

int err_ossl(probe_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_msg(err, PROBE_FAILED, fmt, ap);
    va_end(ap);

    /* The earliest queued error is usually the root cause; keep up to three of them. */
    unsigned long e;
    int shown = 0;
    while ((e = ERR_get_error()) != 0) {
        if (shown++ >= 3)
            continue;
        char one[256];
        ERR_error_string_n(e, one, sizeof(one));
        size_t used = strlen(err->msg);
        snprintf(err->msg + used, sizeof(err->msg) - used, "%s%s", shown == 1 ? ": " : "; ", one);
    }
    if (shown == 0) {
        size_t used = strlen(err->msg);
        snprintf(err->msg + used, sizeof(err->msg) - used, ": (no OpenSSL error queued)");
    }
    return 0;
}
