/* Additions to Mbed TLS 2.28's default configuration (include/mbedtls/config.h) for the
 * microcontroller (Cortex-M) build of `secperf device`: AES-CMAC for the MAC comparison. */
#define MBEDTLS_CMAC_C

/* Defaults of the library's config.h / mbedtls_config.h that a build configuration
 * (src/secperf/data/device_builds.toml, `secperf device --config`) removes: it passes
 * -DSECPERF_NO_<NAME>. This file is read after the library's configuration, so #undef wins. */
#ifdef SECPERF_NO_MBEDTLS_HAVE_ASM
#undef MBEDTLS_HAVE_ASM
#endif
#ifdef SECPERF_NO_MBEDTLS_PADLOCK_C
#undef MBEDTLS_PADLOCK_C
#endif
#ifdef SECPERF_NO_MBEDTLS_ECP_NIST_OPTIM
#undef MBEDTLS_ECP_NIST_OPTIM
#endif
