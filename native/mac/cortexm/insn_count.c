/* insn_count: a QEMU TCG plugin counting executed guest instructions exactly (an inline add
 * before every instruction) and writing the running count each time the instruction at `mark`
 * executes. Arguments: mark=<hex address of secperf_mark>, out=<file>. One vCPU (Cortex-M).
 *
 *   qemu-system-arm ... -plugin libinsn_count.so,mark=0x1a4,out=counts.txt
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

#define MAX_MARKS 4096

static uint64_t count;
static uint64_t mark_addr = UINT64_MAX;
static uint64_t marks[MAX_MARKS];
static size_t n_marks;
static int overflow;
static char out_path[4096];

static void on_mark(unsigned int vcpu, void *udata)
{
    (void)vcpu;
    (void)udata;
    if (n_marks < MAX_MARKS)
        marks[n_marks++] = count;
    else
        overflow = 1;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &count, 1);
        if (qemu_plugin_insn_vaddr(insn) == mark_addr)
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
    }
}

static void on_plugin_exit(qemu_plugin_id_t id, void *udata)
{
    (void)id;
    (void)udata;
    FILE *f = fopen(out_path, "w");
    if (f == NULL)
        return;
    fprintf(f, "# insn_count v1 mark=0x%llx total=%llu marks=%zu%s\n", (unsigned long long)mark_addr,
            (unsigned long long)count, n_marks, overflow ? " overflow" : "");
    for (size_t i = 0; i < n_marks; i++)
        fprintf(f, "%llu\n", (unsigned long long)marks[i]);
    fclose(f);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "mark=", 5) == 0)
            mark_addr = strtoull(argv[i] + 5, NULL, 0);
        else if (strncmp(argv[i], "out=", 4) == 0)
            snprintf(out_path, sizeof(out_path), "%s", argv[i] + 4);
        else {
            fprintf(stderr, "insn_count: unknown argument %s (known: mark=ADDR, out=FILE)\n", argv[i]);
            return -1;
        }
    }
    if (mark_addr == UINT64_MAX || out_path[0] == '\0') {
        fprintf(stderr, "insn_count: needs mark=ADDR and out=FILE\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_plugin_exit, NULL);
    return 0;
}
