/* harness: runs a user's own function on the emulated core (`secperf device crypto --source`).
 *
 * secperf compiles the user's files with the core's flags and links them with this file, marker.c,
 * stackpaint.c and a one-line stub naming the entry function (sp_user_entry). What the user
 * described in the harness TOML arrives as a plan file (--plan) and the bytes of the input buffers
 * (--data), both written by secperf (measure/device_user.py):
 *
 *   calls N        counted calls after the warm-up (the first call of all is the cold one)
 *   warmup W       calls between the cold one and the counted ones
 *   empty E        calls of an empty function (one `bx lr`) first: the harness's own instructions
 *   arg in B       a buffer of B bytes, filled from the next B bytes of the data file
 *   arg inout B    the same; its contents after the last call are shown like an output's
 *   arg out B      a buffer of B bytes, zeroed
 *   arg int V      a 32-bit word
 *   arg val B      an argument passed by value (a 64-bit integer, a float, a double, a struct): its B
 *                  bytes (at most 128) from the data file, as they lie in memory
 *
 * Each call is one OP_BEGIN..OP_END pair (marker arg 0: the empty function, 1: the entry). Before
 * every call, outside the markers, input buffers are restored from their copies (a function that
 * works in place sees the same input each time), output buffers zeroed and the stack painted.
 * Each argument's bytes lie in its cell (sp_user_cells; a buffer's cell holds its address). The call
 * site is not here: secperf generates it (sp_user_call in the stub, measure/device_user.py call_stub)
 * from the argument types, and the compiler, given the core's flags, places each argument where the
 * core's ABI says (AAPCS core registers and stack; VFP registers under the hard-float variant); up to
 * 12 arguments. One JSON line per call on stdout as it returns ("ret": r0, "ret_hi": r1 for a 64-bit
 * return), and a summary line. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "marker.h"
#include "stackpaint.h"

#define MAX_ARGS 12
#define CELL_WORDS 16   /* 8-byte words of a cell: the largest argument passed by value */
#define MAX_CALLS 100000
#define SHOW_BYTES 64

extern void *const sp_user_entry;   /* the stub: the entry function's address */
/* the stub: the call site, the markers around the call of fn with the arguments from the cells */
uint64_t sp_user_call(void *fn, unsigned id);
/* each argument's bytes (8-byte aligned, as a double or a 64-bit integer needs) */
uint64_t sp_user_cells[MAX_ARGS][CELL_WORDS];

/* the harness's empty function: one return instruction */
__attribute__((naked, noinline)) static void sp_user_empty(void) { __asm__ volatile("bx lr"); }

enum kind { ARG_IN, ARG_OUT, ARG_INOUT, ARG_INT, ARG_VAL };
struct arg {
    enum kind kind;
    uint32_t len;       /* bytes (buffers) */
    uint32_t value;     /* the word (int) */
    uint8_t *buf, *orig;
};

static struct arg args[MAX_ARGS];
static int n_args;

static void fail(const char *what, const char *detail)
{
    /* the detail up to a line end or a quote: the line stays one JSON object */
    const char *d = detail ? detail : "";
    printf("{\"user\":\"harness\",\"ok\":0,\"error\":\"%s%.*s\"}\n", what, (int)strcspn(d, "\n\"\\"), d);
    fflush(stdout);
    exit(3);
}

/* before every call: input buffers restored, outputs zeroed (the cells themselves never change) */
static void prepare(void)
{
    for (int i = 0; i < n_args; i++) {
        struct arg *a = &args[i];
        if (a->kind == ARG_IN || a->kind == ARG_INOUT)
            memcpy(a->buf, a->orig, a->len);
        else if (a->kind == ARG_OUT)
            memset(a->buf, 0, a->len);
    }
}

/* both functions are called through the stub's one call site, so the harness's instructions are the
 * same for either */
static size_t one_call(void *fn, unsigned id, uint64_t *ret)
{
    prepare();
    SP_OP_STACK_BEGIN();
    *ret = sp_user_call(fn, id);
    size_t used = sp_stack_used();
    return used;
}

static void print_hex(const uint8_t *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        printf("%02x", (unsigned)p[i]);
}

/* "KEY N" on a plan line (the plan is secperf's own file): 1 with *v, 0 when the line is not KEY. A
 * number that is not whole and in range ends the run naming it. */
static int plan_number_at(const char *text, unsigned long *v)
{
    char *end = NULL;
    errno = 0;
    unsigned long n = strtoul(text, &end, 10);
    if (end == text || errno != 0 || (*end != '\0' && *end != '\n') || text[0] == '-')
        fail("a malformed number in the plan: ", text);
    *v = n;
    return 1;
}

static int plan_number(const char *line, const char *key, unsigned long *v)
{
    size_t k = strlen(key);
    if (strncmp(line, key, k) != 0 || line[k] != ' ')
        return 0;
    return plan_number_at(line + k + 1, v);
}

/* "arg KIND N": the kind into word (at most len - 1 characters) and N. */
static int plan_arg(const char *line, char *word, size_t len, unsigned long *v)
{
    if (strncmp(line, "arg ", 4) != 0)
        return 0;
    const char *kind = line + 4;
    const char *sp = strchr(kind, ' ');
    if (sp == NULL || sp == kind || (size_t)(sp - kind) >= len)
        fail("a malformed argument line in the plan: ", line);
    memcpy(word, kind, (size_t)(sp - kind));
    word[sp - kind] = '\0';
    return plan_number_at(sp + 1, v);
}

int main(int argc, char **argv)
{
    const char *plan = NULL, *data = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--plan") == 0)
            plan = argv[i + 1];
        else if (strcmp(argv[i], "--data") == 0)
            data = argv[i + 1];
    }
    if (plan == NULL)
        fail("usage: harness --plan FILE [--data FILE]", NULL);
    FILE *pf = fopen(plan, "r");
    if (pf == NULL)
        fail("cannot open the plan file ", plan);
    FILE *df = data ? fopen(data, "rb") : NULL;
    if (data != NULL && df == NULL)
        fail("cannot open the data file ", data);
    unsigned long calls = 1, warmup = 0, empty = 2;
    char line[256], word[16];
    while (fgets(line, sizeof line, pf) != NULL) {
        unsigned long v;
        if (plan_number(line, "calls", &v))
            calls = v;
        else if (plan_number(line, "warmup", &v))
            warmup = v;
        else if (plan_number(line, "empty", &v))
            empty = v;
        else if (plan_arg(line, word, sizeof word, &v)) {
            if (n_args == MAX_ARGS)
                fail("more than 12 arguments", NULL);
            int i = n_args++;
            struct arg *a = &args[i];
            if (strcmp(word, "int") == 0) {
                a->kind = ARG_INT;
                a->value = (uint32_t)v;
                memcpy(sp_user_cells[i], &a->value, sizeof a->value);
                continue;
            }
            if (strcmp(word, "val") == 0) {
                a->kind = ARG_VAL;
                if (v == 0 || v > sizeof sp_user_cells[i])
                    fail("a value argument of more than 128 bytes", NULL);
                if (df == NULL || fread(sp_user_cells[i], 1, v, df) != v)
                    fail("the data file is shorter than the arguments", NULL);
                continue;
            }
            if (strcmp(word, "in") == 0)
                a->kind = ARG_IN;
            else if (strcmp(word, "inout") == 0)
                a->kind = ARG_INOUT;
            else if (strcmp(word, "out") == 0)
                a->kind = ARG_OUT;
            else
                fail("unknown argument kind ", word);
            a->len = (uint32_t)v;
            a->buf = malloc(v ? v : 1);
            a->orig = malloc(v ? v : 1);
            if (a->buf == NULL || a->orig == NULL)
                fail("out of memory for a buffer", NULL);
            memset(a->orig, 0, v ? v : 1);
            if (a->kind != ARG_OUT && (df == NULL || fread(a->orig, 1, v, df) != v))
                fail("the data file is shorter than the input buffers", NULL);
            memcpy(sp_user_cells[i], &a->buf, sizeof a->buf);
        }
    }
    fclose(pf);
    if (df != NULL)
        fclose(df);
    if (calls < 1 || calls + warmup + 1 > MAX_CALLS)
        fail("calls out of range", NULL);

    uint64_t ret = 0;
    size_t empty_stack = 0;
    for (unsigned long i = 0; i < empty; i++) {   /* the harness's own cost: an empty function */
        size_t used = one_call((void *)(uintptr_t)sp_user_empty, 0, &ret);
        if (used > empty_stack)
            empty_stack = used;
    }
    printf("{\"empty\":%lu,\"stack_bytes\":%lu}\n", empty, (unsigned long)empty_stack);
    fflush(stdout);
    void *fn = sp_user_entry;
    unsigned long total = 1 + warmup + calls;
    size_t stack_max = 0;
    for (unsigned long i = 0; i < total; i++) {
        size_t used = one_call(fn, 1, &ret);
        if (used > stack_max)
            stack_max = used;
        printf("{\"call\":%lu,\"ret\":%lu,\"ret_hi\":%lu,\"stack_bytes\":%lu}\n", i, (unsigned long)(uint32_t)ret,
               (unsigned long)(uint32_t)(ret >> 32), (unsigned long)used);
        fflush(stdout);   /* a fault in the next call leaves this line behind */
    }
    /* what the last call left: its return value and the first bytes of each output buffer */
    printf("{\"user\":\"done\",\"ok\":1,\"calls\":%lu,\"ret\":%lu,\"ret_hi\":%lu,\"stack_bytes\":%lu,\"outputs\":[",
           total, (unsigned long)(uint32_t)ret, (unsigned long)(uint32_t)(ret >> 32), (unsigned long)stack_max);
    int first = 1;
    for (int i = 0; i < n_args; i++) {
        if (args[i].kind != ARG_OUT && args[i].kind != ARG_INOUT)
            continue;
        printf("%s{\"arg\":%d,\"bytes\":%lu,\"hex\":\"", first ? "" : ",", i, (unsigned long)args[i].len);
        print_hex(args[i].buf, args[i].len < SHOW_BYTES ? args[i].len : SHOW_BYTES);
        printf("\"}");
        first = 0;
    }
    printf("]}\n");
    fflush(stdout);
    return 0;
}
