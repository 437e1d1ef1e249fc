/*
 * Hierarchical barrier: every rank of a host signals its leader (the host's lowest rank),
 * the leaders run a dissemination barrier among themselves (ceil(log2 H) rounds across the
 * hosts), and each leader then releases its host's ranks. Header-only messages throughout.
 */
#include "algo/hier.h"
#include "algo/patterns.h"

static tutti_result_t leaders(struct tutti_comm *comm, const tutti_coll_args_t *a,
                              const tutti_hier_t *h) {
  int n = h->nhosts, p = h->host;
  for (int d = 1; d < n; d <<= 1) {
    tutti_xfer_t so, ro;
    TRY(tutti__irecv(comm, &ro, tutti__topo_rank(h->t, tutti__mod(p - d, n), 0), NULL, 0));
    TRY(tutti__isend(comm, &so, tutti__topo_rank(h->t, tutti__mod(p + d, n), 0), NULL, 0));
    TRY(tutti__wait(comm, &ro, a->deadline));
    TRY(tutti__wait(comm, &so, a->deadline));
  }
  return TUTTI_SUCCESS;
}

static tutti_result_t run(struct tutti_comm *comm, const tutti_coll_args_t *a,
                          const tutti_hier_t *h) {
  if (h->local != 0) {
    int lead = tutti__topo_rank(h->t, h->host, 0);
    tutti_xfer_t op;
    TRY(tutti__isend(comm, &op, lead, NULL, 0));
    TRY(tutti__wait(comm, &op, a->deadline));
    return tutti__recv(comm, lead, NULL, 0, a->deadline);
  }
  /* Arrivals one at a time: header-only messages, and a leader waits for all of them. */
  for (int i = 1; i < h->nlocal; i++)
    TRY(tutti__recv(comm, tutti__topo_rank(h->t, h->host, i), NULL, 0, a->deadline));
  TRY(leaders(comm, a, h));
  for (int i = 1; i < h->nlocal; i++) {
    tutti_xfer_t op;
    TRY(tutti__isend(comm, &op, tutti__topo_rank(h->t, h->host, i), NULL, 0));
    TRY(tutti__wait(comm, &op, a->deadline));
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__hier_barrier(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  tutti_hier_t h;
  TRY(tutti__hier_begin(comm, &h));
  return run(comm, a, &h);
}
