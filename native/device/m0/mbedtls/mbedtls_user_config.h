/* Mbed TLS configuration of the Cortex-M0+ build (newlib): the M builds' additions
 * (mcu/mbedtls_user_config.h) without the parts that need a Unix C library — the socket module
 * (the client hands records through its own callbacks), the timing module (DTLS timers: no DTLS
 * on this build) and the platform entropy source — and with their bare-metal replacements, as on a
 * microcontroller: a hardware entropy poll and a millisecond clock (m0/mbedtls_port.c). */
#ifndef SECPERF_M0_MBEDTLS_USER_CONFIG_H
#define SECPERF_M0_MBEDTLS_USER_CONFIG_H
#include "../../mcu/mbedtls_user_config.h"
#undef MBEDTLS_NET_C
#undef MBEDTLS_TIMING_C
#define MBEDTLS_NO_PLATFORM_ENTROPY
#define MBEDTLS_ENTROPY_HARDWARE_ALT
#define MBEDTLS_PLATFORM_MS_TIME_ALT
#endif
