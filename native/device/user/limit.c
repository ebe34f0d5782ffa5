/* limit: a QEMU TCG plugin that stops a guest once it has executed more than `limit=N` instructions
 * (the user's own code, `secperf device crypto --source`: an endless loop stops at a count, not only
 * at the time limit). Loaded next to the counting plugin (insn_events). Each translated block adds
 * its instruction count inline and checks the running total when it starts; past the limit the
 * plugin says so on stderr ("secperf-limit: ...") and ends the emulator with exit status 125, so the
 * limit is exact to one block. One vCPU (single-threaded guests).
 *
 *   qemu-arm -plugin libuser_limit.so,limit=2000000000 ./sp-user ...
 *
 * Built against QEMU's qemu-plugin.h when given it, else the declarations shared with
 * native/mac/cortexm, as insn_events is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef SECPERF_QEMU_PLUGIN_HEADER
#include <qemu-plugin.h>
#else
#include "qemu_plugin_api.h"
#endif

QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

static unsigned long long count, limit;

static void check(unsigned int vcpu, void *udata)
{
    (void)vcpu, (void)udata;
    if (count > limit) {
        fprintf(stderr, "secperf-limit: the guest passed its instruction limit of %llu instructions "
                        "(%llu executed); the emulator was stopped\n", limit, count);
        fflush(stderr);
        _exit(125);
    }
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_cb(tb, check, QEMU_PLUGIN_CB_NO_REGS, NULL);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &count, qemu_plugin_tb_n_insns(tb));
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "limit=", 6) == 0) {
            char *end;
            limit = strtoull(argv[i] + 6, &end, 10);
            if (*end != '\0' || limit == 0) {
                fprintf(stderr, "secperf-limit: bad limit %s\n", argv[i] + 6);
                return -1;
            }
        } else {
            fprintf(stderr, "secperf-limit: unknown argument %s (limit=N)\n", argv[i]);
            return -1;
        }
    }
    if (limit == 0) {
        fprintf(stderr, "secperf-limit: give limit=N\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    return 0;
}
