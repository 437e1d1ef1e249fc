/* Parsers of the bootstrap's messages (see rdv_wire.h): bytes in, verdict out, no I/O. */
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
         nranks > 0 && r->parent == -1;
}

size_t tutti__rdv_answer_bytes(const void *hdr, size_t hdr_len, int nranks) {
  rdv_reply_t r;
  if (hdr_len < sizeof r) return sizeof r;
  memcpy(&r, hdr, sizeof r);
  if (r.magic != RDV_MAGIC) return sizeof r;
  if (r.status == TUTTI_SUCCESS && (r.nranks != nranks || nranks < 1)) return sizeof r;
  return sizeof r + (carries_table(&r, nranks) ? (size_t)nranks * sizeof(tutti_rdv_entry_t)
                                               : 0) +
         TUTTI_AUTH_PROOF_BYTES;
}

/* Terminates every string of n entries, so no reader runs off one. */
static void terminate(tutti_rdv_entry_t *t, int n) {
  for (int i = 0; i < n; i++) {
    t[i].host[TUTTI_HOST_BYTES - 1] = '\0';
    t[i].boot_id[sizeof t[i].boot_id - 1] = '\0';
  }
}

/* A malloc'd copy of the n-entry table at bytes if it hashes to digest, else NULL and why. */
static tutti_result_t checked_table(const uint8_t *bytes, int n,
                                    const uint8_t digest[TUTTI_AUTH_PROOF_BYTES],
                                    tutti_rdv_entry_t **table, char *err, size_t errlen) {
  size_t table_bytes = (size_t)n * sizeof(tutti_rdv_entry_t);
  uint8_t got[TUTTI_AUTH_PROOF_BYTES];
  if (tutti__auth_digest(bytes, table_bytes, got) != TUTTI_SUCCESS) {
    snprintf(err, errlen, "cannot hash the address table (libcrypto failed)");
    return TUTTI_ERR_INTERNAL;
  }
  if (memcmp(got, digest, sizeof got) != 0) {
    snprintf(err, errlen, "the address table does not hash to the digest the rendezvous "
             "signed: it was altered on the way");
    return TUTTI_ERR_REMOTE;
  }
  tutti_rdv_entry_t *t = malloc(table_bytes);
  if (!t) {
    snprintf(err, errlen, "out of memory for the address table of %d ranks", n);
    return TUTTI_ERR_SYSTEM;
  }
  memcpy(t, bytes, table_bytes);
  terminate(t, n);
  *table = t;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__rdv_answer_parse(const uint8_t secret[TUTTI_SECRET_BYTES],
                                       const uint8_t na[TUTTI_AUTH_NONCE_BYTES],
                                       const uint8_t nc[TUTTI_AUTH_NONCE_BYTES], int nranks,
                                       const void *buf, size_t len, rdv_reply_t *reply,
                                       tutti_rdv_entry_t **table, char *err, size_t errlen) {
  const uint8_t *bytes = buf;
  rdv_reply_t r;
  *table = NULL;
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
  size_t table_bytes = carries_table(&r, nranks) ? (size_t)nranks * sizeof(tutti_rdv_entry_t)
                                                 : 0;
  if (len != sizeof r + table_bytes + TUTTI_AUTH_PROOF_BYTES) {
    snprintf(err, errlen, "the rendezvous answer has %zu bytes, not %zu", len,
             sizeof r + table_bytes + TUTTI_AUTH_PROOF_BYTES);
    return TUTTI_ERR_REMOTE;
  }
  const uint8_t *tbytes = bytes + sizeof r, *proof = tbytes + table_bytes;
  struct iovec part = {&r, sizeof r};
  if (!tutti__auth_verify(secret, TUTTI_AUTH_ACCEPTOR, na, nc, &part, 1, proof)) {
    snprintf(err, errlen, "the rendezvous did not prove it knows the job secret: it is not "
             "this job's rendezvous");
    return TUTTI_ERR_REMOTE;
  }
  if (!ok) {
    snprintf(err, errlen, "%s", r.reason);
    return r.status > 0 && r.status <= TUTTI_ERR_INTERNAL ? (tutti_result_t)r.status
                                                          : TUTTI_ERR_REMOTE;
  }
  if (r.parent < -1 || r.parent >= nranks) {
    snprintf(err, errlen, "the rendezvous named rank %d as this rank's parent of %d", r.parent,
             nranks);
    return TUTTI_ERR_REMOTE;
  }
  if (table_bytes) TRY(checked_table(tbytes, nranks, r.digest, table, err, errlen));
  terminate(&r.parent_entry, 1);
  *reply = r;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__tree_challenge_parse(const void *buf, size_t len,
                                           uint8_t na[TUTTI_AUTH_NONCE_BYTES], char *err,
                                           size_t errlen) {
  rdv_challenge_t ch;
  if (len >= sizeof ch) memcpy(&ch, buf, sizeof ch);
  if (len < sizeof ch || ch.magic != TREE_MAGIC || ch.version != RDV_VERSION) {
    snprintf(err, errlen, "its tree listener did not answer as a tutti bootstrap tree of this "
             "version");
    return TUTTI_ERR_REMOTE;
  }
  memcpy(na, ch.na, TUTTI_AUTH_NONCE_BYTES);
  return TUTTI_SUCCESS;
}

int tutti__tree_hello_parse(const uint8_t secret[TUTTI_SECRET_BYTES],
                            const uint8_t na[TUTTI_AUTH_NONCE_BYTES], uint64_t job_id,
                            const void *buf, size_t len, tree_hello_t *out, char *why,
                            size_t whylen) {
  tree_hello_t h;
  if (len < sizeof h) {
    snprintf(why, whylen, "no complete hello: %zu of %zu bytes", len, sizeof h);
    return 0;
  }
  memcpy(&h, buf, sizeof h);
  if (h.f.magic != TREE_MAGIC) {
    snprintf(why, whylen, "it does not speak the tutti bootstrap tree protocol");
    return 0;
  }
  struct iovec part = {&h.f, sizeof h.f};
  if (!tutti__auth_verify(secret, TUTTI_AUTH_CONNECTOR, na, h.nc, &part, 1, h.proof)) {
    snprintf(why, whylen, "it did not prove it knows the job secret (a stranger, a rank "
             "of another job, or a replayed handshake)");
    return 0;
  }
  if (h.f.job_id != job_id) {
    snprintf(why, whylen, "it speaks for another job (id %016llx)",
             (unsigned long long)h.f.job_id);
    return 0;
  }
  *out = h;
  return 1;
}

size_t tutti__tree_verdict_bytes(const void *hdr, size_t hdr_len, int nranks) {
  tree_verdict_t v;
  if (hdr_len < sizeof v) return sizeof v;
  memcpy(&v, hdr, sizeof v);
  if (v.magic != TREE_MAGIC) return sizeof v;
  int with_table = v.status == TUTTI_SUCCESS && nranks > 0;
  return sizeof v + (with_table ? (size_t)nranks * sizeof(tutti_rdv_entry_t) : 0) +
         TUTTI_AUTH_PROOF_BYTES;
}

tutti_result_t tutti__tree_verdict_parse(const uint8_t secret[TUTTI_SECRET_BYTES],
                                         const uint8_t na[TUTTI_AUTH_NONCE_BYTES],
                                         const uint8_t nc[TUTTI_AUTH_NONCE_BYTES],
                                         uint64_t job_id, int nranks,
                                         const uint8_t digest[TUTTI_AUTH_PROOF_BYTES],
                                         const void *buf, size_t len,
                                         tutti_rdv_entry_t **table, int *relayed, char *err,
                                         size_t errlen) {
  const uint8_t *bytes = buf;
  tree_verdict_t v;
  *table = NULL;
  *relayed = 0;
  if (len < sizeof v) {
    snprintf(err, errlen, "its answer is truncated (%zu bytes)", len);
    return TUTTI_ERR_REMOTE;
  }
  memcpy(&v, bytes, sizeof v);
  v.reason[sizeof v.reason - 1] = '\0';
  if (v.magic != TREE_MAGIC) {
    snprintf(err, errlen, "it answered with garbage");
    return TUTTI_ERR_REMOTE;
  }
  if (nranks < 1) {
    snprintf(err, errlen, "a world size of %d has no address table", nranks);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  int ok = v.status == TUTTI_SUCCESS;
  size_t table_bytes = ok ? (size_t)nranks * sizeof(tutti_rdv_entry_t) : 0;
  if (len != sizeof v + table_bytes + TUTTI_AUTH_PROOF_BYTES) {
    snprintf(err, errlen, "its answer has %zu bytes, not %zu", len,
             sizeof v + table_bytes + TUTTI_AUTH_PROOF_BYTES);
    return TUTTI_ERR_REMOTE;
  }
  struct iovec part = {&v, sizeof v};
  if (!tutti__auth_verify(secret, TUTTI_AUTH_ACCEPTOR, na, nc, &part, 1,
                          bytes + sizeof v + table_bytes) ||
      v.job_id != job_id) {
    snprintf(err, errlen, "its answer does not prove the job secret for this job");
    return TUTTI_ERR_REMOTE;
  }
  if (!ok) {
    snprintf(err, errlen, "%s", v.reason);
    *relayed = 1;
    return v.status > 0 && v.status <= TUTTI_ERR_INTERNAL ? (tutti_result_t)v.status
                                                          : TUTTI_ERR_REMOTE;
  }
  return checked_table(bytes + sizeof v, nranks, digest, table, err, errlen);
}
