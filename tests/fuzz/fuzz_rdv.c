/* libFuzzer target: the rendezvous messages (bootstrap/rdv_wire.c). The first byte picks:
 *   0: the rest is the challenge a rank reads from the rendezvous;
 *   1: the rest is a hello the rendezvous reads, as it arrived;
 *   2: the same, re-signed with the fuzz secret so the checks after the proof are reached;
 *   3: byte 1 is the rank's world size (signed), the rest the answer it reads, as it arrived;
 *   4: the same, laid out at the length tutti__rdv_answer_bytes asks for and re-signed.
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

/* Signs an answer laid out in buf (len bytes: reply, table if any, proof) as the server does. */
static void sign_answer(uint8_t *buf, size_t len, int with_table) {
  rdv_reply_t r;
  memcpy(&r, buf, sizeof r);
  r.reason[sizeof r.reason - 1] = '\0'; /* the server's snprintf always leaves it so */
  memcpy(buf, &r, sizeof r);
  uint8_t digest[TUTTI_AUTH_PROOF_BYTES] = {0};
  size_t table_bytes = len - sizeof r - TUTTI_AUTH_PROOF_BYTES;
  FUZZ_CHECK(tutti__auth_digest(buf + sizeof r, table_bytes, digest) == TUTTI_SUCCESS);
  struct iovec parts[2] = {{&r, sizeof r}, {digest, sizeof digest}};
  FUZZ_CHECK(tutti__auth_proof(fuzz_secret, TUTTI_AUTH_ACCEPTOR, fuzz_na, fuzz_nc, parts,
                               with_table ? 2 : 1,
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
                   nranks > 0;
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
  uint64_t job_id = 0;
  char err[256];
  memset(err, 'x', sizeof err);
  tutti_result_t res = tutti__rdv_answer_parse(fuzz_secret, fuzz_na, fuzz_nc, nranks, in, len,
                                               &table, &job_id, err, sizeof err);
  if (res == TUTTI_SUCCESS) {
    FUZZ_CHECK(table != NULL && with_table);
    FUZZ_CHECK(job_id == r.job_id);
    for (int i = 0; i < nranks; i++) {
      FUZZ_CHECK(fuzz_terminated(table[i].host, sizeof table[i].host));
      FUZZ_CHECK(fuzz_terminated(table[i].boot_id, sizeof table[i].boot_id));
      FUZZ_CHECK(!memcmp(&table[i], in + sizeof r + (size_t)i * sizeof *table,
                         offsetof(tutti_rdv_entry_t, host)));
    }
    free(table);
  } else {
    FUZZ_CHECK(table == NULL);
    FUZZ_CHECK(fuzz_terminated(err, sizeof err));
    if (resign && r.magic == RDV_MAGIC) {
      if (r.status == TUTTI_SUCCESS && r.nranks != nranks)
        FUZZ_CHECK(res == TUTTI_ERR_INVALID_USAGE);
      else if (r.status == TUTTI_SUCCESS)
        FUZZ_CHECK(res == TUTTI_ERR_INVALID_ARGUMENT && nranks < 1);
      else /* a proven refusal comes back as the server said, if it is a known result */
        FUZZ_CHECK(res == (r.status > 0 && r.status <= TUTTI_ERR_INTERNAL
                               ? (tutti_result_t)r.status : TUTTI_ERR_REMOTE));
    }
  }
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  switch (data[0] % 5) {
  case 0: fuzz_challenge(data + 1, size - 1); break;
  case 1: fuzz_hello(data + 1, size - 1, 0); break;
  case 2: fuzz_hello(data + 1, size - 1, 1); break;
  case 3: fuzz_answer(data + 1, size - 1, 0); break;
  default: fuzz_answer(data + 1, size - 1, 1); break;
  }
  return 0;
}
