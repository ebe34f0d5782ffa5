/* dual_issue: the pairing rule of a partially dual-issuing in-order core (see dual_issue.h). */
#include "dual_issue.h"
#include "timing.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char *const DP[] = {"and", "eor", "sub", "rsb", "add", "adc", "sbc", "rsc", "tst", "teq", "cmp", "cmn",
                                 "orr", "orn", "mov", "bic", "mvn", "movw", "movt", "lsl", "lsr", "asr", "ror", "rrx",
                                 "uxtb", "uxth", "sxtb", "sxth", NULL};
static const char *const SHIFTS[] = {"lsl", "lsr", "asr", "ror", "rrx", NULL};
static const char *const EXTENDS[] = {"uxtb", "uxth", "sxtb", "sxth", NULL};
static const char *const NODEST[] = {"tst", "teq", "cmp", "cmn", NULL};
static const char *const SINGLE_LOADS[] = {"ldr", "ldrb", "ldrh", "ldrsb", "ldrsh", NULL};
static const char *const SINGLE_STORES[] = {"str", "strb", "strh", NULL};
static const char *const CC[] = {"eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc",
                                 "hi", "ls", "ge", "lt", "gt", "le", "al", NULL};

static int listed(const char *s, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(s, list[i]) == 0)
            return 1;
    return 0;
}

static int found(const char *b, char *base)
{
    if (base)
        snprintf(base, 32, "%s", b);
    return 1;
}

/* the mnemonic's base in `list` with its flag-setting "s" and condition stripped: *sets, *cond say
 * which were there, base (32 bytes, may be NULL) receives it; 0 when no reading of the mnemonic is in
 * the list */
static int split(const char *mn, const char *const *list, int *sets, int *cond, char *base)
{
    char b[32];
    size_t n = strlen(mn);
    *sets = *cond = 0;
    if (n >= sizeof b)
        return 0;
    memcpy(b, mn, n + 1);
    if (listed(b, list))
        return found(b, base);
    if (n > 1 && b[n - 1] == 's') {   /* "adds", and "adcs" before reading its "cs" as a condition */
        b[n - 1] = 0;
        if (listed(b, list)) {
            *sets = 1;
            return found(b, base);
        }
        b[n - 1] = 's';
    }
    if (n > 2 && listed(b + n - 2, CC)) {   /* "addeq", "addseq", "bne" */
        *cond = strcmp(b + n - 2, "al") != 0;
        b[n - 2] = 0;
        if (listed(b, list))
            return found(b, base);
        if (n > 3 && b[n - 3] == 's') {
            b[n - 3] = 0;
            if (listed(b, list)) {
                *sets = 1;
                return found(b, base);
            }
        }
    }
    *cond = 0;
    return 0;
}

/* register number of a whole token ("r0".."r15", sb sl fp ip sp lr pc), -1 if it is none */
static int reg_of(const char *tok, size_t len)
{
    static const char *const alias[] = {"sb", "sl", "fp", "ip", "sp", "lr", "pc"};
    if (len >= 2 && len <= 3 && tok[0] == 'r' && isdigit((unsigned char)tok[1])) {
        int n = tok[1] - '0';
        if (len == 3) {
            if (!isdigit((unsigned char)tok[2]))
                return -1;
            n = n * 10 + (tok[2] - '0');
        }
        return n <= 15 ? n : -1;
    }
    if (len == 2)
        for (int i = 0; i < 7; i++)
            if (tok[0] == alias[i][0] && tok[1] == alias[i][1])
                return 9 + i;
    return -1;
}

/* the registers named in the operand text, as bits; *first: the first one's number (-1: none) */
static uint32_t regs_in(const char *ops, int *first)
{
    uint32_t out = 0;
    *first = -1;
    for (const char *p = ops; *p;) {
        if (!isalnum((unsigned char)*p)) {
            if (*p == '#')   /* an immediate: skip it whole (its hex digits are no register) */
                while (*p && *p != ',' && *p != ']')
                    p++;
            else
                p++;
            continue;
        }
        const char *s = p;
        while (isalnum((unsigned char)*p))
            p++;
        int r = reg_of(s, (size_t)(p - s));
        if (r >= 0) {
            if (*first < 0)
                *first = r;
            out |= 1u << r;
        }
    }
    return out;
}

/* the operand text has a shifted register operand (", lsl #2", ", ror r3") */
static int has_shift(const char *ops)
{
    for (const char *p = strchr(ops, ','); p; p = strchr(p + 1, ',')) {
        const char *q = p + 1;
        while (*q == ' ')
            q++;
        for (int i = 0; SHIFTS[i]; i++)
            if (strncmp(q, SHIFTS[i], 3) == 0 && !isalnum((unsigned char)q[3]))
                return 1;
    }
    return 0;
}

/* the last operand is an immediate ("#4", "#-1", "#0xff") */
static int last_is_imm(const char *ops)
{
    const char *c = strrchr(ops, ',');
    const char *q = c ? c + 1 : ops;
    while (*q == ' ')
        q++;
    return *q == '#';
}

const char *disas_mnemonic(const char *disas, char *mn, size_t cap)
{
    size_t k = 0;
    const char *p = disas;
    while (*p == ' ' || *p == '\t')
        p++;
    while (*p && !isspace((unsigned char)*p) && k < cap - 1)
        mn[k++] = (char)tolower((unsigned char)*p++);
    mn[k] = 0;
    return p;
}

unsigned dual_issue_facts(const char *disas, int cls, int branch, uint32_t *reads, uint32_t *writes)
{
    *reads = *writes = 0;
    char mn[32];
    const char *p = disas_mnemonic(disas, mn, sizeof mn);
    char *dot = strchr(mn, '.');   /* Thumb-2 width: "add.w" */
    if (dot)
        *dot = 0;
    const char *ops = p;
    int sets = 0, cond = 0, first = -1;
    uint32_t named = regs_in(ops, &first);

    if (cls == TC_BRANCH) {
        int call;
        if (split(mn, (const char *const[]){"b", NULL}, &sets, &cond, NULL))
            call = 0;
        else if (split(mn, (const char *const[]){"bl", "blx", NULL}, &sets, &cond, NULL) && named == 0)
            call = 1;   /* a direct call (an immediate target) */
        else
            return 0;   /* indirect branches, compare-and-branch, table branches issue alone */
        *reads = cond ? DI_FLAGS : 0;
        *writes = call ? 1u << 14 : 0;
        /* a call only as the younger (GCC: "cortex_a7_call" takes the second slot or both) */
        return DI_BRANCH | DI_YOUNGER | (call ? 0 : DI_OLDER);
    }
    if (branch)
        return 0;   /* loads and data processing into the pc */
    if (cls == TC_LOAD || cls == TC_STORE) {
        int load = cls == TC_LOAD;
        if (!split(mn, load ? SINGLE_LOADS : SINGLE_STORES, &sets, &cond, NULL) || sets)
            return 0;   /* exclusives, unprivileged and acquire/release forms issue alone */
        const char *br = strchr(ops, '[');
        int base = -1;
        uint32_t addr = br ? regs_in(br, &base) : 0;
        uint32_t data = first >= 0 ? 1u << first : 0;
        *reads = addr | (load ? 0 : data) | (cond ? DI_FLAGS : 0);
        *writes = load ? data : 0;
        const char *close = br ? strchr(br, ']') : NULL;
        if (base >= 0 && close && (close[1] == '!' || close[1] == ','))   /* pre-indexed "!" or post-indexed */
            *writes |= 1u << base;
        return DI_OLDER;
    }
    char b[32];   /* the base, for the operand rules */
    if (cls != TC_ALU || !split(mn, DP, &sets, &cond, b))
        return 0;
    int nodest = listed(b, NODEST);
    uint32_t dest = (!nodest && first >= 0) ? 1u << first : 0;
    *writes = dest | (sets || nodest ? DI_FLAGS : 0);
    *reads = (named & ~dest) | (cond || strcmp(b, "adc") == 0 || strcmp(b, "sbc") == 0 || strcmp(b, "rsc") == 0 ||
                                        strcmp(b, "rrx") == 0
                                    ? DI_FLAGS
                                    : 0);
    if (strcmp(b, "movt") == 0)   /* keeps the low half of its destination */
        *reads |= dest;
    const char *after = strchr(ops, ',');   /* "add r0, r0, #1": the destination is read too */
    int again = -1;
    if (dest && after && (regs_in(after + 1, &again) & dest))
        *reads |= dest;
    unsigned role = DI_OLDER;
    if (dest & (1u << 15))
        return 0;
    int younger = !listed(b, SHIFTS) && !has_shift(ops) &&
                  (strcmp(b, "movw") == 0 || strcmp(b, "movt") == 0 || listed(b, EXTENDS) || strcmp(b, "mov") == 0 ||
                   last_is_imm(ops));
    if (younger)
        role |= DI_YOUNGER;
    return role;
}

int dual_issue_pairs(unsigned older_role, uint32_t older_writes, unsigned younger_role, uint32_t younger_reads,
                     uint32_t younger_writes)
{
    if (!(older_role & DI_OLDER) || !(younger_role & DI_YOUNGER))
        return 0;
    if ((older_role & DI_BRANCH) && (younger_role & DI_BRANCH))
        return 0;
    return ((younger_reads | younger_writes) & older_writes) == 0;
}
