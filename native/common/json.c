/* json: escaping and the field-by-field object writer. */
#include "json.h"

#include <inttypes.h>

void json_str(FILE *f, const char *s)
{
    if (s == NULL) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':  fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

void json_hex(FILE *f, const unsigned char *p, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", p[i]);
    fputc('"', f);
}

void json_end_line(FILE *f)
{
    fputs("}\n", f);
    fflush(f);
}

void json_error_line(FILE *f, const char *reason)
{
    fputs("{\"type\":\"error\",\"reason\":", f);
    json_str(f, reason);
    json_end_line(f);
}

void json_obj_begin(json_obj *o, FILE *f)
{
    o->f = f;
    o->fields = 0;
    fputc('{', f);
}

void json_obj_key(json_obj *o, const char *key)
{
    if (o->fields++)
        fputc(',', o->f);
    json_str(o->f, key);
    fputc(':', o->f);
}

void json_obj_str(json_obj *o, const char *key, const char *val)
{
    json_obj_key(o, key);
    json_str(o->f, val);
}

void json_obj_i64(json_obj *o, const char *key, int64_t v)
{
    json_obj_key(o, key);
    fprintf(o->f, "%" PRId64, v);
}

void json_obj_u64(json_obj *o, const char *key, uint64_t v)
{
    json_obj_key(o, key);
    fprintf(o->f, "%" PRIu64, v);
}

void json_obj_fixed(json_obj *o, const char *key, int decimals, double v)
{
    json_obj_key(o, key);
    fprintf(o->f, "%.*f", decimals, v);
}

void json_obj_bool(json_obj *o, const char *key, int v)
{
    json_obj_key(o, key);
    fputs(v ? "true" : "false", o->f);
}

void json_obj_null(json_obj *o, const char *key)
{
    json_obj_key(o, key);
    fputs("null", o->f);
}

void json_obj_close(json_obj *o)
{
    fputc('}', o->f);
}
