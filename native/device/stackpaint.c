/* stackpaint: see stackpaint.h */
#include "stackpaint.h"

#include <stdint.h>

#define SP_PAINT_WORDS (256u * 1024u / 4u)
#define SP_PAINT 0xa5c35a3cu

size_t sp_op_stack_max;

__attribute__((noinline)) void sp_stack_paint(void)
{
    volatile uint32_t frame[SP_PAINT_WORDS] __attribute__((unused));
    for (size_t i = 0; i < SP_PAINT_WORDS; i++)
        frame[i] = SP_PAINT;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((noinline)) size_t sp_stack_used(void)
{
    volatile uint32_t frame[SP_PAINT_WORDS];   /* same place as sp_stack_paint's: read, never written */
    size_t i = 0;
    /* reading the previous frame's paint is the measurement */
    while (i < SP_PAINT_WORDS && frame[i] == SP_PAINT) /* NOLINT(clang-analyzer-core.UndefinedBinaryOperatorResult) */
        i++;
    return (SP_PAINT_WORDS - i) * 4u;
}
#pragma GCC diagnostic pop
