/*
 * Connection authentication: a mutual HMAC-SHA256 challenge-response over the job's 256-bit
 * secret, used by every connection the library accepts (rendezvous and TCP data mesh).
 *
 *   acceptor  -> connector  Na                       (fresh random nonce)
 *   connector -> acceptor   Nc, HMAC(secret, "tutti-c" || Na || Nc || hello)
 *   acceptor  -> connector  HMAC(secret, "tutti-s" || Nc || Na || answer)
 *
 * The acceptor's fresh Na makes a captured handshake useless on a new connection; the two
 * labels keep one side's proof from ever serving as the other's (reflection); the connector's
 * fresh Nc makes the acceptor prove the secret too, so a fake rendezvous or listener is caught.
 * The crypto is OpenSSL's libcrypto; nothing here is hand-written.
 */
#ifndef TUTTI_AUTH_H
#define TUTTI_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/internal.h"

#define TUTTI_AUTH_KEY_BYTES 32 /* the job secret */
#define TUTTI_AUTH_NONCE_BYTES 32
#define TUTTI_AUTH_PROOF_BYTES 32 /* SHA-256 output */

/* The first 8 bytes ({magic, 0}) a tutti_comm_shrink member sends on connecting to a lower
 * rank's data listener. That listener is also the tcp transport's: a rank still inside a
 * collective can accept the member's connection on its tcp path, which knows this magic and
 * closes the connection at once (silently) so the member asks again, instead of holding it
 * for a tcp knock until the shrink's collection window has closed. */
#define TUTTI_SHRINK_KNOCK 0x53485230u /* "SHR0" */

/* Who computes a proof: the side that connected, or the side that accepted. */
typedef enum { TUTTI_AUTH_CONNECTOR, TUTTI_AUTH_ACCEPTOR } tutti_auth_role_t;

/* Sets libcrypto up for this process and makes it fork-safe for tutti's own use (see
 * auth.c). Call before starting a thread that authenticates connections; idempotent.
 * TUTTI_ERR_SYSTEM or TUTTI_ERR_INTERNAL if libcrypto cannot work. */
tutti_result_t tutti__auth_init(void);

/* Fills nonce with fresh bytes from OpenSSL's CSPRNG; TUTTI_ERR_SYSTEM if it cannot. */
tutti_result_t tutti__auth_make_nonce(uint8_t nonce[TUTTI_AUTH_NONCE_BYTES]);

/* The proof the role's side sends: HMAC-SHA256 keyed with secret over the role's label, the
 * two nonces (the one the side was challenged with first: Na, Nc for the connector; Nc, Na
 * for the acceptor) and the nparts byte ranges of parts, in order. na is always the
 * acceptor's nonce, nc the connector's. TUTTI_ERR_INTERNAL if libcrypto fails. */
tutti_result_t tutti__auth_proof(const uint8_t secret[TUTTI_AUTH_KEY_BYTES],
                                 tutti_auth_role_t role,
                                 const uint8_t na[TUTTI_AUTH_NONCE_BYTES],
                                 const uint8_t nc[TUTTI_AUTH_NONCE_BYTES],
                                 const struct iovec *parts, int nparts,
                                 uint8_t out[TUTTI_AUTH_PROOF_BYTES]);

/* 1 when proof is what tutti__auth_proof computes for the same arguments, else 0 (also when
 * libcrypto fails). The comparison takes the same time wherever the bytes differ. */
int tutti__auth_verify(const uint8_t secret[TUTTI_AUTH_KEY_BYTES], tutti_auth_role_t role,
                       const uint8_t na[TUTTI_AUTH_NONCE_BYTES],
                       const uint8_t nc[TUTTI_AUTH_NONCE_BYTES], const struct iovec *parts,
                       int nparts, const uint8_t proof[TUTTI_AUTH_PROOF_BYTES]);

/* SHA-256 of len bytes at data into out: binds a long answer, such as the rendezvous table,
 * into a proof at the cost of hashing it once. TUTTI_ERR_INTERNAL if libcrypto fails. */
tutti_result_t tutti__auth_digest(const void *data, size_t len,
                                  uint8_t out[TUTTI_AUTH_PROOF_BYTES]);

/* "a.b.c.d:port" of the other end of connected socket fd into buf, for log lines about
 * rejected connections; "unknown" if it cannot be found. */
const char *tutti__auth_peer_name(int fd, char *buf, size_t len);

/* Parses exactly 2 * TUTTI_AUTH_KEY_BYTES hex digits (either case) into secret; 0, or -1 if
 * s is anything else (secret is then left zeroed). */
int tutti__auth_parse_secret(const char *s, uint8_t secret[TUTTI_AUTH_KEY_BYTES]);

/* Frees this thread's libcrypto state now, under the fork lock (see auth.c), rather than in a
 * thread-exit destructor that a concurrent fork could interrupt. For threads about to end. */
void tutti__auth_thread_stop(void);

/* Overwrites n bytes at p in a way the compiler cannot drop (for secrets going out of use). */
void tutti__auth_cleanse(void *p, size_t n);

#endif
