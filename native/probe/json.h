/* json: the small pieces needed to write JSON lines to stdout (escaped strings, line ends). */
#ifndef SECPERF_PROBE_JSON_H
#define SECPERF_PROBE_JSON_H

#include <stddef.h>
#include <stdio.h>

/* Writes s as a quoted, escaped JSON string, or null when s is NULL. */
void json_str(FILE *f, const char *s);
/* Writes the bytes as a quoted lower-case hex string. */
void json_hex(FILE *f, const unsigned char *p, size_t n);
/* Closes the object and flushes: the Python driver reads lines as they come. */
void json_end_line(FILE *f);
/* {"type":"error","reason":...} */
void json_error_line(FILE *f, const char *reason);

#endif
