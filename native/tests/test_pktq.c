/* The relay's packet queue (netem/pktq.c): a min-heap on release time over a fixed pool. */
#include "harness.h"
#include "pktq.h"

static void queue_releases_in_due_time_order(void)
{
    sched s;
    CHECK(sched_init(&s, 64, 16) == 0);
    static const int64_t due[] = {50, 10, 40, 30, 20, 60, 5, 45};
    for (size_t i = 0; i < sizeof due / sizeof due[0]; i++) {
        pkt *p = sched_alloc(&s);
        CHECK(p != NULL);
        p->release = due[i];
        sched_push(&s, p);
    }
    int64_t last = -1;
    for (size_t i = 0; i < sizeof due / sizeof due[0]; i++) {
        CHECK(sched_top(&s)->release >= last);
        pkt *p = sched_pop(&s);
        CHECK(p->release >= last);
        last = p->release;
        sched_free(&s, p);
    }
    CHECK(sched_pop(&s) == NULL && sched_top(&s) == NULL);
    sched_destroy(&s);
}

static void equal_release_times_keep_arrival_order(void)
{
    sched s;
    CHECK(sched_init(&s, 32, 16) == 0);
    for (int i = 0; i < 20; i++) {
        pkt *p = sched_alloc(&s);
        p->release = 100;
        p->len = i;
        sched_push(&s, p);
    }
    for (int i = 0; i < 20; i++) {
        pkt *p = sched_pop(&s);
        CHECK(p->len == i);
        sched_free(&s, p);
    }
    sched_destroy(&s);
}

static void pool_exhaustion_returns_null_and_freed_buffers_come_back(void)
{
    sched s;
    CHECK(sched_init(&s, 4, 16) == 0);
    pkt *p[4];
    for (int i = 0; i < 4; i++)
        CHECK((p[i] = sched_alloc(&s)) != NULL);
    CHECK(sched_alloc(&s) == NULL);
    sched_free(&s, p[2]);
    CHECK(sched_alloc(&s) == p[2]);
    sched_destroy(&s);
}

static void buffers_do_not_overlap(void)
{
    sched s;
    CHECK(sched_init(&s, 8, 100) == 0);
    pkt *a = sched_alloc(&s), *b = sched_alloc(&s);
    memset(a->data, 0xaa, 100);
    memset(b->data, 0xbb, 100);
    CHECK(a->data[99] == 0xaa && b->data[0] == 0xbb);
    sched_destroy(&s);
}

const test_case pktq_tests[] = {
    {"packet queue releases in due-time order", queue_releases_in_due_time_order},
    {"packet queue keeps arrival order for equal release times", equal_release_times_keep_arrival_order},
    {"packet pool runs dry with NULL and reuses freed buffers",
     pool_exhaustion_returns_null_and_freed_buffers_come_back},
    {"packet buffers do not overlap", buffers_do_not_overlap},
    {NULL, NULL},
};
