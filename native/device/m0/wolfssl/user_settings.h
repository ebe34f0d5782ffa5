/* wolfSSL configuration of the Cortex-M0+ build (ARMv6-M, newlib): the embedded configuration of
 * the M builds (mcu/wolfssl/user_settings.h) with the public-key maths in wolfSSL's Thumb-1
 * assembly (sp_armthumb.c) instead of the Thumb-2 one, and the library's socket I/O left out (the
 * client hands it records through its own callbacks; newlib has no sockets). */
#ifndef SECPERF_M0_WOLFSSL_USER_SETTINGS_H
#define SECPERF_M0_WOLFSSL_USER_SETTINGS_H
#include "../../mcu/wolfssl/user_settings.h"
#undef WOLFSSL_SP_ARM_CORTEX_M_ASM
#ifndef SECPERF_NO_WOLFSSL_SP_ARM_THUMB_ASM
#define WOLFSSL_SP_ARM_THUMB_ASM
#endif
#define WOLFSSL_USER_IO
#define NO_WRITEV
#define NO_WOLFSSL_DIR
#endif
