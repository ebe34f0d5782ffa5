/* json: the one JSON writer of the native tools. JSON lines on a FILE: escaped strings and hex,
 * line ends that flush (Python drivers read lines as they come), and json_obj for a flat object
 * written field by field. The shim writes into a memory FILE (fmemopen) to log with one write(). */
#ifndef SECPERF_COMMON_JSON_H
#define SECPERF_COMMON_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes s as a quoted, escaped JSON string, or null when s is NULL. */
void json_str(FILE *f, const char *s);
/* Writes the bytes as a quoted lower-case hex string. */
void json_hex(FILE *f, const unsigned char *p, size_t n);
/* Closes the object and flushes: the Python driver reads lines as they come. */
void json_end_line(FILE *f);
/* {"type":"error","reason":...} */
void json_error_line(FILE *f, const char *reason);

/* A flat object written field by field; the writer adds the separators. */
typedef struct json_obj {
    FILE *f;
    int fields;
} json_obj;

void json_obj_begin(json_obj *o, FILE *f);
/* "key": followed by whatever the caller writes next (a nested value). */
void json_obj_key(json_obj *o, const char *key);
void json_obj_str(json_obj *o, const char *key, const char *val); /* null when val is NULL */
void json_obj_i64(json_obj *o, const char *key, int64_t v);
void json_obj_u64(json_obj *o, const char *key, uint64_t v);
/* A number with a fixed count of decimals (printf "%.*f"). */
void json_obj_fixed(json_obj *o, const char *key, int decimals, double v);
void json_obj_bool(json_obj *o, const char *key, int v);
void json_obj_null(json_obj *o, const char *key);
/* "}" only (a nested object); json_end_line ends a line. */
void json_obj_close(json_obj *o);

#endif
