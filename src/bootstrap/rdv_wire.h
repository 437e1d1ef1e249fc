/*
 * The rendezvous's messages on the wire and their parsers. The parsers take bytes and a
 * length and do no I/O, so the rendezvous (rendezvous.c) and the fuzzers (tests/fuzz/) run
 * the same code on the same bytes.
 */
#ifndef TUTTI_RDV_WIRE_H
#define TUTTI_RDV_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "bootstrap/bootstrap.h"
#include "core/auth.h"

#define RDV_MAGIC 0x74747472u /* "tttr" */
#define RDV_VERSION 2u        /* 2: authenticated handshake */

_Static_assert(TUTTI_SECRET_BYTES == TUTTI_AUTH_KEY_BYTES, "the job secret is the HMAC key");

/* The server's first words on every connection. */
typedef struct rdv_challenge {
  uint32_t magic;
  uint32_t version;
  uint8_t na[TUTTI_AUTH_NONCE_BYTES];
} rdv_challenge_t;

/* What a rank says about itself; its proof covers exactly these bytes. */
typedef struct rdv_hello_fields {
  uint32_t magic;
  uint32_t version;
  int32_t nranks;
  int32_t rank;
  tutti_rdv_entry_t entry;
} rdv_hello_fields_t;

typedef struct rdv_hello {
  rdv_hello_fields_t f;
  uint8_t nc[TUTTI_AUTH_NONCE_BYTES];
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES]; /* connector's, over f */
} rdv_hello_t;

/* The answer: this, then on success the table of nranks entries, then the server's proof over
 * this and the table's SHA-256. */
typedef struct rdv_reply {
  uint32_t magic;
  int32_t status; /* a tutti_result_t */
  uint64_t job_id;
  int32_t nranks;
  char reason[300];
} rdv_reply_t;

/* A rank's side: checks the server's challenge (len bytes at buf) and copies its nonce into
 * na. TUTTI_ERR_REMOTE, with the reason in err, if it is not a tutti rendezvous challenge. */
tutti_result_t tutti__rdv_challenge_parse(const void *buf, size_t len,
                                          uint8_t na[TUTTI_AUTH_NONCE_BYTES], char *err,
                                          size_t errlen);

/* The server's side: checks a hello (len bytes at buf) answering challenge nonce na. Returns 1
 * and fills *out when it is complete, speaks this protocol, proves the job secret and claims
 * a world size within 1..TUTTI_MAX_RANKS; else returns 0 with the reason in why. Rank and
 * world size are left for the server to check against the other ranks. */
int tutti__rdv_hello_parse(const uint8_t secret[TUTTI_SECRET_BYTES],
                           const uint8_t na[TUTTI_AUTH_NONCE_BYTES], const void *buf,
                           size_t len, rdv_hello_t *out, char *why, size_t whylen);

/* A rank's side: the length of the whole answer whose first hdr_len bytes are at hdr, for a
 * rank that expects nranks entries: the reply, the table when the reply is a success for
 * exactly nranks, and the proof. Just the reply when it is too short to tell or is garbage,
 * so that tutti__rdv_answer_parse then says why. Nothing read decides more than this rank's
 * own nranks entries. */
size_t tutti__rdv_answer_bytes(const void *hdr, size_t hdr_len, int nranks);

/* A rank's side: checks the whole answer (len bytes at buf) to the hello with nonces na (the
 * server's) and nc (this rank's). On success *table is a malloc'd array of nranks entries,
 * each string NUL-terminated, and *job_id the job's id. A refusal the server proved comes back
 * as its result and reason; an answer that is garbage, truncated or unproven as
 * TUTTI_ERR_REMOTE (TUTTI_ERR_INVALID_USAGE for another world size). */
tutti_result_t tutti__rdv_answer_parse(const uint8_t secret[TUTTI_SECRET_BYTES],
                                       const uint8_t na[TUTTI_AUTH_NONCE_BYTES],
                                       const uint8_t nc[TUTTI_AUTH_NONCE_BYTES], int nranks,
                                       const void *buf, size_t len, tutti_rdv_entry_t **table,
                                       uint64_t *job_id, char *err, size_t errlen);

#endif
