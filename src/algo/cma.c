/*
 * Direct single-copy algorithms for ranks of one host: each rank reads its peers' buffers
 * with process_vm_readv (CMA), so every byte moves once, kernel to user, instead of into a
 * queue and out again, and there are no ring hops. Only the buffer addresses and completion
 * tokens travel through the transport (which also checks the call's fingerprint).
 *
 *   all-reduce:     rank r reduces slice r from every rank's input, folding ranks in rank
 *                   order (so the result does not depend on chunking, and is identical on all
 *                   ranks), then reads every other slice from its owner's output.
 *   reduce-scatter: the first half of that, each rank's slice into its own output.
 * (all-gather and broadcast, which only copy, are in cma_copy.c; shared helpers in cma.h)
 *
 * A rank returns only when no peer will read its buffers any more (a final token from each
 * reader), since the user may reuse them at once.
 */
#include <string.h>

#include "algo/cma.h"
#include "algo/patterns.h"
#include "kernels/kernels.h"

/* Reduces block [off, off + len) (elements) of every rank's send buffer into dst, folding in
 * rank order 0..n-1, chunk by chunk through scratch. */
static tutti_result_t reduce_block(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                   const cma_desc_t *d, size_t off, size_t len, char *dst) {
  int n = comm->nranks, me = comm->rank;
  size_t es = a->esize;
  size_t chunk = comm->cfg.chunk_bytes / es;
  if (chunk == 0) chunk = 1;
  char *tmp, *own;
  void *scratch;
  TRY(tutti__scratch(comm, 2 * chunk * es, &scratch));
  tmp = scratch;
  own = tmp + chunk * es;
  for (size_t c = 0; c < len; c += chunk) {
    size_t m = len - c < chunk ? len - c : chunk;
    size_t byte_off = (off + c) * es;
    char *out = dst + c * es;
    /* In place, out is this rank's own input: keep it before out is written. */
    const char *mine = (const char *)a->sendbuf + byte_off;
    if (mine == out) {
      memcpy(own, mine, m * es);
      mine = own;
    }
    for (int k = 0; k < n; k++) {
      const char *x = mine;
      if (k != me) {
        /* The first contribution lands in out itself; later ones go through tmp. */
        char *into = k == 0 ? out : tmp;
        TRY(tutti__cma_read(comm, k, into, d[k].send + byte_off, m * es));
        x = into;
      }
      if (k == 0) {
        if (x != out) memcpy(out, x, m * es);
      } else {
        tutti__reduce(out, out, x, m, a->dtype, a->op);
      }
    }
    if (a->op == TUTTI_AVG) tutti__avg_finish(out, m, a->dtype, n);
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__cma_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, me = comm->rank;
  cma_desc_t *d;
  TRY(tutti__cma_exchange_descs(comm, a, &d));
  size_t off, len;
  tutti__block_range(a->count, n, me, &off, &len);
  TRY(reduce_block(comm, a, d, off, len, (char *)a->recvbuf + off * a->esize));
  /* Every slice is final once its owner says so; only then is it read. */
  TRY(tutti__cma_barrier_tokens(comm, a->deadline));
  for (int k = 1; k < n; k++) {
    int owner = tutti__mod(me + k, n);
    tutti__block_range(a->count, n, owner, &off, &len);
    TRY(tutti__cma_read(comm, owner, (char *)a->recvbuf + off * a->esize,
                 d[owner].recv + off * a->esize, len * a->esize));
  }
  return tutti__cma_barrier_tokens(comm, a->deadline);
}

tutti_result_t tutti__cma_reduce_scatter(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  cma_desc_t *d;
  TRY(tutti__cma_exchange_descs(comm, a, &d));
  TRY(reduce_block(comm, a, d, (size_t)comm->rank * a->count, a->count, a->recvbuf));
  return tutti__cma_barrier_tokens(comm, a->deadline);
}
