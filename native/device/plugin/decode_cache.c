/* decode_cache: the disassembly facts of a guest binary's instructions, kept across runs (see
 * decode_cache.h). */
#include "decode_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* which plugin build wrote the file: the build passes a digest of the plugin's sources; without it,
 * the compile time (every build then starts a new cache) */
#ifndef SECPERF_DECODE_STAMP
#define SECPERF_DECODE_STAMP __DATE__ " " __TIME__
#endif

#define MAGIC "secperf-decode-cache 1"

struct record {
    uint64_t vaddr;
    uint8_t size;
    uint8_t bytes[7];
    struct decoded d;
};

static struct record *table;   /* open addressing on vaddr; size 0 = empty slot */
static size_t cap, used;
static int dirty;
static char *file;

/* a 128-byte stretch of code hashes to a run of 64 slots, its halfwords in order: the instructions of
 * a block, looked up one after the other, sit side by side in the table (a few host cache lines, not
 * one each) */
static size_t slot_of(uint64_t vaddr)
{
    return (size_t)((((vaddr >> 7) * 0x9E3779B97F4A7C15ull) >> 20) * 64 + ((vaddr >> 1) & 63)) & (cap - 1);
}

static int grow(void)
{
    size_t ncap = cap ? cap * 2 : 16384;
    struct record *nt = calloc(ncap, sizeof *nt), *old = table;
    if (nt == NULL)
        return -1;
    size_t ocap = cap;
    table = nt;
    cap = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].size) {
            size_t s = slot_of(old[i].vaddr);
            while (table[s].size)
                s = (s + 1) & (cap - 1);
            table[s] = old[i];
        }
    free(old);
    return 0;
}

static void put(const struct record *r)
{
    if ((used + 1) * 2 > cap && grow() != 0)
        return;
    size_t s = slot_of(r->vaddr);
    while (table[s].size && table[s].vaddr != r->vaddr)
        s = (s + 1) & (cap - 1);
    if (!table[s].size)
        used++;
    table[s] = *r;   /* an address seen again with other bytes: the newer facts replace the older */
}

static void header(char *buf, size_t n)
{
    snprintf(buf, n, "%s %s record=%zu\n", MAGIC, SECPERF_DECODE_STAMP, sizeof(struct record));
}

void decode_cache_open(const char *path)
{
    free(file);
    file = strdup(path);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return;
    char want[160], got[160];
    header(want, sizeof want);
    if (fgets(got, sizeof got, f) != NULL && strcmp(got, want) == 0) {
        struct record r;
        while (fread(&r, sizeof r, 1, f) == 1)
            if (r.size > 0 && r.size <= sizeof r.bytes)
                put(&r);
    }
    fclose(f);
}

const struct decoded *decode_cache_find(uint64_t vaddr, const void *bytes, size_t size)
{
    if (cap == 0 || size == 0 || size > sizeof table[0].bytes)
        return NULL;
    for (size_t s = slot_of(vaddr); table[s].size; s = (s + 1) & (cap - 1))
        if (table[s].vaddr == vaddr)
            return table[s].size == size && memcmp(table[s].bytes, bytes, size) == 0 ? &table[s].d : NULL;
    return NULL;
}

void decode_cache_add(uint64_t vaddr, const void *bytes, size_t size, const struct decoded *d)
{
    if (file == NULL || size == 0 || size > sizeof table[0].bytes)
        return;
    struct record r;
    memset(&r, 0, sizeof r);
    r.vaddr = vaddr;
    r.size = (uint8_t)size;
    memcpy(r.bytes, bytes, size);
    r.d = *d;
    put(&r);
    dirty = 1;
}

void decode_cache_save(void)
{
    if (file != NULL && dirty && table != NULL) {
        char tmp[4200], head[160];
        snprintf(tmp, sizeof tmp, "%s.%ld.tmp", file, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        if (f != NULL) {
            header(head, sizeof head);
            int ok = fputs(head, f) >= 0;
            for (size_t i = 0; i < cap && ok; i++)
                if (table[i].size)
                    ok = fwrite(&table[i], sizeof table[i], 1, f) == 1;
            ok = fclose(f) == 0 && ok;
            if (!ok || rename(tmp, file) != 0)
                remove(tmp);
        }
    }
    free(table);
    table = NULL;
    cap = used = 0;
    dirty = 0;
    free(file);
    file = NULL;
}
