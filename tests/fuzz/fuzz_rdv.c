/* libFuzzer target: the rendezvous messages (bootstrap/rdv_wire.c). The first byte picks:
 *   0: the rest is the challenge a rank reads from the rendezvous;
 *   1: the rest is a hello the rendezvous reads, as it arrived;
 *   2: the same, re-signed with the fuzz secret so the checks after the proof are reached;
 *   3: byte 1 is the rank's world size (signed), the rest the answer it reads, as it arrived;
 *   4: the same, laid out at the length tutti__rdv_answer_bytes asks for and re-signed (its
 *      digest made the table's, so the checks after it are reached);
 *   5: byte 1 is the world size, the rest a parent's answer in the tree, as it arrived;
 *   6: the same, laid out at the length tutti__tree_verdict_bytes asks for and re-signed.
 * Signed inputs use fuzz_secret, fuzz_na and fuzz_nc (fuzz_common.h), as the seeds do. */
#include <stddef.h>

#include "bootstrap/rdv_wire.h"
#include "fuzz_common.h"

static void fuzz_challenge(const uint8_t *data, size_t size) {
  uint8_t na[TUTTI_AUTH_NONCE_BYTES];
  char err[256];
  tutti_result_t res = tutti__rdv_challenge_parse(data, size, na, err, sizeof err);
  if (res == TUTTI_SUCCESS) {
    rdv_challenge_t ch;
    FUZZ_CHECK(size >= sizeof ch);
    memcpy(&ch, data, sizeof ch);
    FUZZ_CHECK(ch.magic == RDV_MAGIC && ch.version == RDV_VERSION);
    FUZZ_CHECK(!memcmp(na, ch.na, sizeof na));
  } else {
    FUZZ_CHECK(res == TUTTI_ERR_REMOTE && fuzz_terminated(err, sizeof err));
  }
}

static void fuzz_hello(const uint8_t *data, size_t size, int resign) {
  rdv_hello_t in;
  const void *buf = data;
  size_t len = size;
  if (resign) {
    memset(&in, 0, sizeof in);
    memcpy(&in, data, size < sizeof in ? size : sizeof in);
    struct iovec part = {&in.f, sizeof in.f};
    FUZZ_CHECK(tutti__auth_proof(fuzz_secret, TUTTI_AUTH_CONNECTOR, fuzz_na, in.nc, &part, 1,
                                 in.proof) == TUTTI_SUCCESS);
    buf = &in;
    len = sizeof in;
  }
  rdv_hello_t out;
  char why[320];
  memset(why, 'x', sizeof why);
  int ok = tutti__rdv_hello_parse(fuzz_secret, fuzz_na, buf, len, &out, why, sizeof why);
  if (resign) {
    FUZZ_CHECK(ok == (in.f.magic == RDV_MAGIC && in.f.version == RDV_VERSION &&
                      in.f.nranks >= 1 && in.f.nranks <= TUTTI_MAX_RANKS));
  }
  if (ok) {
    FUZZ_CHECK(len >= sizeof out && !memcmp(&out, buf, sizeof out));
    FUZZ_CHECK(out.f.nranks >= 1 && out.f.nranks <= TUTTI_MAX_RANKS);
  } else {
    FUZZ_CHECK(fuzz_terminated(why, sizeof why) && why[0] != '\0');
  }
}

/* Signs an answer laid out in buf (len bytes: reply, table if any, proof) as the server does,
 * its digest first made the table's (when it has one). */
static void sign_answer(uint8_t *buf, size_t len, int with_table) {
  rdv_reply_t r;
  memcpy(&r, buf, sizeof r);
  r.reason[sizeof r.reason - 1] = '\0'; /* the server's snprintf always leaves it so */
  size_t table_bytes = len - sizeof r - TUTTI_AUTH_PROOF_BYTES;
  if (with_table)
    FUZZ_CHECK(tutti__auth_digest(buf + sizeof r, table_bytes, r.digest) == TUTTI_SUCCESS);
  memcpy(buf, &r, sizeof r);
  struct iovec part = {&r, sizeof r};
  FUZZ_CHECK(tutti__auth_proof(fuzz_secret, TUTTI_AUTH_ACCEPTOR, fuzz_na, fuzz_nc, &part, 1,
                               buf + len - TUTTI_AUTH_PROOF_BYTES) == TUTTI_SUCCESS);
}

static void fuzz_answer(const uint8_t *data, size_t size, int resign) {
  if (size < 1) return;
  int nranks = (int8_t)data[0];
  data++, size--;
  uint8_t *buf = NULL;
  const uint8_t *in = data;
  size_t len = size;
  rdv_reply_t r;
  memset(&r, 0, sizeof r);
  memcpy(&r, data, size < sizeof r ? size : sizeof r);
  /* Re-signed answers are laid out from a whole reply, as the rank reads one before asking. */
  size_t want = resign ? tutti__rdv_answer_bytes(&r, sizeof r, nranks)
                       : tutti__rdv_answer_bytes(data, size, nranks);
  FUZZ_CHECK(want >= sizeof(rdv_reply_t));
  int with_table = r.magic == RDV_MAGIC && r.status == TUTTI_SUCCESS && r.nranks == nranks &&
                   nranks > 0 && r.parent == -1;
  /* The answer is never longer than this rank's own world size makes it. */
  FUZZ_CHECK(want <= sizeof r + (nranks > 0 ? (size_t)nranks : 0) * sizeof(tutti_rdv_entry_t) +
                         TUTTI_AUTH_PROOF_BYTES);
  if (resign) {
    len = want;
    buf = calloc(1, len);
    memcpy(buf, data, size < len ? size : len);
    if (len > sizeof r) sign_answer(buf, len, with_table);
    in = buf;
    memcpy(&r, buf, sizeof r);
  }
  tutti_rdv_entry_t *table = NULL;
  rdv_reply_t out;
  char err[256];
  memset(err, 'x', sizeof err);
  tutti_result_t res = tutti__rdv_answer_parse(fuzz_secret, fuzz_na, fuzz_nc, nranks, in, len,
                                               &out, &table, err, sizeof err);
  if (res == TUTTI_SUCCESS) {
    FUZZ_CHECK(out.job_id == r.job_id && out.parent == r.parent);
    FUZZ_CHECK(out.parent >= -1 && out.parent < nranks);
    FUZZ_CHECK((table != NULL) == with_table);
    for (int i = 0; table && i < nranks; i++) {
      FUZZ_CHECK(fuzz_terminated(table[i].host, sizeof table[i].host));
      FUZZ_CHECK(fuzz_terminated(table[i].boot_id, sizeof table[i].boot_id));
      FUZZ_CHECK(!memcmp(&table[i], in + sizeof r + (size_t)i * sizeof *table,
                         offsetof(tutti_rdv_entry_t, host)));
    }
    free(table);
  } else {
    FUZZ_CHECK(table == NULL);
    FUZZ_CHECK(fuzz_terminated(err, sizeof err));
    if (resign && r.magic == RDV_MAGIC && len > sizeof r) {
      if (r.status == TUTTI_SUCCESS && r.nranks != nranks)
        FUZZ_CHECK(res == TUTTI_ERR_INVALID_USAGE);
      else if (r.status == TUTTI_SUCCESS && nranks < 1)
        FUZZ_CHECK(res == TUTTI_ERR_INVALID_ARGUMENT);
      else if (r.status == TUTTI_SUCCESS) /* only a parent out of range is left to refuse */
        FUZZ_CHECK(res == TUTTI_ERR_REMOTE && (r.parent < -1 || r.parent >= nranks));
      else /* a proven refusal comes back as the server said, if it is a known result */
        FUZZ_CHECK(res == (r.status > 0 && r.status <= TUTTI_ERR_INTERNAL
                               ? (tutti_result_t)r.status : TUTTI_ERR_REMOTE));
    }
  }
  free(buf);
}

/* A parent's answer in the tree. Re-signed ones carry the table whose digest the child
 * expects (the first nranks entries' worth of the input, laid out), so success is reachable. */
static void fuzz_verdict(const uint8_t *data, size_t size, int resign) {
  if (size < 1) return;
  int nranks = (int8_t)data[0];
  data++, size--;
  tree_verdict_t v;
  memset(&v, 0, sizeof v);
  memcpy(&v, data, size < sizeof v ? size : sizeof v);
  size_t want = resign ? tutti__tree_verdict_bytes(&v, sizeof v, nranks)
                       : tutti__tree_verdict_bytes(data, size, nranks);
  FUZZ_CHECK(want >= sizeof v);
  FUZZ_CHECK(want <= sizeof v + (nranks > 0 ? (size_t)nranks : 0) * sizeof(tutti_rdv_entry_t) +
                         TUTTI_AUTH_PROOF_BYTES);
  const uint8_t *in = data;
  size_t len = size;
  uint8_t *buf = NULL;
  uint8_t digest[TUTTI_AUTH_PROOF_BYTES] = {0};
  int with_table = v.magic == TREE_MAGIC && v.status == TUTTI_SUCCESS && nranks > 0;
  if (resign) {
    len = want;
    buf = calloc(1, len);
    memcpy(buf, data, size < len ? size : len);
    v.reason[sizeof v.reason - 1] = '\0';
    v.job_id = 77;
    memcpy(buf, &v, sizeof v);
    size_t tb = len - sizeof v - TUTTI_AUTH_PROOF_BYTES;
    if (with_table) FUZZ_CHECK(tutti__auth_digest(buf + sizeof v, tb, digest) == TUTTI_SUCCESS);
    struct iovec part = {&v, sizeof v};
    FUZZ_CHECK(tutti__auth_proof(fuzz_secret, TUTTI_AUTH_ACCEPTOR, fuzz_na, fuzz_nc, &part, 1,
                                 buf + len - TUTTI_AUTH_PROOF_BYTES) == TUTTI_SUCCESS);
    in = buf;
  }
  tutti_rdv_entry_t *table = NULL;
  int relayed = -1;
  char err[320];
  memset(err, 'x', sizeof err);
  tutti_result_t res = tutti__tree_verdict_parse(fuzz_secret, fuzz_na, fuzz_nc, 77, nranks,
                                                 digest, in, len, &table, &relayed, err,
                                                 sizeof err);
  FUZZ_CHECK(relayed == 0 || relayed == 1);
  if (res == TUTTI_SUCCESS) {
    FUZZ_CHECK(table != NULL && with_table && !relayed);
    for (int i = 0; i < nranks; i++)
      FUZZ_CHECK(fuzz_terminated(table[i].host, sizeof table[i].host));
    free(table);
  } else {
    FUZZ_CHECK(table == NULL && fuzz_terminated(err, sizeof err));
    if (resign && v.magic == TREE_MAGIC && nranks > 0)
      FUZZ_CHECK(relayed == (v.status != TUTTI_SUCCESS));
  }
  if (resign && with_table) FUZZ_CHECK(res == TUTTI_SUCCESS);
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  switch (data[0] % 7) {
  case 0: fuzz_challenge(data + 1, size - 1); break;
  case 1: fuzz_hello(data + 1, size - 1, 0); break;
  case 2: fuzz_hello(data + 1, size - 1, 1); break;
  case 3: fuzz_answer(data + 1, size - 1, 0); break;
  case 4: fuzz_answer(data + 1, size - 1, 1); break;
  case 5: fuzz_verdict(data + 1, size - 1, 0); break;
  default: fuzz_verdict(data + 1, size - 1, 1); break;
  }
  return 0;
}
