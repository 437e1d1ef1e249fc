/*
 * Bootstrap: the unique id, reading rank/size/address from the environment, and the
 * rendezvous where every rank learns every other rank's address and host.
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

/* Starts the rendezvous server on an already listening socket, in a detached thread that
 * owns lfd: it collects one hello per rank, checks that they agree (world size, no duplicate
 * or out-of-range rank, the job secret), and answers each with the full table or with the
 * reason it refused. It ends when it has answered, or at timeout_s. */
tutti_result_t tutti__rdv_serve(int lfd, const uint8_t secret[TUTTI_SECRET_BYTES],
                                double timeout_s);

/* Connects to the rendezvous at ip:port (with retry, retrying refusals until the deadline,
 * since it may not be up yet) and returns the socket and the local address the route to it
 * uses. */
tutti_result_t tutti__rdv_connect(uint32_t ip, uint16_t port, int64_t deadline, int retry,
                                  int *fd, uint32_t *local_ip, char *err, size_t errlen);

/* Sends this rank's hello on fd and waits for the table of nranks entries (malloc'd into
 * *table) and the job id. A refusal comes back as the server's result and reason. */
tutti_result_t tutti__rdv_exchange(int fd, const uint8_t secret[TUTTI_SECRET_BYTES], int nranks,
                                   int rank, const tutti_rdv_entry_t *me, int64_t deadline,
                                   tutti_rdv_entry_t **table, uint64_t *job_id, char *err,
                                   size_t errlen);

/* Fills host name and boot id, which together identify a host (a reboot changes boot id). */
void tutti__host_identity(char host[TUTTI_HOST_BYTES], char boot_id[40]);

#endif
