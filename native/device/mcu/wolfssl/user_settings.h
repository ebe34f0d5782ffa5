/* wolfSSL configuration of the microcontroller (Cortex-M) build of `secperf device`: what an
 * embedded TLS 1.3/1.2 client typically enables, with wolfSSL's Cortex-M assembly for the
 * public-key maths (sp_cortexm.c). Used with -DWOLFSSL_USER_SETTINGS (no configure run).
 * Compared with Debian's armhf build: no OpenSSL compatibility layer, no FP_ECC tables, SP maths
 * in Thumb-2 assembly instead of generic ARM32 code. */
#ifndef SECPERF_WOLFSSL_USER_SETTINGS_H
#define SECPERF_WOLFSSL_USER_SETTINGS_H

#define SINGLE_THREADED

/* protocol */
#define WOLFSSL_TLS13
#define NO_OLD_TLS
#define HAVE_TLS_EXTENSIONS
#define HAVE_SUPPORTED_CURVES
#define HAVE_SNI
#define HAVE_SESSION_TICKET
#define HAVE_EXTENDED_MASTER
#define HAVE_ENCRYPT_THEN_MAC
#define HAVE_HKDF
/* TLS 1.3 external PSK (psk_dhe_ke), the accelerated handshake of study S1 */
#define WOLFSSL_PSK_ONE_ID
#define WOLFSSL_VERBOSE_ERRORS

/* public key: ECC P-256/P-384 and X25519, RSA verification, SP maths in Cortex-M assembly */
#define HAVE_ECC
#define ECC_TIMING_RESISTANT
#define ECC_SHAMIR
#define HAVE_ECC384
#define HAVE_CURVE25519
#define WC_RSA_PSS
#define WC_RSA_BLINDING
#define TFM_TIMING_RESISTANT
/* The maths defaults below can be left out by a build configuration (src/secperf/data/
 * device_builds.toml, `secperf device --config`): it passes -DSECPERF_NO_<NAME>. Without one,
 * every guard is true and the build is the default one (sp-asm). */
#ifndef SECPERF_NO_WOLFSSL_SP_MATH_ALL
#define WOLFSSL_SP_MATH_ALL
#endif
#ifndef SECPERF_NO_WOLFSSL_HAVE_SP_RSA
#define WOLFSSL_HAVE_SP_RSA
#endif
#ifndef SECPERF_NO_WOLFSSL_HAVE_SP_ECC
#define WOLFSSL_HAVE_SP_ECC
#endif
#ifndef SECPERF_NO_WOLFSSL_SP_384
#define WOLFSSL_SP_384
#endif
#ifndef SECPERF_NO_WOLFSSL_SP_ARM_CORTEX_M_ASM
#define WOLFSSL_SP_ARM_CORTEX_M_ASM
#endif
#define WOLFSSL_KEY_GEN

/* symmetric */
#define HAVE_AESGCM
#define GCM_TABLE_4BIT
#define WOLFSSL_AES_DIRECT
#define WOLFSSL_CMAC
#define HAVE_CHACHA
#define HAVE_POLY1305
#define WOLFSSL_SHA384
#define WOLFSSL_SHA512
#define HAVE_HASHDRBG

#define NO_DSA
#define NO_DH
#define NO_RC4
#define NO_MD4
#define NO_DES3
#define WOLFSSL_NO_SHAKE256

#endif
