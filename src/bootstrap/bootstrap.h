/*
 * Bootstrap: the unique id, reading rank/size/address from the environment, the rendezvous
 * where every rank joins, and the tree down which every rank receives every other rank's
 * address and host.
 */
#ifndef TUTTI_BOOTSTRAP_H
#define TUTTI_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"

#define TUTTI_SECRET_BYTES 32
#define TUTTI_MAX_RANKS 65536

/* ---- uid.c: what a tutti_unique_id_t carries ----------------------------------------- */
typedef struct tutti_uid_fields {
  uint32_t ip;   /* rendezvous address, network order */
  uint16_t port; /* network order */
  uint8_t secret[TUTTI_SECRET_BYTES];
} tutti_uid_fields_t;

void tutti__uid_pack(const tutti_uid_fields_t *f, tutti_unique_id_t *id);
/* TUTTI_ERR_INVALID_ARGUMENT if id was not made by tutti_get_unique_id. */
tutti_result_t tutti__uid_unpack(const tutti_unique_id_t *id, tutti_uid_fields_t *f);

/* ---- env.c: rank, size and rendezvous address from launcher variables ----------------- */
typedef const char *(*tutti_lookup_fn)(const char *name, void *ctx);
typedef struct tutti_env_info {
  int rank;
  int size;
  char host[256];
  uint16_t port;      /* host order */
  const char *source; /* "tutti", "torchrun", "openmpi", "mpich", "pmix" or "slurm" */
  int local_rank;     /* the launcher's local rank, or -1 when it sets none */
  const char *local_var; /* the variable it was read from */
} tutti_env_info_t;

/* Pure: reads variables through lookup, so tests can feed any environment. */
tutti_result_t tutti__env_parse(tutti_lookup_fn lookup, void *ctx, tutti_env_info_t *out,
                                char *err, size_t errlen);
/* The first host of a Slurm host list ("node[01-04],gpu1" -> "node01"); 0 on success. */
int tutti__env_first_host(const char *list, char *out, size_t outlen);

/* ---- rendezvous.c --------------------------------------------------------------------- */

/* What each rank tells the rendezvous about itself, and what it gets back for every rank. */
typedef struct tutti_rdv_entry {
  int32_t pid;
  uint32_t ip;   /* data listener, network order */
  uint16_t port; /* network order */
  uint16_t local_claim; /* the launcher's local rank + 1 (tutti_comm_init_env); 0: none */
  char host[TUTTI_HOST_BYTES];
  char boot_id[40];
} tutti_rdv_entry_t;

/* env.c: 1 (and the sentence) if a rank's launcher-given local rank is not its place among the
 * ranks of its host in the table. Every rank holds the same table, so all agree. */
int tutti__env_local_mismatch(const tutti_rdv_entry_t *table, int nranks, char *err,
                              size_t errlen);

/* Starts the rendezvous server (rdv_server.c) on an already listening socket, in a detached
 * thread that owns lfd: it serves every connection at once, collects one hello per rank,
 * checks that they agree (world size, no duplicate or out-of-range rank, the job secret), and
 * answers each with the reason it refused or, when all have joined, with the table's digest
 * and the rank's parent in the distribution tree (tree.c); only the tree's root, rank 0, gets
 * the table itself, so the server sends O(n) bytes in all. While ranks are missing it
 * logs who has joined and who has not (at 5, 10, 20 ... s, and on SIGUSR1). It ends when it
 * has answered, or at timeout_s, when it tells every waiting rank which ranks never came. */
tutti_result_t tutti__rdv_serve(int lfd, const uint8_t secret[TUTTI_SECRET_BYTES],
                                double timeout_s);

/* Connects to the rendezvous at ip:port (with retry, retrying refusals until the deadline,
 * since it may not be up yet, and saying so at growing intervals as rank) and returns the
 * socket and the local address the route to it uses. */
tutti_result_t tutti__rdv_connect(uint32_t ip, uint16_t port, int rank, int64_t deadline,
                                  int retry, int *fd, uint32_t *local_ip, char *err,
                                  size_t errlen);

/* Sends this rank's hello on fd and waits for the rendezvous's answer, until a few seconds
 * past deadline (the server's own deadline, a moment earlier, makes it answer with the names
 * of the missing ranks); then takes the table of nranks entries from its parent in the tree
 * and passes it on to its children (tree.c), and returns it (malloc'd into *table) and the
 * job id. A refusal comes back as the server's result and reason; a break in the tree as a
 * sentence naming the rank that died or stalled. Every wait ends by the deadlines above. */
tutti_result_t tutti__rdv_exchange(int fd, const uint8_t secret[TUTTI_SECRET_BYTES], int nranks,
                                   int rank, const tutti_rdv_entry_t *me, int64_t deadline,
                                   tutti_rdv_entry_t **table, uint64_t *job_id, char *err,
                                   size_t errlen);

/* A rank waiting in the bootstrap: says what it waits for at growing intervals (WARN) and on
 * SIGUSR1 (logged even with logging off: it was asked for). rendezvous.c. */
typedef struct tutti_boot_waiter {
  int rank;
  const char *where;
  int64_t start;
  double next_report_s;
  unsigned seen;
} tutti_boot_waiter_t;

void tutti__boot_waiter_init(tutti_boot_waiter_t *w, int rank, const char *where,
                             int64_t deadline);
/* Reports "what where (N s so far)" when it is time to, or SIGUSR1 asked. */
void tutti__boot_waiter_tick(tutti_boot_waiter_t *w, const char *what);
/* Waits until fd is readable, reporting the wait; TUTTI_ERR_TIMEOUT at the deadline. */
tutti_result_t tutti__boot_await(int fd, tutti_boot_waiter_t *w, const char *what,
                                 int64_t deadline, char *err, size_t errlen);

/* ---- tree.c: the address table goes down a binary tree of the ranks ------------------- */

/* Rank r's parent in the distribution tree (-1 for rank 0, the root), and its depth. */
int tutti__tree_parent(int rank);
int tutti__tree_depth(int rank);

/* What a rank knows when the rendezvous has answered it. */
typedef struct tutti_tree_job {
  const uint8_t *secret;
  uint64_t job_id;
  int nranks, rank;
  const uint8_t *digest;                 /* the table's SHA-256, signed by the server */
  int parent;                            /* -1: this rank is the root */
  const tutti_rdv_entry_t *parent_entry; /* not the root: the parent's entry, to name it */
  uint32_t parent_ip;                    /* its tree listener, network order */
  uint16_t parent_port;
  const tutti_rdv_entry_t *me; /* this rank's entry: children on its host are watched */
  int lfd;                     /* this rank's tree listener; the caller closes it */
  int64_t base;                /* the answer's arrival plus the tree's budget (rdv_reply_t) */
} tutti_tree_job_t;

/* Takes the table from the parent (the root has it already in *table), then hands it (or,
 * if this rank could not get it, the sentence why) to each child that connects and proves
 * the job secret, until every child has it. A rank at depth d gives up on its parent at
 * base + d x TREE_STEP and on its children at base + (d + 1) x TREE_STEP, so a break is
 * named by the rank just below it before anyone further down gives up, and is passed down.
 * On success *table is the malloc'd table; on failure the sentence names the rank that died,
 * refused, stalled or never came. */
tutti_result_t tutti__tree_run(const tutti_tree_job_t *job, tutti_rdv_entry_t **table,
                               char *err, size_t errlen);

/* Fills host name and boot id, which together identify a host (a reboot changes boot id). */
void tutti__host_identity(char host[TUTTI_HOST_BYTES], char boot_id[40]);

#endif
