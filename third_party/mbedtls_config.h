/*
 * mbedtls_config.h — featurebox's mbedTLS 3.6 configuration.
 *
 * Used instead of mbedTLS's default config through
 *   -I third_party -DMBEDTLS_CONFIG_FILE='"mbedtls_config.h"'
 * (see third_party/deps.mk, MBEDTLS_INC). Compile everything that includes
 * an mbedTLS header with the same flags, library and core/tls.c alike.
 *
 * It holds what a TLS client of a kube-apiserver needs and nothing else:
 *   - TLS 1.2 client, ECDHE-ECDSA and ECDHE-RSA, AES-128/256-GCM;
 *   - TLS 1.3 client (ephemeral key exchange only; needs the PSA core),
 *     unless FB_MBEDTLS_NO_TLS13 is defined;
 *   - X.509 parsing and chain verification: RSA (PKCS#1 v1.5 and PSS) and
 *     ECDSA on secp256r1/secp384r1, SHA-256/384; hostname and IP SAN checks;
 *   - PEM/base64; client keys as PKCS#8, PKCS#1 (RSA) or SEC1 (EC), unencrypted;
 *   - SNI; CTR-DRBG seeded from getrandom(2) (/dev/urandom fallback).
 * Left out on purpose: server side, DTLS, renegotiation, session tickets and
 * resumption, CBC and SHA-1 suites, finite-field DH, CRLs, debug output,
 * error strings (mbedtls_strerror only prints the code), file and socket
 * helpers (core/ reads files through hostfs and owns the sockets), threading.
 *
 * Callers must know:
 *   - psa_crypto_init() must succeed before the first handshake when TLS 1.3
 *     is built in (mbedTLS 3.6 runs TLS 1.3 crypto through PSA);
 *   - without MBEDTLS_FS_IO there is no mbedtls_x509_crt_parse_file() or
 *     mbedtls_pk_parse_keyfile(): read the file, then parse the buffer (PEM
 *     buffers must include the terminating NUL in their length);
 *   - a TLS 1.3 NewSessionTicket from the server is ignored (no tickets).
 */
#ifndef FB_MBEDTLS_CONFIG_H
#define FB_MBEDTLS_CONFIG_H

/* --- platform ---------------------------------------------------------- */
#define MBEDTLS_HAVE_ASM
#define MBEDTLS_HAVE_TIME
#define MBEDTLS_HAVE_TIME_DATE          /* certificate validity periods */
#define MBEDTLS_DEPRECATED_REMOVED
#define MBEDTLS_ERROR_STRERROR_DUMMY    /* mbedtls_strerror() prints the code */

/* --- randomness -------------------------------------------------------- */
#define MBEDTLS_ENTROPY_C               /* platform source: getrandom, /dev/urandom */
#define MBEDTLS_CTR_DRBG_C

/* --- symmetric --------------------------------------------------------- */
#define MBEDTLS_AES_C
#define MBEDTLS_AES_FEWER_TABLES        /* 2 KiB of tables instead of 8, built into .bss at the first use */
/* GCM only encrypts blocks: no inverse tables or key schedule. Not on
 * x86_64: mbedTLS 3.6.6's AES-NI assembly (aesni.c) still jumps to the
 * decryption loop this option removes, and the build fails. */
#if !defined(__x86_64__)
#define MBEDTLS_BLOCK_CIPHER_NO_DECRYPT
#endif
#define MBEDTLS_AESNI_C                 /* x86_64 only; compiled out elsewhere */
#define MBEDTLS_AESCE_C                 /* Armv8-A only; compiled out elsewhere */
#define MBEDTLS_GCM_C
#define MBEDTLS_CIPHER_C

/* --- hashes ------------------------------------------------------------ */
#define MBEDTLS_MD_C
#define MBEDTLS_SHA256_C
#define MBEDTLS_SHA256_SMALLER          /* size over speed: we hash a handshake, not bulk data */
#define MBEDTLS_SHA512_C                /* base of SHA-384 */
#define MBEDTLS_SHA512_SMALLER
#define MBEDTLS_SHA384_C

/* --- public key -------------------------------------------------------- */
#define MBEDTLS_BIGNUM_C
#define MBEDTLS_RSA_C
#define MBEDTLS_PKCS1_V15
#define MBEDTLS_PKCS1_V21               /* RSA-PSS: TLS 1.3 CertificateVerify */
#define MBEDTLS_ECP_C
#define MBEDTLS_ECP_FIXED_POINT_OPTIM 0 /* no precomputed generator tables */
#define MBEDTLS_ECP_DP_SECP256R1_ENABLED
#define MBEDTLS_ECP_DP_SECP384R1_ENABLED
#define MBEDTLS_ECDH_C
#define MBEDTLS_ECDSA_C
#define MBEDTLS_PK_C
#define MBEDTLS_PK_PARSE_C

/* --- encodings --------------------------------------------------------- */
#define MBEDTLS_ASN1_PARSE_C
#define MBEDTLS_ASN1_WRITE_C            /* ECDSA signature encoding */
#define MBEDTLS_OID_C
#define MBEDTLS_BASE64_C
#define MBEDTLS_PEM_PARSE_C

/* --- X.509 ------------------------------------------------------------- */
#define MBEDTLS_X509_USE_C
#define MBEDTLS_X509_CRT_PARSE_C
#define MBEDTLS_X509_RSASSA_PSS_SUPPORT

/* --- TLS 1.2 client ---------------------------------------------------- */
#define MBEDTLS_SSL_TLS_C
#define MBEDTLS_SSL_CLI_C
#define MBEDTLS_SSL_PROTO_TLS1_2
#define MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED
#define MBEDTLS_KEY_EXCHANGE_ECDHE_RSA_ENABLED
#define MBEDTLS_SSL_EXTENDED_MASTER_SECRET
#define MBEDTLS_SSL_SERVER_NAME_INDICATION
#define MBEDTLS_SSL_ALL_ALERT_MESSAGES  /* the server logs why we hung up */
#define MBEDTLS_SSL_KEEP_PEER_CERTIFICATE /* required by TLS 1.3 */

/* --- TLS 1.3 client ---------------------------------------------------- */
#ifndef FB_MBEDTLS_NO_TLS13
#define MBEDTLS_SSL_PROTO_TLS1_3
#define MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_EPHEMERAL_ENABLED
#define MBEDTLS_SSL_TLS1_3_COMPATIBILITY_MODE /* middleboxes between us and the API */
#define MBEDTLS_HKDF_C
#define MBEDTLS_PSA_CRYPTO_C            /* TLS 1.3 key schedule and AEAD run on PSA */
#endif

#endif /* FB_MBEDTLS_CONFIG_H */
