/*
 * The bootstrap's messages on the wire and their parsers: the rendezvous's (a rank and the
 * server) and the distribution tree's (a rank and its parent, tree.c). The parsers take bytes and a
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
#define RDV_VERSION 3u        /* 2: authenticated handshake; 3: the table goes down a tree */
#define TREE_MAGIC 0x74747462u /* "tttb" */

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
  uint32_t tree_ip;   /* this rank's tree listener (tree.c), network order */
  uint16_t tree_port; /* network order */
  uint16_t pad;       /* zero */
} rdv_hello_fields_t;

typedef struct rdv_hello {
  rdv_hello_fields_t f;
  uint8_t nc[TUTTI_AUTH_NONCE_BYTES];
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES]; /* connector's, over f */
} rdv_hello_t;

/* The answer: this, then the table of nranks entries if this rank is the tree's root (a success
 * with parent -1), then the server's proof over this (and so over the table's digest). Every
 * other rank gets the table from its parent in the tree and checks it against digest. */
typedef struct rdv_reply {
  uint32_t magic;
  int32_t status; /* a tutti_result_t */
  uint64_t job_id;
  int32_t nranks;
  int32_t parent;   /* success: this rank's parent in the tree; -1: the root */
  uint64_t tree_ns; /* success: the tree's time budget from this answer (tree.c) */
  uint8_t digest[TUTTI_AUTH_PROOF_BYTES]; /* success: SHA-256 of the table */
  tutti_rdv_entry_t parent_entry;         /* success, not the root: the parent's, to name it */
  uint32_t parent_tree_ip;                /* network order */
  uint16_t parent_tree_port;              /* network order */
  uint16_t pad;
  char reason[300]; /* a refusal's sentence */
} rdv_reply_t;
_Static_assert(sizeof(rdv_reply_t) == 488, "no hidden padding goes into the proof");

/* ---- The tree (tree.c): a rank connects to its parent's tree listener. ---------------------
 * parent -> child: rdv_challenge_t with TREE_MAGIC and a fresh nonce Na;
 * child -> parent: tree_hello_t, proving the job secret over its rank and the job id;
 * parent -> child: tree_verdict_t, then the table if the verdict is a success, then the
 *                  parent's proof over the verdict. The table is believed only if it hashes to
 *                  the digest the server signed for this rank, so no parent can alter it. */
typedef struct tree_hello_fields {
  uint32_t magic;
  int32_t rank;
  uint64_t job_id;
} tree_hello_fields_t;

typedef struct tree_hello {
  tree_hello_fields_t f;
  uint8_t nc[TUTTI_AUTH_NONCE_BYTES];
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES];
} tree_hello_t;

typedef struct tree_verdict {
  uint32_t magic;
  int32_t status; /* a tutti_result_t: the parent has the table, or why it has not */
  uint64_t job_id;
  char reason[304];
} tree_verdict_t;

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
 * exactly nranks addressed to the tree's root, and the proof. Just the reply when it is too short to tell or is garbage,
 * so that tutti__rdv_answer_parse then says why. Nothing read decides more than this rank's
 * own nranks entries. */
size_t tutti__rdv_answer_bytes(const void *hdr, size_t hdr_len, int nranks);

/* A rank's side: checks the whole answer (len bytes at buf) to the hello with nonces na (the
 * server's) and nc (this rank's). On success *reply is the server's reply (strings
 * NUL-terminated) and, for the tree's root (reply->parent == -1), *table a malloc'd array of
 * nranks entries, each string NUL-terminated, that hashes to reply->digest; for every other
 * rank *table is NULL. A refusal the server proved comes back as its result and reason; an
 * answer that is garbage, truncated or unproven as TUTTI_ERR_REMOTE (TUTTI_ERR_INVALID_USAGE
 * for another world size). */
tutti_result_t tutti__rdv_answer_parse(const uint8_t secret[TUTTI_SECRET_BYTES],
                                       const uint8_t na[TUTTI_AUTH_NONCE_BYTES],
                                       const uint8_t nc[TUTTI_AUTH_NONCE_BYTES], int nranks,
                                       const void *buf, size_t len, rdv_reply_t *reply,
                                       tutti_rdv_entry_t **table, char *err, size_t errlen);

/* A child's side: checks its parent's challenge (len bytes at buf) and copies its nonce into
 * na. TUTTI_ERR_REMOTE, with the reason in err, if it is not a tutti tree challenge. */
tutti_result_t tutti__tree_challenge_parse(const void *buf, size_t len,
                                           uint8_t na[TUTTI_AUTH_NONCE_BYTES], char *err,
                                           size_t errlen);

/* A parent's side: checks a child's hello (len bytes at buf) answering challenge nonce na for
 * job job_id. Returns 1 and fills *out when it is complete and proves the job secret; else 0
 * with the reason in why. Whether the rank is this parent's child is the caller's to check. */
int tutti__tree_hello_parse(const uint8_t secret[TUTTI_SECRET_BYTES],
                            const uint8_t na[TUTTI_AUTH_NONCE_BYTES], uint64_t job_id,
                            const void *buf, size_t len, tree_hello_t *out, char *why,
                            size_t whylen);

/* A child's side: the length of the parent's whole answer whose first hdr_len bytes are at
 * hdr: the verdict, the table of nranks entries when it is a success, and the proof. Just the
 * verdict when it is too short to tell or is garbage. */
size_t tutti__tree_verdict_bytes(const void *hdr, size_t hdr_len, int nranks);

/* A child's side: checks the parent's whole answer (len bytes at buf) to the hello with nonces
 * na (the parent's) and nc (this rank's), for job job_id. On a success whose table hashes to
 * digest (the server's word), *table is a malloc'd array of nranks entries with terminated
 * strings. A failure the parent proved comes back as its result and its reason (which names
 * the rank the tree broke at), with *relayed set to 1; anything else as TUTTI_ERR_REMOTE (or
 * TUTTI_ERR_INVALID_ARGUMENT for nranks < 1) with the reason in err and *relayed 0. */
tutti_result_t tutti__tree_verdict_parse(const uint8_t secret[TUTTI_SECRET_BYTES],
                                         const uint8_t na[TUTTI_AUTH_NONCE_BYTES],
                                         const uint8_t nc[TUTTI_AUTH_NONCE_BYTES],
                                         uint64_t job_id, int nranks,
                                         const uint8_t digest[TUTTI_AUTH_PROOF_BYTES],
                                         const void *buf, size_t len,
                                         tutti_rdv_entry_t **table, int *relayed, char *err,
                                         size_t errlen);

#endif
