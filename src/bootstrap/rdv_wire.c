/* Parsers of the rendezvous messages (see rdv_wire.h): bytes in, verdict out, no I/O. */
#include "bootstrap/rdv_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tutti_result_t tutti__rdv_challenge_parse(const void *buf, size_t len,
                                          uint8_t na[TUTTI_AUTH_NONCE_BYTES], char *err,
                                          size_t errlen) {
  rdv_challenge_t ch;
  if (len >= sizeof ch) memcpy(&ch, buf, sizeof ch);
  if (len < sizeof ch || ch.magic != RDV_MAGIC || ch.version != RDV_VERSION) {
    snprintf(err, errlen, "the rendezvous address is not a tutti rendezvous of this version");
    return TUTTI_ERR_REMOTE;
  }
  memcpy(na, ch.na, TUTTI_AUTH_NONCE_BYTES);
  return TUTTI_SUCCESS;
}

int tutti__rdv_hello_parse(const uint8_t secret[TUTTI_SECRET_BYTES],
                           const uint8_t na[TUTTI_AUTH_NONCE_BYTES], const void *buf,
                           size_t len, rdv_hello_t *out, char *why, size_t whylen) {
  rdv_hello_t h;
  if (len < sizeof h) {
    snprintf(why, whylen, "no complete hello: %zu of %zu bytes", len, sizeof h);
    return 0;
  }
  memcpy(&h, buf, sizeof h);
  if (h.f.magic != RDV_MAGIC || h.f.version != RDV_VERSION) {
    snprintf(why, whylen, "it does not speak the tutti rendezvous protocol version %u",
             RDV_VERSION);
    return 0;
  }
  struct iovec part = {&h.f, sizeof h.f};
  if (!tutti__auth_verify(secret, TUTTI_AUTH_CONNECTOR, na, h.nc, &part, 1, h.proof)) {
    snprintf(why, whylen, "it did not prove it knows the job secret (a stranger, a rank "
             "of another job, or a replayed handshake)");
    return 0;
  }
  if (h.f.nranks < 1 || h.f.nranks > TUTTI_MAX_RANKS) {
    snprintf(why, whylen, "it claims a world size of %d", h.f.nranks);
    return 0;
  }
  *out = h;
  return 1;
}

/* Whether the reply r announces the table of a successful rendezvous for nranks ranks. */
static int carries_table(const rdv_reply_t *r, int nranks) {
  return r->magic == RDV_MAGIC && r->status == TUTTI_SUCCESS && r->nranks == nranks &&
         nranks > 0;
}

size_t tutti__rdv_answer_bytes(const void *hdr, size_t hdr_len, int nranks) {
  rdv_reply_t r;
  if (hdr_len < sizeof r) return sizeof r;
  memcpy(&r, hdr, sizeof r);
  if (r.magic != RDV_MAGIC) return sizeof r;
  if (r.status == TUTTI_SUCCESS && !carries_table(&r, nranks)) return sizeof r;
  return sizeof r + (carries_table(&r, nranks) ? (size_t)nranks * sizeof(tutti_rdv_entry_t)
                                               : 0) +
         TUTTI_AUTH_PROOF_BYTES;
}

tutti_result_t tutti__rdv_answer_parse(const uint8_t secret[TUTTI_SECRET_BYTES],
                                       const uint8_t na[TUTTI_AUTH_NONCE_BYTES],
                                       const uint8_t nc[TUTTI_AUTH_NONCE_BYTES], int nranks,
                                       const void *buf, size_t len, tutti_rdv_entry_t **table,
                                       uint64_t *job_id, char *err, size_t errlen) {
  const uint8_t *bytes = buf;
  rdv_reply_t r;
  if (len < sizeof r) {
    snprintf(err, errlen, "the rendezvous answer is truncated (%zu bytes)", len);
    return TUTTI_ERR_REMOTE;
  }
  memcpy(&r, bytes, sizeof r);
  /* The server always ends the reason with NUL bytes, so this changes no genuine answer. */
  r.reason[sizeof r.reason - 1] = '\0';
  if (r.magic != RDV_MAGIC) {
    snprintf(err, errlen, "the rendezvous answered with garbage");
    return TUTTI_ERR_REMOTE;
  }
  int ok = r.status == TUTTI_SUCCESS;
  if (ok && r.nranks != nranks) {
    snprintf(err, errlen, "the rendezvous answered for %d ranks, not %d", r.nranks, nranks);
    return TUTTI_ERR_INVALID_USAGE;
  }
  if (ok && nranks < 1) {
    snprintf(err, errlen, "a world size of %d has no address table", nranks);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  /* The table's length is this rank's own nranks, checked above: nothing read decides it. */
  size_t table_bytes = ok ? (size_t)nranks * sizeof(tutti_rdv_entry_t) : 0;
  if (len != sizeof r + table_bytes + TUTTI_AUTH_PROOF_BYTES) {
    snprintf(err, errlen, "the rendezvous answer has %zu bytes, not %zu", len,
             sizeof r + table_bytes + TUTTI_AUTH_PROOF_BYTES);
    return TUTTI_ERR_REMOTE;
  }
  const uint8_t *tbytes = bytes + sizeof r, *proof = tbytes + table_bytes;
  uint8_t digest[TUTTI_AUTH_PROOF_BYTES];
  if (ok && tutti__auth_digest(tbytes, table_bytes, digest) != TUTTI_SUCCESS) {
    snprintf(err, errlen, "cannot hash the address table (libcrypto failed)");
    return TUTTI_ERR_INTERNAL;
  }
  struct iovec parts[2] = {{&r, sizeof r}, {digest, sizeof digest}};
  if (!tutti__auth_verify(secret, TUTTI_AUTH_ACCEPTOR, na, nc, parts, ok ? 2 : 1, proof)) {
    snprintf(err, errlen, "the rendezvous did not prove it knows the job secret: it is not "
             "this job's rendezvous");
    return TUTTI_ERR_REMOTE;
  }
  if (!ok) {
    snprintf(err, errlen, "%s", r.reason);
    return r.status > 0 && r.status <= TUTTI_ERR_INTERNAL ? (tutti_result_t)r.status
                                                          : TUTTI_ERR_REMOTE;
  }
  tutti_rdv_entry_t *t = malloc(table_bytes);
  if (!t) {
    snprintf(err, errlen, "out of memory");
    return TUTTI_ERR_SYSTEM;
  }
  memcpy(t, tbytes, table_bytes);
  for (int i = 0; i < nranks; i++) {
    t[i].host[TUTTI_HOST_BYTES - 1] = '\0';
    t[i].boot_id[sizeof t[i].boot_id - 1] = '\0';
  }
  *table = t;
  *job_id = r.job_id;
  return TUTTI_SUCCESS;
}
