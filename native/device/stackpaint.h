/* stackpaint: worst-case stack of a region, measured by painting. sp_stack_paint() fills a large
 * frame (which lies below the caller's stack pointer, where the region's frames will go) with a
 * pattern; sp_stack_used(), called afterwards from the same function, finds the deepest word the
 * region overwrote. Both run outside the counted markers. Resolution: one word; a region deeper
 * than the painted 256 KiB reports 256 KiB. Includes the few bytes of any marker call inside. */
#ifndef SP_STACKPAINT_H
#define SP_STACKPAINT_H
#include <stddef.h>

void sp_stack_paint(void);
size_t sp_stack_used(void);
/* the deepest region of this process's crypto operations (crypto mode), bytes */
extern size_t sp_op_stack_max;
/* around a counted operation, in the function that runs it: paint before OP_BEGIN, note after OP_END */
#define SP_OP_STACK_BEGIN() sp_stack_paint()
#define SP_OP_STACK_END()                               \
    do {                                                \
        size_t sp_used_ = sp_stack_used();              \
        if (sp_used_ > sp_op_stack_max)                 \
            sp_op_stack_max = sp_used_;                 \
    } while (0)

#endif
