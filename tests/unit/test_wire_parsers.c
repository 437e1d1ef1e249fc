/* Unit tests of the pure parsers the fuzzers drive (bootstrap/rdv_wire.c, tutti__hdr_check):
 * a genuine message is accepted and read back exactly; a truncated, tampered, unproven or
 * mis-sized one is refused with the documented result. */
#include <stdlib.h>

#include "bootstrap/rdv_wire.h"
#include "harness.h"
#include "transport/header_check.h"

static uint8_t secret[32], na[32], nc[32];

static void keys(void) {
  for (int i = 0; i < 32; i++) {
    secret[i] = (uint8_t)(i + 1);
    na[i] = (uint8_t)(0x40 + i);
    nc[i] = (uint8_t)(0x80 + i);
  }
}

/* The table of n ranks the tests send. */
static tutti_rdv_entry_t *make_table(int n) {
  tutti_rdv_entry_t *t = calloc((size_t)n, sizeof *t);
  for (int i = 0; i < n; i++) {
    t[i].pid = 1000 + i;
    t[i].port = (uint16_t)(5000 + i);
    memset(t[i].host, 'h', sizeof t[i].host); /* unterminated on the wire */
  }
  return t;
}

/* A successful answer for n ranks to rank 0 (parent -1, with the table) or to another rank
 * (parent given, no table), signed as the rendezvous signs it; *len gets its length. */
static uint8_t *signed_answer(int n, int parent, size_t *len) {
  rdv_reply_t r;
  memset(&r, 0, sizeof r);
  r.magic = RDV_MAGIC;
  r.status = TUTTI_SUCCESS;
  r.job_id = 0xabcdef12345ull;
  r.nranks = n;
  r.parent = parent;
  r.tree_ns = 7;
  r.parent_tree_port = 4321;
  size_t tb = parent < 0 ? (size_t)n * sizeof(tutti_rdv_entry_t) : 0;
  *len = sizeof r + tb + TUTTI_AUTH_PROOF_BYTES;
  uint8_t *buf = calloc(1, *len);
  tutti_rdv_entry_t *t = make_table(n);
  ASSERT_EQ(tutti__auth_digest(t, (size_t)n * sizeof *t, r.digest), TUTTI_SUCCESS);
  struct iovec part = {&r, sizeof r};
  memcpy(buf, &r, sizeof r);
  memcpy(buf + sizeof r, t, tb);
  ASSERT_EQ(tutti__auth_proof(secret, TUTTI_AUTH_ACCEPTOR, na, nc, &part, 1, buf + sizeof r + tb),
            TUTTI_SUCCESS);
  free(t);
  return buf;
}

static tutti_result_t parse(int n, const uint8_t *buf, size_t len, tutti_rdv_entry_t **t) {
  rdv_reply_t r;
  char err[256];
  return tutti__rdv_answer_parse(secret, na, nc, n, buf, len, &r, t, err, sizeof err);
}

TEST(answer_round_trip) {
  keys();
  size_t len;
  uint8_t *buf = signed_answer(4, -1, &len);
  ASSERT_EQ(tutti__rdv_answer_bytes(buf, sizeof(rdv_reply_t), 4), len);
  tutti_rdv_entry_t *t;
  ASSERT_EQ(parse(4, buf, len, &t), TUTTI_SUCCESS);
  for (int i = 0; i < 4; i++) {
    ASSERT_EQ(t[i].pid, 1000 + i);
    ASSERT_EQ(t[i].port, 5000 + i);
    ASSERT_EQ(strlen(t[i].host), sizeof t[i].host - 1); /* terminated by the parser */
  }
  free(t);
  free(buf);
  /* Any other rank gets no table, only where to fetch it and its digest. */
  buf = signed_answer(4, 1, &len);
  ASSERT_EQ(len, sizeof(rdv_reply_t) + TUTTI_AUTH_PROOF_BYTES);
  ASSERT_EQ(tutti__rdv_answer_bytes(buf, sizeof(rdv_reply_t), 4), len);
  rdv_reply_t r;
  char err[256];
  ASSERT_EQ(tutti__rdv_answer_parse(secret, na, nc, 4, buf, len, &r, &t, err, sizeof err),
            TUTTI_SUCCESS);
  ASSERT(t == NULL);
  ASSERT_EQ(r.parent, 1);
  ASSERT_EQ(r.parent_tree_port, 4321);
  free(buf);
}

TEST(answer_refused_when_wrong) {
  keys();
  size_t len;
  uint8_t *buf = signed_answer(3, -1, &len);
  tutti_rdv_entry_t *t;
  /* Another world size: only the reply is read, and it is refused. */
  ASSERT_EQ(tutti__rdv_answer_bytes(buf, sizeof(rdv_reply_t), 5), sizeof(rdv_reply_t));
  ASSERT_EQ(parse(5, buf, sizeof(rdv_reply_t), &t), TUTTI_ERR_INVALID_USAGE);
  /* Every truncation is refused without reading past the end (ASan watches). */
  for (size_t cut = 0; cut < len; cut += 37) {
    uint8_t *part = malloc(cut ? cut : 1);
    memcpy(part, buf, cut);
    ASSERT(parse(3, part, cut, &t) != TUTTI_SUCCESS);
    ASSERT(t == NULL);
    free(part);
  }
  /* One changed byte of the table breaks the proof. */
  buf[sizeof(rdv_reply_t) + 5] ^= 1;
  ASSERT_EQ(parse(3, buf, len, &t), TUTTI_ERR_REMOTE);
  /* Another secret: not this job's rendezvous. */
  buf[sizeof(rdv_reply_t) + 5] ^= 1;
  secret[0] ^= 1;
  ASSERT_EQ(parse(3, buf, len, &t), TUTTI_ERR_REMOTE);
  free(buf);
}

TEST(hello_checks) {
  keys();
  rdv_hello_t h, out;
  memset(&h, 0, sizeof h);
  h.f = (rdv_hello_fields_t){RDV_MAGIC, RDV_VERSION, 2, 1, {0}, 0, 0, 0};
  memcpy(h.nc, nc, sizeof nc);
  struct iovec part = {&h.f, sizeof h.f};
  ASSERT_EQ(tutti__auth_proof(secret, TUTTI_AUTH_CONNECTOR, na, h.nc, &part, 1, h.proof),
            TUTTI_SUCCESS);
  char why[320];
  ASSERT_EQ(tutti__rdv_hello_parse(secret, na, &h, sizeof h, &out, why, sizeof why), 1);
  ASSERT_MEM_EQ(&out, &h, sizeof h);
  ASSERT_EQ(tutti__rdv_hello_parse(secret, na, &h, sizeof h - 1, &out, why, sizeof why), 0);
  /* A replay answers another challenge: its proof does not cover this nonce. */
  ASSERT_EQ(tutti__rdv_hello_parse(secret, nc, &h, sizeof h, &out, why, sizeof why), 0);
  ASSERT(strstr(why, "job secret") != NULL);
  /* A proven hello with a world size out of range is still refused. */
  h.f.nranks = TUTTI_MAX_RANKS + 1;
  ASSERT_EQ(tutti__auth_proof(secret, TUTTI_AUTH_CONNECTOR, na, h.nc, &part, 1, h.proof),
            TUTTI_SUCCESS);
  ASSERT_EQ(tutti__rdv_hello_parse(secret, na, &h, sizeof h, &out, why, sizeof why), 0);
  ASSERT(strstr(why, "world size") != NULL);
}

/* A parent's answer in the tree: verdict, table on success, proof over the verdict. */
static uint8_t *signed_verdict(int n, tutti_result_t status, const char *reason, size_t *len) {
  tree_verdict_t v;
  memset(&v, 0, sizeof v);
  v.magic = TREE_MAGIC;
  v.status = status;
  v.job_id = 77;
  snprintf(v.reason, sizeof v.reason, "%s", reason);
  size_t tb = status == TUTTI_SUCCESS ? (size_t)n * sizeof(tutti_rdv_entry_t) : 0;
  *len = sizeof v + tb + TUTTI_AUTH_PROOF_BYTES;
  uint8_t *buf = calloc(1, *len);
  tutti_rdv_entry_t *t = make_table(n);
  memcpy(buf, &v, sizeof v);
  memcpy(buf + sizeof v, t, tb);
  struct iovec part = {&v, sizeof v};
  ASSERT_EQ(tutti__auth_proof(secret, TUTTI_AUTH_ACCEPTOR, na, nc, &part, 1, buf + sizeof v + tb),
            TUTTI_SUCCESS);
  free(t);
  return buf;
}

TEST(tree_verdict_checks) {
  keys();
  uint8_t digest[32];
  tutti_rdv_entry_t *ref = make_table(5), *t;
  ASSERT_EQ(tutti__auth_digest(ref, 5 * sizeof *ref, digest), TUTTI_SUCCESS);
  free(ref);
  size_t len;
  int relayed;
  char err[320];
  uint8_t *buf = signed_verdict(5, TUTTI_SUCCESS, "", &len);
  ASSERT_EQ(tutti__tree_verdict_bytes(buf, sizeof(tree_verdict_t), 5), len);
  ASSERT_EQ(tutti__tree_verdict_parse(secret, na, nc, 77, 5, digest, buf, len, &t, &relayed,
                                      err, sizeof err),
            TUTTI_SUCCESS);
  ASSERT_EQ(t[4].pid, 1004);
  free(t);
  /* Another job, a truncation, or a table that is not the one the server signed: refused. */
  ASSERT_EQ(tutti__tree_verdict_parse(secret, na, nc, 78, 5, digest, buf, len, &t, &relayed,
                                      err, sizeof err),
            TUTTI_ERR_REMOTE);
  ASSERT_EQ(tutti__tree_verdict_parse(secret, na, nc, 77, 5, digest, buf, len - 1, &t,
                                      &relayed, err, sizeof err),
            TUTTI_ERR_REMOTE);
  buf[sizeof(tree_verdict_t) + 3] ^= 1; /* a parent altering the table, proof and all */
  ASSERT_EQ(tutti__tree_verdict_parse(secret, na, nc, 77, 5, digest, buf, len, &t, &relayed,
                                      err, sizeof err),
            TUTTI_ERR_REMOTE);
  ASSERT(strstr(err, "digest") != NULL && relayed == 0 && t == NULL);
  free(buf);
  /* A proven failure is passed on as the parent said it. */
  buf = signed_verdict(5, TUTTI_ERR_TIMEOUT, "rank 1 (pid 9 on h) stalled", &len);
  ASSERT_EQ(tutti__tree_verdict_bytes(buf, sizeof(tree_verdict_t), 5), len);
  ASSERT_EQ(tutti__tree_verdict_parse(secret, na, nc, 77, 5, digest, buf, len, &t, &relayed,
                                      err, sizeof err),
            TUTTI_ERR_TIMEOUT);
  ASSERT(relayed == 1 && !strcmp(err, "rank 1 (pid 9 on h) stalled"));
  /* Unproven (another secret), it is not believed. */
  secret[0] ^= 1;
  ASSERT_EQ(tutti__tree_verdict_parse(secret, na, nc, 77, 5, digest, buf, len, &t, &relayed,
                                      err, sizeof err),
            TUTTI_ERR_REMOTE);
  ASSERT(relayed == 0);
  free(buf);
}

TEST(header_check_names_the_field) {
  tutti_msg_hdr_t want = {TUTTI_MSG_MAGIC, 9, 64, {1, 8, 0, 0, 0, 16}}, got = want;
  char msg[512];
  ASSERT_EQ(tutti__hdr_check(&want, &got, sizeof got, "rank 2", msg, sizeof msg), TUTTI_SUCCESS);
  ASSERT_EQ(tutti__hdr_check(&want, &got, sizeof got - 1, "rank 2", msg, sizeof msg),
            TUTTI_ERR_REMOTE);
  got.fp.count = 15;
  ASSERT_EQ(tutti__hdr_check(&want, &got, sizeof got, "rank 2", msg, sizeof msg),
            TUTTI_ERR_INVALID_USAGE);
  ASSERT(strstr(msg, "count 15") && strstr(msg, "count 16") && strstr(msg, "rank 2"));
  got = want;
  got.fp.dtype = 200; /* out of every table: named "?", never read past the table */
  ASSERT_EQ(tutti__hdr_check(&want, &got, sizeof got, "rank 2", msg, sizeof msg),
            TUTTI_ERR_INVALID_USAGE);
  ASSERT(strstr(msg, "dtype ?") != NULL);
  got = want;
  got.magic = 0x12345678;
  ASSERT_EQ(tutti__hdr_check(&want, &got, sizeof got, "rank 2", msg, sizeof msg),
            TUTTI_ERR_REMOTE);
  got.magic = TUTTI_ABORT_MAGIC;
  got.seq = TUTTI_ERR_INVALID_USAGE;
  ASSERT_EQ(tutti__hdr_check(&want, &got, sizeof got, "rank 2", msg, sizeof msg),
            TUTTI_ERR_INVALID_USAGE);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
