/*
 * Unit tests of connection authentication (core/auth.h): the HMAC-SHA256 proofs verify only
 * with the right secret, nonces, role and bytes; nonces are fresh; secrets parse from hex.
 */
#include <string.h>

#include "core/auth.h"
#include "harness.h"

typedef struct {
  uint8_t key[TUTTI_AUTH_KEY_BYTES];
  uint8_t na[TUTTI_AUTH_NONCE_BYTES];
  uint8_t nc[TUTTI_AUTH_NONCE_BYTES];
  char hello[48];
} fixture_t;

static fixture_t fixture(void) {
  fixture_t f;
  for (int i = 0; i < 32; i++) {
    f.key[i] = (uint8_t)i;
    f.na[i] = (uint8_t)(0x40 + i);
    f.nc[i] = (uint8_t)(0x80 + i);
  }
  memset(f.hello, 0, sizeof f.hello);
  strcpy(f.hello, "rank 2 of 3, pid 812, job 1234");
  return f;
}

static void from_hex(const char *hex, uint8_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    ASSERT(sscanf(hex + 2 * i, "%2x", &v) == 1);
    out[i] = (uint8_t)v;
  }
}

/* Pins the bytes on the wire: label || challenged-with nonce || own nonce || data, computed
 * independently (Python's hmac and `openssl dgst -mac HMAC`). */
TEST(proof_known_answers) {
  fixture_t f = fixture();
  uint8_t out[TUTTI_AUTH_PROOF_BYTES], want[TUTTI_AUTH_PROOF_BYTES];
  struct iovec hello = {(void *)"hello", 5}, answer = {(void *)"answer", 6};
  ASSERT_EQ(tutti__auth_proof(f.key, TUTTI_AUTH_CONNECTOR, f.na, f.nc, &hello, 1, out),
            TUTTI_SUCCESS);
  from_hex("c840ceac2dc39f602305054c577561088f94fb0f275112dc4bac9a3ada9c07c2", want, 32);
  ASSERT_MEM_EQ(out, want, 32);
  ASSERT_EQ(tutti__auth_proof(f.key, TUTTI_AUTH_ACCEPTOR, f.na, f.nc, &answer, 1, out),
            TUTTI_SUCCESS);
  from_hex("b78ac17809b6c2252781ef846ceaec9b60629d721b391e4c24474c5bd2581be7", want, 32);
  ASSERT_MEM_EQ(out, want, 32);
}

TEST(right_secret_verifies) {
  fixture_t f = fixture();
  struct iovec part = {f.hello, sizeof f.hello};
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES];
  for (int role = TUTTI_AUTH_CONNECTOR; role <= TUTTI_AUTH_ACCEPTOR; role++) {
    ASSERT_EQ(tutti__auth_proof(f.key, role, f.na, f.nc, &part, 1, proof), TUTTI_SUCCESS);
    ASSERT(tutti__auth_verify(f.key, role, f.na, f.nc, &part, 1, proof));
  }
  /* No data at all is allowed too (a bare challenge-response). */
  ASSERT_EQ(tutti__auth_proof(f.key, TUTTI_AUTH_CONNECTOR, f.na, f.nc, NULL, 0, proof),
            TUTTI_SUCCESS);
  ASSERT(tutti__auth_verify(f.key, TUTTI_AUTH_CONNECTOR, f.na, f.nc, NULL, 0, proof));
}

TEST(wrong_secret_fails) {
  fixture_t f = fixture();
  struct iovec part = {f.hello, sizeof f.hello};
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES], zero[TUTTI_AUTH_KEY_BYTES] = {0};
  ASSERT_EQ(tutti__auth_proof(f.key, TUTTI_AUTH_CONNECTOR, f.na, f.nc, &part, 1, proof),
            TUTTI_SUCCESS);
  ASSERT(!tutti__auth_verify(zero, TUTTI_AUTH_CONNECTOR, f.na, f.nc, &part, 1, proof));
  for (int bit = 0; bit < 8 * TUTTI_AUTH_KEY_BYTES; bit += 37) {
    uint8_t key[TUTTI_AUTH_KEY_BYTES];
    memcpy(key, f.key, sizeof key);
    key[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    ASSERT(!tutti__auth_verify(key, TUTTI_AUTH_CONNECTOR, f.na, f.nc, &part, 1, proof));
  }
}

/* A proof made for one challenge is worthless for another: this is what defeats replay. */
TEST(other_nonces_fail) {
  fixture_t f = fixture();
  struct iovec part = {f.hello, sizeof f.hello};
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES], na2[TUTTI_AUTH_NONCE_BYTES], nc2[TUTTI_AUTH_NONCE_BYTES];
  ASSERT_EQ(tutti__auth_proof(f.key, TUTTI_AUTH_CONNECTOR, f.na, f.nc, &part, 1, proof),
            TUTTI_SUCCESS);
  ASSERT_EQ(tutti__auth_make_nonce(na2), TUTTI_SUCCESS);
  ASSERT_EQ(tutti__auth_make_nonce(nc2), TUTTI_SUCCESS);
  ASSERT(!tutti__auth_verify(f.key, TUTTI_AUTH_CONNECTOR, na2, f.nc, &part, 1, proof));
  ASSERT(!tutti__auth_verify(f.key, TUTTI_AUTH_CONNECTOR, f.na, nc2, &part, 1, proof));
  /* Swapping the nonces is not the same challenge either. */
  ASSERT(!tutti__auth_verify(f.key, TUTTI_AUTH_CONNECTOR, f.nc, f.na, &part, 1, proof));
  uint8_t na3[TUTTI_AUTH_NONCE_BYTES];
  memcpy(na3, f.na, sizeof na3);
  na3[TUTTI_AUTH_NONCE_BYTES - 1] ^= 0x80;
  ASSERT(!tutti__auth_verify(f.key, TUTTI_AUTH_CONNECTOR, na3, f.nc, &part, 1, proof));
}

TEST(tampered_hello_fails) {
  fixture_t f = fixture();
  struct iovec part = {f.hello, sizeof f.hello};
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES];
  ASSERT_EQ(tutti__auth_proof(f.key, TUTTI_AUTH_CONNECTOR, f.na, f.nc, &part, 1, proof),
            TUTTI_SUCCESS);
  for (size_t i = 0; i < sizeof f.hello; i++) {
    fixture_t g = f;
    g.hello[i] ^= 1;
    struct iovec tampered = {g.hello, sizeof g.hello};
    ASSERT(!tutti__auth_verify(f.key, TUTTI_AUTH_CONNECTOR, f.na, f.nc, &tampered, 1, proof));
  }
  /* Truncated or extended: the length is part of what is proven. */
  struct iovec shorter = {f.hello, sizeof f.hello - 1};
  ASSERT(!tutti__auth_verify(f.key, TUTTI_AUTH_CONNECTOR, f.na, f.nc, &shorter, 1, proof));
  struct iovec two[2] = {{f.hello, sizeof f.hello}, {(void *)"x", 1}};
  ASSERT(!tutti__auth_verify(f.key, TUTTI_AUTH_CONNECTOR, f.na, f.nc, two, 2, proof));
  /* A flipped bit in the proof itself. */
  for (int i = 0; i < TUTTI_AUTH_PROOF_BYTES; i++) {
    uint8_t bad[TUTTI_AUTH_PROOF_BYTES];
    memcpy(bad, proof, sizeof bad);
    bad[i] ^= 0x10;
    ASSERT(!tutti__auth_verify(f.key, TUTTI_AUTH_CONNECTOR, f.na, f.nc, &part, 1, bad));
  }
}

/* One side's proof never passes for the other's (reflection), even over the same bytes. */
TEST(roles_differ) {
  fixture_t f = fixture();
  struct iovec part = {f.hello, sizeof f.hello};
  uint8_t c[TUTTI_AUTH_PROOF_BYTES], s[TUTTI_AUTH_PROOF_BYTES];
  ASSERT_EQ(tutti__auth_proof(f.key, TUTTI_AUTH_CONNECTOR, f.na, f.nc, &part, 1, c),
            TUTTI_SUCCESS);
  ASSERT_EQ(tutti__auth_proof(f.key, TUTTI_AUTH_ACCEPTOR, f.na, f.nc, &part, 1, s),
            TUTTI_SUCCESS);
  ASSERT(memcmp(c, s, sizeof c) != 0);
  ASSERT(!tutti__auth_verify(f.key, TUTTI_AUTH_ACCEPTOR, f.na, f.nc, &part, 1, c));
  ASSERT(!tutti__auth_verify(f.key, TUTTI_AUTH_CONNECTOR, f.na, f.nc, &part, 1, s));
  /* A connector that echoes the acceptor's nonce as its own gains nothing either. */
  uint8_t echo[TUTTI_AUTH_PROOF_BYTES];
  ASSERT_EQ(tutti__auth_proof(f.key, TUTTI_AUTH_ACCEPTOR, f.na, f.na, &part, 1, echo),
            TUTTI_SUCCESS);
  ASSERT(!tutti__auth_verify(f.key, TUTTI_AUTH_CONNECTOR, f.na, f.na, &part, 1, echo));
}

/* The parts are concatenated: how the caller splits the bytes does not matter. */
TEST(parts_concatenate) {
  fixture_t f = fixture();
  uint8_t whole[TUTTI_AUTH_PROOF_BYTES], split[TUTTI_AUTH_PROOF_BYTES];
  struct iovec one = {f.hello, sizeof f.hello};
  struct iovec three[3] = {{f.hello, 5}, {f.hello + 5, 0}, {f.hello + 5, sizeof f.hello - 5}};
  ASSERT_EQ(tutti__auth_proof(f.key, TUTTI_AUTH_ACCEPTOR, f.na, f.nc, &one, 1, whole),
            TUTTI_SUCCESS);
  ASSERT_EQ(tutti__auth_proof(f.key, TUTTI_AUTH_ACCEPTOR, f.na, f.nc, three, 3, split),
            TUTTI_SUCCESS);
  ASSERT_MEM_EQ(whole, split, sizeof whole);
}

TEST(nonces_are_fresh) {
  uint8_t seen[64][TUTTI_AUTH_NONCE_BYTES];
  for (int i = 0; i < 64; i++) {
    ASSERT_EQ(tutti__auth_make_nonce(seen[i]), TUTTI_SUCCESS);
    for (int j = 0; j < i; j++) ASSERT(memcmp(seen[i], seen[j], TUTTI_AUTH_NONCE_BYTES) != 0);
  }
}

TEST(digest_known_answer) {
  uint8_t out[TUTTI_AUTH_PROOF_BYTES], want[TUTTI_AUTH_PROOF_BYTES];
  ASSERT_EQ(tutti__auth_digest("abc", 3, out), TUTTI_SUCCESS);
  from_hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", want, 32);
  ASSERT_MEM_EQ(out, want, 32);
}

TEST(parse_secret) {
  uint8_t key[TUTTI_AUTH_KEY_BYTES], want[TUTTI_AUTH_KEY_BYTES];
  const char *lower = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
  for (int i = 0; i < 32; i++) want[i] = (uint8_t)i;
  ASSERT_EQ(tutti__auth_parse_secret(lower, key), 0);
  ASSERT_MEM_EQ(key, want, sizeof key);
  ASSERT_EQ(tutti__auth_parse_secret(
                "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F", key),
            0);
  ASSERT_MEM_EQ(key, want, sizeof key);
  const char *bad[] = {
      "",
      "00",
      "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1",   /* 63 digits */
      "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f0", /* 65 */
      "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1g",  /* not hex */
      " 00102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",  /* space */
      "0x0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",  /* prefix */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(key, 0xAA, sizeof key);
    ASSERT_EQ(tutti__auth_parse_secret(bad[i], key), -1);
    for (int j = 0; j < TUTTI_AUTH_KEY_BYTES; j++) ASSERT_EQ(key[j], 0);
  }
  ASSERT_EQ(tutti__auth_parse_secret(NULL, key), -1);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
