/*
 * The hierarchical all-reduce's latency path (hier.h, tutti__hier_small_allreduce): for a
 * payload too small for bandwidth to matter, the ring phases' 2(L-1) local and 2(H-1)
 * cross-host steps are all latency. Here every rank hands its vector to its host's leader
 * (its local rank 0), the leaders send their host's sum to every other leader at once and
 * each folds all of them, and each leader hands the result back to its host: one local
 * hand-off, one network round, one local hand-off.
 *
 * Every leader folds the hosts' sums in host order, each host's sum folded in local order,
 * and the other ranks copy their leader's result, so every rank gets the same bits.
 */
#include "algo/hier.h"
#include "algo/patterns.h"
#include "kernels/kernels.h"

/* A local rank: its vector to the leader, the result back. The send completes before the
 * result can come (the leader needs the vector first), so in place is safe. */
static tutti_result_t member(struct tutti_comm *comm, const tutti_coll_args_t *a,
                             const tutti_hier_t *h, size_t bytes) {
  int lead = tutti__topo_rank(h->t, h->host, 0);
  tutti_xfer_t op;
  TRY(tutti__isend(comm, &op, lead, a->sendbuf, bytes));
  TRY(tutti__wait(comm, &op, a->deadline));
  return tutti__recv(comm, lead, a->recvbuf, bytes, a->deadline);
}

/* The leader's host sum into mine: its own input, then each local rank's in local order. */
static tutti_result_t host_sum(struct tutti_comm *comm, const tutti_coll_args_t *a,
                               tutti_hier_t *h, char *mine, char *in, size_t bytes) {
  int k = h->nlocal;
  for (int i = 1; i < k; i++)
    TRY(tutti__irecv(comm, &h->xfers[i - 1], tutti__topo_rank(h->t, h->host, i),
                     in + (size_t)(i - 1) * bytes, bytes));
  for (int i = 1; i < k; i++) TRY(tutti__wait(comm, &h->xfers[i - 1], a->deadline));
  if (k == 1) {
    memcpy(mine, a->sendbuf, bytes);
    return TUTTI_SUCCESS;
  }
  tutti__reduce(mine, a->sendbuf, in, a->count, a->dtype, a->op);
  for (int i = 2; i < k; i++)
    tutti__reduce(mine, mine, in + (size_t)(i - 1) * bytes, a->count, a->dtype, a->op);
  return TUTTI_SUCCESS;
}

/* The leaders' round: mine to every other leader, theirs into in (slot g for host g, this
 * host's slot unused), then the fold in host order into out. */
static tutti_result_t leaders(struct tutti_comm *comm, const tutti_coll_args_t *a,
                              tutti_hier_t *h, const char *mine, char *in, char *out,
                              size_t bytes) {
  int H = h->nhosts;
  for (int g = 0; g < H; g++)
    if (g != h->host)
      TRY(tutti__irecv(comm, &h->xfers[g], tutti__topo_rank(h->t, g, 0),
                       in + (size_t)g * bytes, bytes));
  /* Sends fan out from the next host on, so no leader is every other's first target. */
  tutti_sendq_t q;
  tutti__sendq_init(&q);
  for (int d = 1; d < H; d++) {
    int slot;
    TRY(tutti__sendq_acquire(comm, &q, a->deadline, &slot));
    TRY(tutti__sendq_post(comm, &q, slot, tutti__topo_rank(h->t, (h->host + d) % H, 0), mine,
                          bytes));
  }
  for (int g = 0; g < H; g++)
    if (g != h->host) TRY(tutti__wait(comm, &h->xfers[g], a->deadline));
  const char *first = h->host == 0 ? mine : in;
  if (H == 1) {
    memcpy(out, first, bytes);
  } else {
    const char *second = h->host == 1 ? mine : in + bytes;
    tutti__reduce(out, first, second, a->count, a->dtype, a->op);
  }
  for (int g = 2; g < H; g++)
    tutti__reduce(out, out, g == h->host ? mine : in + (size_t)g * bytes, a->count, a->dtype,
                  a->op);
  if (a->op == TUTTI_AVG) tutti__avg_finish(out, a->count, a->dtype, comm->nranks);
  return tutti__sendq_drain(comm, &q, a->deadline);
}

int tutti__hier_small(const tutti_hier_t *h, size_t bytes) {
  return bytes <= TUTTI_HIER_SMALL_BYTES && h->nhosts <= TUTTI_HIER_SMALL_HOSTS;
}

tutti_result_t tutti__hier_small_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                           tutti_hier_t *h) {
  size_t bytes = a->count * a->esize;
  if (!bytes) return TUTTI_SUCCESS;
  if (h->local != 0) return member(comm, a, h, bytes);
  /* Scratch: this host's sum, then one slot per host (the leaders' round), then one per
   * other local rank (the host sum's inputs). */
  size_t slots = 1 + (size_t)h->nhosts + (size_t)h->nlocal;
  char *mine;
  TRY(tutti__scratch(comm, slots * bytes, (void **)&mine));
  char *hosts_in = mine + bytes, *local_in = hosts_in + (size_t)h->nhosts * bytes;
  TRY(host_sum(comm, a, h, mine, local_in, bytes));
  TRY(leaders(comm, a, h, mine, hosts_in, a->recvbuf, bytes));
  tutti_sendq_t q;
  tutti__sendq_init(&q);
  for (int i = 1; i < h->nlocal; i++) {
    int slot;
    TRY(tutti__sendq_acquire(comm, &q, a->deadline, &slot));
    TRY(tutti__sendq_post(comm, &q, slot, tutti__topo_rank(h->t, h->host, i), a->recvbuf,
                          bytes));
  }
  return tutti__sendq_drain(comm, &q, a->deadline);
}
