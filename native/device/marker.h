/* marker: the guest's event markers. A marker is a system call with an unused number
 * (SP_MARK_NR): on the emulated core the counting plugin records the instruction count with the
 * two arguments, then the call returns ENOSYS and costs the guest a handful of instructions.
 * On the host (no plugin) the same call returns ENOSYS from the kernel; the host build records
 * thread CPU time at the same points instead (see client.c). */
#ifndef SP_MARKER_H
#define SP_MARKER_H

#define SP_MARK_NR 1516 /* unused on ARM EABI (and x86-64): the kernel returns ENOSYS */

enum sp_mark_kind {
    SP_MARK_HS_BEGIN = 1,   /* arg: handshake index in this process */
    SP_MARK_HS_END = 2,     /* arg: 1 ok, 0 failed */
    SP_MARK_RECV_BEGIN = 3, /* the library asks for the first byte of the next record */
    SP_MARK_RECV_INFO = 4,  /* that record: content type << 24 | handshake type << 16 | length (data only) */
    SP_MARK_SEND = 5,       /* the library hands records to the network: type << 24 | hs type << 16 | records */
    SP_MARK_STEP = 6,       /* a handshake state-machine step begins (Mbed TLS): arg = state */
    SP_MARK_APP_BEGIN = 7,  /* application data exchange after the handshake */
    SP_MARK_APP_END = 8,
    SP_MARK_OP_BEGIN = 9,   /* a primitive operation: arg = operation id (crypto mode) */
    SP_MARK_OP_END = 10,
};

#define SP_HS_TYPE_UNKNOWN 0xff
/* a ServerHello carrying the HelloRetryRequest random (DTLS; TLS 1.3 reserves type 6 for it) */
#define SP_HS_HRR 6

void sp_mark(unsigned kind, unsigned arg);

#endif
