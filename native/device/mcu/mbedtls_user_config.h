/* Additions to Mbed TLS 2.28's default configuration (include/mbedtls/config.h) for the
 * microcontroller (Cortex-M) build of `secperf device`: AES-CMAC for the MAC comparison. */
#define MBEDTLS_CMAC_C
