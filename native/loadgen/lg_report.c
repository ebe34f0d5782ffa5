/* lg_report: the JSON pieces both load generators write the same way. */
#include "lg_report.h"

void lg_json_quantiles(json_obj *o, const char *prefix, lg_samples *s, int flags)
{
    static const struct {
        const char *name;
        double q;
        int flag; /* 0: always */
    } qs[] = {{"p50_ms", 0.5, 0}, {"p90_ms", 0.9, 0}, {"p95_ms", 0.95, LG_Q_P95}, {"p99_ms", 0.99, 0},
              {"max_ms", 1.0, 0}};
    char k[48];
    lg_samples_sort(s);
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        if (qs[i].flag != 0 && (flags & qs[i].flag) == 0)
            continue;
        snprintf(k, sizeof(k), "%s%s", prefix, qs[i].name);
        if (s->n == 0 && (flags & LG_Q_NULL_EMPTY) != 0)
            json_obj_null(o, k);
        else
            json_obj_fixed(o, k, 3, lg_samples_quantile(s, qs[i].q) / 1000.0);
    }
}

void lg_json_hist(json_obj *o, const char *key, lg_samples *s)
{
    json_obj_key(o, key);
    lg_hist_write(o->f, s);
}

void lg_json_reasons(json_obj *o, const char *key, const lg_reasons *r)
{
    json_obj_key(o, key);
    json_obj e;
    json_obj_begin(&e, o->f);
    for (unsigned i = 0; i < r->n; i++)
        json_obj_u64(&e, r->text[i], r->count[i]);
    if (r->other)
        json_obj_u64(&e, "(other reasons)", r->other);
    json_obj_close(&e);
}
