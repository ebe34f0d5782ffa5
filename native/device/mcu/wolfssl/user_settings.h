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
/* TLS 1.2 / DTLS 1.2 plain PSK suites (TLS_PSK_WITH_AES_128_GCM_SHA256, RFC 5487): the PSK handshake
 * of CoAP over DTLS (RFC 7252 section 9.1.3.1) */
#define WOLFSSL_STATIC_PSK

/* DTLS 1.2 (RFC 6347) in both versions' builds; wolfSSL 5.9 also DTLS 1.3 (RFC 9147) and connection
 * IDs for both (RFC 9146, RFC 9147 section 9). 5.5 has DTLS 1.3 only as a first cut and no DTLS 1.2
 * CID: its build offers DTLS 1.2 only. version.h has no dependencies: read it for the version here. */
#include <wolfssl/version.h>
/* (the protocol layer is compiled without GCC's peephole2 pass: native/device/Makefile says why) */
#define WOLFSSL_DTLS
#if LIBWOLFSSL_VERSION_HEX >= 0x05009000
#define WOLFSSL_DTLS13
#define WOLFSSL_DTLS_CID
/* 5.9's DTLS 1.3 server code (compiled in, never run by the client) refuses to build without the
 * HelloRetryRequest cookie and with one PSK identity per connection; the client's TLS 1.3 PSK
 * callback is the same either way (one identity). The server side stays in: leaving it out
 * (NO_WOLFSSL_SERVER) makes GCC inline the client's one-caller message builders
 * (SendTls13Finished, ...) whose entries mark the sent messages. */
#define WOLFSSL_SEND_HRR_COOKIE
#undef WOLFSSL_PSK_ONE_ID
#endif

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
