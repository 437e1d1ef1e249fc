/* libFuzzer target: the authentication's handling of outside bytes (core/auth.c): the hex job
 * secret of TUTTI_SECRET, and the handshake proofs that strangers send. The first byte picks:
 *   0: the rest is a TUTTI_SECRET value for tutti__auth_parse_secret;
 *   1: the rest is secret (32) | na (32) | nc (32) | message, and the message's proof must
 *      verify while any changed bit, the other role's label or swapped nonces must not. */
#include <ctype.h>

#include "core/auth.h"
#include "fuzz_common.h"

static void fuzz_secret_text(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  memcpy(s, data, size);
  s[size] = '\0';
  uint8_t secret[TUTTI_AUTH_KEY_BYTES];
  int rc = tutti__auth_parse_secret(s, secret);
  /* The reference: exactly 64 hex digits, read two per byte. */
  int want_ok = strlen(s) == 2 * TUTTI_AUTH_KEY_BYTES;
  for (size_t i = 0; want_ok && i < 2 * TUTTI_AUTH_KEY_BYTES; i++)
    want_ok = isxdigit((unsigned char)s[i]) != 0;
  FUZZ_CHECK((rc == 0) == want_ok);
  for (int i = 0; i < TUTTI_AUTH_KEY_BYTES; i++) {
    unsigned byte = 0;
    if (want_ok) sscanf(s + 2 * i, "%2x", &byte);
    FUZZ_CHECK(secret[i] == byte); /* zeroed when refused */
  }
  free(s);
}

static void fuzz_proof(const uint8_t *data, size_t size) {
  if (size < 96) return;
  const uint8_t *secret = data, *na = data + 32, *nc = data + 64;
  const uint8_t *msg = data + 96;
  size_t len = size - 96;
  /* Two parts, split where the first message byte says, as the rendezvous answer is. */
  size_t cut = len ? msg[0] % (len + 1) : 0;
  struct iovec parts[2] = {{(void *)msg, cut}, {(void *)(msg + cut), len - cut}};
  tutti_auth_role_t role = len && (msg[len - 1] & 1) ? TUTTI_AUTH_ACCEPTOR : TUTTI_AUTH_CONNECTOR;
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES];
  FUZZ_CHECK(tutti__auth_proof(secret, role, na, nc, parts, 2, proof) == TUTTI_SUCCESS);
  FUZZ_CHECK(tutti__auth_verify(secret, role, na, nc, parts, 2, proof) == 1);
  /* The same bytes split elsewhere prove the same thing: the proof covers bytes, not parts. */
  struct iovec whole = {(void *)msg, len};
  FUZZ_CHECK(tutti__auth_verify(secret, role, na, nc, &whole, 1, proof) == 1);
  tutti_auth_role_t other = role == TUTTI_AUTH_CONNECTOR ? TUTTI_AUTH_ACCEPTOR
                                                         : TUTTI_AUTH_CONNECTOR;
  FUZZ_CHECK(tutti__auth_verify(secret, other, na, nc, parts, 2, proof) == 0);
  if (memcmp(na, nc, 32) != 0)
    FUZZ_CHECK(tutti__auth_verify(secret, role, nc, na, parts, 2, proof) == 0);
  uint8_t bad[TUTTI_AUTH_PROOF_BYTES];
  memcpy(bad, proof, sizeof bad);
  size_t bit = len ? msg[len / 2] % (8 * sizeof bad) : 0;
  bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
  FUZZ_CHECK(tutti__auth_verify(secret, role, na, nc, parts, 2, bad) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  if (data[0] % 2 == 0)
    fuzz_secret_text(data + 1, size - 1);
  else
    fuzz_proof(data + 1, size - 1);
  return 0;
}
