/*
 * HMAC-SHA256 proofs and nonces for connection authentication (see auth.h).
 *
 * Fork safety: the rendezvous thread calls libcrypto while the process that hosts it may be
 * forking ranks (tutti_get_unique_id, then fork, is the documented pattern). A child forked
 * while that thread held one of libcrypto's internal locks would deadlock on its own first
 * libcrypto call. So every libcrypto call here runs under crypto_mu, and a pthread_atfork
 * handler takes crypto_mu around fork: no libcrypto lock is ever held across a fork by us.
 * tutti__auth_init registers that handler, and does libcrypto's one-time set-up, before the
 * rendezvous thread starts, so that set-up never races a fork either.
 */
#include "core/auth.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "core/sock.h"

static pthread_mutex_t crypto_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;

static void crypto_lock_raw(void) { pthread_mutex_lock(&crypto_mu); }
static void crypto_unlock_raw(void) { pthread_mutex_unlock(&crypto_mu); }

static void crypto_init(void) {
  /* No atexit clean-up: a detached rendezvous thread may still be inside libcrypto when the
   * process exits, and must not find its state freed under it. */
  OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
  pthread_atfork(crypto_lock_raw, crypto_unlock_raw, crypto_unlock_raw);
}

static void crypto_lock(void) {
  pthread_once(&crypto_once, crypto_init);
  crypto_lock_raw();
}

/* Both labels have the same length, so label || nonces || data never parses two ways. */
static const char label_connector[] = "tutti-c";
static const char label_acceptor[] = "tutti-s";

tutti_result_t tutti__auth_init(void) {
  uint8_t probe[TUTTI_AUTH_PROOF_BYTES];
  /* The first nonce and HMAC load libcrypto's providers and seed its generator. */
  TRY(tutti__auth_make_nonce(probe));
  TRY(tutti__auth_proof(probe, TUTTI_AUTH_CONNECTOR, probe, probe, NULL, 0, probe));
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__auth_make_nonce(uint8_t nonce[TUTTI_AUTH_NONCE_BYTES]) {
  crypto_lock();
  int ok = RAND_bytes(nonce, TUTTI_AUTH_NONCE_BYTES) == 1;
  crypto_unlock_raw();
  if (!ok) {
    WARN("boot", -1, "RAND_bytes could not make a nonce");
    return TUTTI_ERR_SYSTEM;
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__auth_proof(const uint8_t secret[TUTTI_AUTH_KEY_BYTES],
                                 tutti_auth_role_t role,
                                 const uint8_t na[TUTTI_AUTH_NONCE_BYTES],
                                 const uint8_t nc[TUTTI_AUTH_NONCE_BYTES],
                                 const struct iovec *parts, int nparts,
                                 uint8_t out[TUTTI_AUTH_PROOF_BYTES]) {
  const char *label = role == TUTTI_AUTH_CONNECTOR ? label_connector : label_acceptor;
  /* Each side puts the other side's nonce first: the nonce it was challenged with. */
  const uint8_t *first = role == TUTTI_AUTH_CONNECTOR ? na : nc;
  const uint8_t *second = role == TUTTI_AUTH_CONNECTOR ? nc : na;
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  tutti_result_t res = TUTTI_ERR_INTERNAL;
  size_t outlen = 0;
  crypto_lock();
  EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
  EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
  if (!ctx || EVP_MAC_init(ctx, secret, TUTTI_AUTH_KEY_BYTES, params) != 1 ||
      EVP_MAC_update(ctx, (const unsigned char *)label, sizeof label_connector - 1) != 1 ||
      EVP_MAC_update(ctx, first, TUTTI_AUTH_NONCE_BYTES) != 1 ||
      EVP_MAC_update(ctx, second, TUTTI_AUTH_NONCE_BYTES) != 1)
    goto out;
  for (int i = 0; i < nparts; i++)
    if (parts[i].iov_len && EVP_MAC_update(ctx, parts[i].iov_base, parts[i].iov_len) != 1)
      goto out;
  if (EVP_MAC_final(ctx, out, &outlen, TUTTI_AUTH_PROOF_BYTES) != 1 ||
      outlen != TUTTI_AUTH_PROOF_BYTES)
    goto out;
  res = TUTTI_SUCCESS;
out:
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  crypto_unlock_raw();
  if (res != TUTTI_SUCCESS) WARN("boot", -1, "libcrypto failed to compute an HMAC-SHA256");
  return res;
}

int tutti__auth_verify(const uint8_t secret[TUTTI_AUTH_KEY_BYTES], tutti_auth_role_t role,
                       const uint8_t na[TUTTI_AUTH_NONCE_BYTES],
                       const uint8_t nc[TUTTI_AUTH_NONCE_BYTES], const struct iovec *parts,
                       int nparts, const uint8_t proof[TUTTI_AUTH_PROOF_BYTES]) {
  uint8_t want[TUTTI_AUTH_PROOF_BYTES];
  if (tutti__auth_proof(secret, role, na, nc, parts, nparts, want) != TUTTI_SUCCESS) return 0;
  int ok = CRYPTO_memcmp(want, proof, sizeof want) == 0;
  OPENSSL_cleanse(want, sizeof want);
  return ok;
}

tutti_result_t tutti__auth_digest(const void *data, size_t len,
                                  uint8_t out[TUTTI_AUTH_PROOF_BYTES]) {
  unsigned int outlen = 0;
  crypto_lock();
  int ok = EVP_Digest(data, len, out, &outlen, EVP_sha256(), NULL) == 1;
  crypto_unlock_raw();
  if (!ok || outlen != TUTTI_AUTH_PROOF_BYTES) {
    WARN("boot", -1, "libcrypto failed to compute a SHA-256");
    return TUTTI_ERR_INTERNAL;
  }
  return TUTTI_SUCCESS;
}

const char *tutti__auth_peer_name(int fd, char *buf, size_t len) {
  struct sockaddr_in sa;
  socklen_t sl = sizeof sa;
  if (getpeername(fd, (struct sockaddr *)&sa, &sl) != 0 || sa.sin_family != AF_INET) {
    snprintf(buf, len, "unknown");
    return buf;
  }
  return tutti__sock_addr_str(sa.sin_addr.s_addr, sa.sin_port, buf, len);
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int tutti__auth_parse_secret(const char *s, uint8_t secret[TUTTI_AUTH_KEY_BYTES]) {
  memset(secret, 0, TUTTI_AUTH_KEY_BYTES);
  if (!s || strlen(s) != 2 * TUTTI_AUTH_KEY_BYTES) return -1;
  for (int i = 0; i < TUTTI_AUTH_KEY_BYTES; i++) {
    int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      OPENSSL_cleanse(secret, TUTTI_AUTH_KEY_BYTES);
      return -1;
    }
    secret[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}

void tutti__auth_cleanse(void *p, size_t n) { OPENSSL_cleanse(p, n); }

void tutti__auth_thread_stop(void) {
  crypto_lock();
  OPENSSL_thread_stop();
  crypto_unlock_raw();
}
