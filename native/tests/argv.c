/* argv: copies of the literals, so getopt's permutation (if any) never touches read-only data. */
#include "argv.h"

#include <string.h>

void test_argv_set(test_argv *a, const char *const *args)
{
    size_t used = 0;
    a->argc = 0;
    for (int i = 0; args[i] && a->argc < ARGV_MAX; i++) {
        size_t n = strlen(args[i]) + 1;
        if (used + n > sizeof a->buf)
            break;
        memcpy(a->buf + used, args[i], n);
        a->argv[a->argc++] = a->buf + used;
        used += n;
    }
    a->argv[a->argc] = NULL;
}
