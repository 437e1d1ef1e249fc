/*
 * The communicator's topology: which ranks share a host, computed once from the bootstrap
 * table (every rank has the same table, so every rank computes the same topology).
 */
#ifndef TUTTI_TOPO_H
#define TUTTI_TOPO_H

#include "core/internal.h"

/* Hosts are numbered by their lowest rank; a host's ranks are in rank order (their local
 * index). The arrays hold nranks entries except host_first (nhosts + 1). */
typedef struct tutti_topo {
  int nhosts;
  int max_local;   /* ranks on the most crowded host */
  int min_local;   /* ranks on the least crowded host */
  int *host_of;    /* rank -> host */
  int *local_of;   /* rank -> index among its host's ranks */
  int *host_first; /* host h's ranks are ranks[host_first[h] .. host_first[h + 1]) */
  int *ranks;      /* ranks host by host: also the flat ring's and chain's order */
  int *pos_of;     /* rank -> its position in ranks */
  /* Working memory the hierarchical algorithms keep between calls (algo/hier_util.c), so
   * that a call allocates nothing; one call at a time uses it, as comm->scratch. */
  void *work;
} tutti_topo_t;

/* The topology of comm, built from comm->peers (host name and boot id) on first use and
 * owned by comm. NULL only when out of memory. */
tutti_topo_t *tutti__topo(struct tutti_comm *comm);

/* Builds comm's topology now and logs it at INFO ("3 hosts: 2+2+2 ranks"). Fails only when
 * out of memory. */
tutti_result_t tutti__topo_init(struct tutti_comm *comm);

/* Frees comm's topology (tutti__comm_free). */
void tutti__topo_free(struct tutti_comm *comm);

/* Replaces this process's host identity (host name and boot id, bootstrap.h) by
 * TUTTI_HOST_ID when it is set: ranks with the same id are one host, whatever their host
 * names and boot ids (they must then share /dev/shm). */
void tutti__topo_identity(const tutti_config_t *cfg, char *host, char *boot_id);

/* The rank with local index i of host h (i < the host's size). */
static inline int tutti__topo_rank(const tutti_topo_t *t, int h, int i) {
  return t->ranks[t->host_first[h] + i];
}
static inline int tutti__topo_nlocal(const tutti_topo_t *t, int h) {
  return t->host_first[h + 1] - t->host_first[h];
}

#endif
