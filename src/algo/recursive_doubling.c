/*
 * Latency-optimal algorithms for small messages: recursive-doubling all-reduce (log2 p
 * exchanges of the whole vector, after the non-power-of-two fold) and Bruck all-gather
 * (ceil(log2 n) exchanges for any n). Each exchange combines the lower group's data first,
 * so both partners compute the same bits and, by induction, every rank ends with the same.
 */
#include "algo/algo.h"
#include "algo/patterns.h"
#include "core/topo.h"
#include "kernels/kernels.h"

/* Every rank ends with the whole result, so the exchanges run over places in the host-by-host
 * order rather than ranks: the fold's pairs and the first exchanges stay on a host whatever
 * the placement (with ranks dealt round robin over hosts, rank r and r ^ 1 never share one,
 * and every exchange crossed a host link: 8-byte calls took 3-10x as long as with block
 * placement). */
tutti_result_t tutti__rd_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks;
  size_t bytes = a->count * a->esize;
  char *w = a->recvbuf;
  tutti__copy_if_apart(w, a->sendbuf, bytes);
  if (n == 1) return TUTTI_SUCCESS;
  const tutti_topo_t *ord = tutti__topo(comm);
  int r = ord ? ord->pos_of[comm->rank] : comm->rank;
  int p = tutti__pow2_floor(n), rem = n - p, v = tutti__fold_vrank(r, rem);
  char *tmp;
  TRY(tutti__scratch(comm, bytes, (void **)&tmp));
  TRY(tutti__fold_in_order(comm, a, w, w, a->count, tmp, rem, ord));
  if (v >= 0) {
    for (int mask = 1; mask < p; mask <<= 1) {
      int pv = v ^ mask, peer = tutti__fold_rank(pv, rem);
      if (ord) peer = ord->ranks[peer];
      TRY(tutti__sendrecv(comm, peer, w, bytes, peer, tmp, bytes, a->deadline));
      if (pv < v)
        tutti__reduce(w, tmp, w, a->count, a->dtype, a->op);
      else
        tutti__reduce(w, w, tmp, a->count, a->dtype, a->op);
    }
    /* Every taking part rank holds the same complete sum and divides it once; the ranks that
     * sat out receive the divided result. */
    if (a->op == TUTTI_AVG) tutti__avg_finish(w, a->count, a->dtype, n);
  }
  return tutti__fold_out_order(comm, a, w, bytes, rem, ord);
}

/* The blocks of ranks first .. first+cnt-1 (mod n) as at most two runs of consecutive ranks,
 * split where the numbering wraps: both ends of a message derive the same split. */
static int runs(int first, int cnt, int n, int start[2], int len[2]) {
  if (first + cnt <= n) {
    start[0] = first;
    len[0] = cnt;
    return 1;
  }
  start[0] = first;
  len[0] = n - first;
  start[1] = 0;
  len[1] = cnt - len[0];
  return 2;
}

/*
 * Bruck all-gather, with blocks kept at their final places: after the step of distance d this
 * rank holds the blocks of ranks r .. r+2d-1 (mod n); at that step it sends the blocks of
 * r .. r+cnt-1 to rank r-d and receives those of r+d .. r+d+cnt-1 from rank r+d.
 */
tutti_result_t tutti__bruck_allgather(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, r = comm->rank;
  size_t bytes = a->count * a->esize;
  char *w = a->recvbuf, *own = w + (size_t)r * bytes;
  int d = 1;
  if (n > 1 && bytes && a->sendbuf != own) {
    /* Distance 1 sends only this rank's block: fused with its copy into place. */
    int from = tutti__mod(r + 1, n);
    TRY(tutti__own_exchange(comm, a, tutti__mod(r - 1, n), own, from,
                            w + (size_t)from * bytes, bytes));
    d = 2;
  } else {
    tutti__copy_if_apart(own, a->sendbuf, bytes);
  }
  for (; d < n; d <<= 1) {
    int cnt = d < n - d ? d : n - d, to = tutti__mod(r - d, n), from = tutti__mod(r + d, n);
    int ss[2], sl[2], rs[2], rl[2];
    int ns = runs(r, cnt, n, ss, sl), nr = runs(from, cnt, n, rs, rl);
    tutti_xfer_t sx[2], rx[2];
    for (int i = 0; i < nr; i++)
      TRY(tutti__irecv(comm, &rx[i], from, w + (size_t)rs[i] * bytes, (size_t)rl[i] * bytes));
    for (int i = 0; i < ns; i++)
      TRY(tutti__isend(comm, &sx[i], to, w + (size_t)ss[i] * bytes, (size_t)sl[i] * bytes));
    for (int i = 0; i < nr; i++) TRY(tutti__wait(comm, &rx[i], a->deadline));
    for (int i = 0; i < ns; i++) TRY(tutti__wait(comm, &sx[i], a->deadline));
  }
  return TUTTI_SUCCESS;
}
