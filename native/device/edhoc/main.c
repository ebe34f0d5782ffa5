/* The guest program around the EDHOC library (src/lib.rs): n handshakes, each between the markers
 * the counting plugin records (marker.h: HS_BEGIN/HS_END around a handshake, OP_BEGIN/OP_END around
 * each initiator message), one JSON line per handshake with the message sizes. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "marker.h"   /* native/device/marker.h (-I native/device) */

int sp_edhoc_handshake(unsigned seed);

void sp_mark(unsigned kind, unsigned arg) { syscall(SP_MARK_NR, kind, arg); }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 3;
    for (int i = 0; i < n; i++) {
        sp_mark(SP_MARK_HS_BEGIN, (unsigned)i);
        int r = sp_edhoc_handshake((unsigned)i + 1u);
        sp_mark(SP_MARK_HS_END, r > 0);
        printf("{\"i\": %d, \"ok\": %s, \"code\": %d, \"message_1\": %d, \"message_2\": %d, \"message_3\": %d}\n",
               i, r > 0 ? "true" : "false", r > 0 ? 0 : r, r > 0 ? (r >> 16) & 0xff : 0,
               r > 0 ? (r >> 8) & 0xff : 0, r > 0 ? r & 0xff : 0);
    }
    return 0;
}
