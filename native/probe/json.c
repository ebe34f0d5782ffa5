/* json: the small pieces needed to write JSON lines to stdout (escaped strings, line ends). */
#include "json.h"

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
