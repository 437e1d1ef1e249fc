/*
 * Direct single-copy algorithms for ranks of one host: each rank reads its peers' buffers
 * with process_vm_readv (CMA), so every byte moves once, kernel to user, instead of into a
 * queue and out again, and there are no ring hops. Only the buffer addresses and completion
 * tokens travel through the transport (which also checks the call's fingerprint).
 *
 *   all-reduce:     rank r reduces slice r from every rank's input, folding ranks in rank
 *                   order (so the result does not depend on chunking, and is identical on all
 *                   ranks), then reads every other slice from its owner's output. Small
 *                   vectors (tutti__cma_one_shot) are reduced whole by every rank instead,
 *                   in the same order, which saves a round.
 *   reduce-scatter: the first half of that, each rank's slice into its own output.
 *   all-gather:     every rank reads every other rank's input into its output.
 *   broadcast:      the non-roots read the root's buffer.
 *
 * A rank returns only when no peer will read its buffers any more (a final token from each
 * reader), since the user may reuse them at once.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "algo/algo.h"
#include "algo/patterns.h"
#include "algo/tuner.h"
#include "kernels/kernels.h"

/* Where a rank's buffers are, sent to its peers at the start of a call. */
typedef struct {
  uint64_t send;
  uint64_t recv;
} cma_desc_t;

/* Reads len bytes at addr in peer's memory into dst. */
static tutti_result_t cma_read(struct tutti_comm *comm, int peer, void *dst, uint64_t addr,
                               size_t len) {
  char *d = dst;
  while (len) {
    struct iovec local = {d, len};
    struct iovec remote = {(void *)(uintptr_t)addr, len};
    ssize_t n = process_vm_readv(comm->peers[peer].pid, &local, 1, &remote, 1, 0);
    if (n <= 0) {
      char who[128];
      int e = n < 0 ? errno : EFAULT;
      /* A peer that is gone may have left because another rank failed first and told
       * everyone: that failure, published through the transport, is the one to report. */
      if (comm->shm) TRY(comm->shm->ops->block(comm->shm, NULL, 0, 0));
      tutti__peer_desc(comm, peer, who, sizeof who);
      if (e == ESRCH) {
        if (!comm->culprit) comm->culprit = peer + 1;
        return tutti__error(comm, TUTTI_ERR_REMOTE, "%s died during the collective (its "
                            "buffer cannot be read any more)", who);
      }
      return tutti__error(comm, TUTTI_ERR_SYSTEM, "cannot read %zu bytes of %s's buffer: %s",
                          len, who, strerror(e));
    }
    d += n;
    addr += (uint64_t)n;
    len -= (size_t)n;
  }
  return TUTTI_SUCCESS;
}

/* Sends one small message to every other rank and receives one from each: descriptors, or
 * tokens that say "my part is done" (the content then is not looked at). */
static tutti_result_t all_exchange(struct tutti_comm *comm, const void *mine, void *theirs,
                                   size_t len, int64_t deadline) {
  int n = comm->nranks, me = comm->rank;
  tutti_xfer_t *ops = comm->cma_ops;
  for (int k = 1; k < n; k++) {
    int from = tutti__mod(me - k, n);
    TRY(tutti__irecv(comm, &ops[2 * k], from, (char *)theirs + (size_t)from * len, len));
  }
  for (int k = 1; k < n; k++)
    TRY(tutti__isend(comm, &ops[2 * k + 1], tutti__mod(me + k, n), mine, len));
  for (int k = 1; k < n; k++) {
    TRY(tutti__wait(comm, &ops[2 * k], deadline));
    TRY(tutti__wait(comm, &ops[2 * k + 1], deadline));
  }
  return TUTTI_SUCCESS;
}

static tutti_result_t exchange_descs(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                     cma_desc_t **descs) {
  cma_desc_t *d = comm->cma_descs;
  d[comm->rank] = (cma_desc_t){(uint64_t)(uintptr_t)a->sendbuf, (uint64_t)(uintptr_t)a->recvbuf};
  TRY(all_exchange(comm, &d[comm->rank], d, sizeof *d, a->deadline));
  *descs = d;
  return TUTTI_SUCCESS;
}

static tutti_result_t barrier_tokens(struct tutti_comm *comm, int64_t deadline) {
  uint64_t token = comm->seq;
  return all_exchange(comm, &token, comm->cma_tokens, sizeof token, deadline);
}

/* Elements per CMA chunk: one process_vm_readv lands in a buffer that stays in L2 (512 KiB
 * a core here) until the reduction reads it back; larger calls pin pages in fewer, cheaper
 * batches but push the landing buffer out of cache, smaller ones pay the per-call pinning. */
static size_t cma_chunk_elems(const struct tutti_comm *comm, size_t es) {
  size_t bytes = comm->cfg.chunk_bytes;
  size_t c = bytes / es;
  return c ? c : 1;
}

/* Scratch for reduce_block (three chunks) followed by `extra` bytes, at *extra_at. */
static tutti_result_t block_scratch(struct tutti_comm *comm, size_t es, size_t extra,
                                    char **scratch, char **extra_at) {
  size_t blk = 3 * cma_chunk_elems(comm, es) * es;
  void *p;
  TRY(tutti__scratch(comm, blk + extra, &p));
  *scratch = p;
  if (extra_at) *extra_at = *scratch + blk;
  return TUTTI_SUCCESS;
}

/* Reduces block [off, off + len) (elements) of every rank's send buffer into dst, folding in
 * rank order 0..n-1, chunk by chunk. The first fold takes two inputs straight into dst
 * (dst = x0 op x1), so no contribution is copied before it is combined; a peer's chunk is
 * read into a scratch chunk first (two when both of the first two are peers). */
static tutti_result_t reduce_block(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                   const cma_desc_t *d, size_t off, size_t len, char *dst,
                                   char *scratch) {
  int n = comm->nranks, me = comm->rank;
  size_t es = a->esize;
  size_t chunk = cma_chunk_elems(comm, es);
  char *tmp[2], *own;
  tmp[0] = scratch;
  tmp[1] = tmp[0] + chunk * es;
  own = tmp[1] + chunk * es;
  for (size_t c = 0; c < len; c += chunk) {
    size_t m = len - c < chunk ? len - c : chunk;
    size_t byte_off = (off + c) * es;
    char *out = dst + c * es;
    const char *mine = (const char *)a->sendbuf + byte_off;
    /* In place, out is this rank's own input: the first fold overwrites it, which is only
     * safe when this rank's contribution is one of the first two. */
    if (mine == out && me >= 2 && n > 2) {
      memcpy(own, mine, m * es);
      mine = own;
    }
    const char *x[2];
    for (int k = 0; k < 2 && k < n; k++) {
      if (k == me) {
        x[k] = mine;
      } else {
        TRY(cma_read(comm, k, tmp[k], d[k].send + byte_off, m * es));
        x[k] = tmp[k];
      }
    }
    if (n == 1) {
      if (x[0] != out) memcpy(out, x[0], m * es);
    } else {
      tutti__reduce(out, x[0], x[1], m, a->dtype, a->op);
    }
    for (int k = 2; k < n; k++) {
      const char *y = mine;
      if (k != me) {
        TRY(cma_read(comm, k, tmp[0], d[k].send + byte_off, m * es));
        y = tmp[0];
      }
      tutti__reduce(out, out, y, m, a->dtype, a->op);
    }
    if (a->op == TUTTI_AVG) tutti__avg_finish(out, m, a->dtype, n);
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__cma_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, me = comm->rank;
  size_t bytes = a->count * a->esize;
  cma_desc_t *d;
  char *scratch, *whole;
  if (tutti__cma_one_shot(n, bytes)) {
    /* Small: every rank reduces the whole vector from every input, folding in rank order as
     * the slices do, so the bits are the same either way. That saves the round between the
     * two halves (a wake-up across cores, which costs more here than reading the whole
     * vector). In place, peers still read this rank's input, so the result waits in
     * scratch until they are done. */
    int inplace = a->sendbuf == a->recvbuf;
    TRY(block_scratch(comm, a->esize, inplace ? bytes : 0, &scratch, &whole));
    TRY(exchange_descs(comm, a, &d));
    char *out = inplace ? whole : a->recvbuf;
    TRY(reduce_block(comm, a, d, 0, a->count, out, scratch));
    TRY(barrier_tokens(comm, a->deadline));
    if (inplace) memcpy(a->recvbuf, whole, bytes);
    return TUTTI_SUCCESS;
  }
  TRY(block_scratch(comm, a->esize, 0, &scratch, NULL));
  TRY(exchange_descs(comm, a, &d));
  size_t off, len;
  tutti__block_range(a->count, n, me, &off, &len);
  TRY(reduce_block(comm, a, d, off, len, (char *)a->recvbuf + off * a->esize, scratch));
  /* Every slice is final once its owner says so; only then is it read. */
  TRY(barrier_tokens(comm, a->deadline));
  for (int k = 1; k < n; k++) {
    int owner = tutti__mod(me + k, n);
    tutti__block_range(a->count, n, owner, &off, &len);
    TRY(cma_read(comm, owner, (char *)a->recvbuf + off * a->esize,
                 d[owner].recv + off * a->esize, len * a->esize));
  }
  return barrier_tokens(comm, a->deadline);
}

tutti_result_t tutti__cma_reduce_scatter(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  cma_desc_t *d;
  char *scratch;
  TRY(block_scratch(comm, a->esize, 0, &scratch, NULL));
  TRY(exchange_descs(comm, a, &d));
  TRY(reduce_block(comm, a, d, (size_t)comm->rank * a->count, a->count, a->recvbuf, scratch));
  return barrier_tokens(comm, a->deadline);
}

tutti_result_t tutti__cma_allgather(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, me = comm->rank;
  size_t bytes = a->count * a->esize;
  cma_desc_t *d;
  TRY(exchange_descs(comm, a, &d));
  char *out = a->recvbuf;
  if (a->sendbuf != out + (size_t)me * bytes) memcpy(out + (size_t)me * bytes, a->sendbuf, bytes);
  for (int k = 1; k < n; k++) {
    int from = tutti__mod(me + k, n);
    TRY(cma_read(comm, from, out + (size_t)from * bytes, d[from].send, bytes));
  }
  return barrier_tokens(comm, a->deadline);
}

tutti_result_t tutti__cma_broadcast(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, me = comm->rank, root = a->root;
  size_t bytes = a->count * a->esize;
  tutti_xfer_t *ops = comm->cma_ops;
  uint64_t token = comm->seq;
  if (me == root) {
    cma_desc_t mine = {(uint64_t)(uintptr_t)a->sendbuf, 0};
    if (a->sendbuf != a->recvbuf) memcpy(a->recvbuf, a->sendbuf, bytes);
    for (int k = 1; k < n; k++) {
      int to = tutti__mod(me + k, n);
      TRY(tutti__irecv(comm, &ops[2 * k], to, &comm->cma_tokens[to], sizeof token));
      TRY(tutti__isend(comm, &ops[2 * k + 1], to, &mine, sizeof mine));
    }
    /* The root's buffer is read until every rank says it is done. */
    for (int k = 1; k < n; k++) {
      TRY(tutti__wait(comm, &ops[2 * k + 1], a->deadline));
      TRY(tutti__wait(comm, &ops[2 * k], a->deadline));
    }
    return TUTTI_SUCCESS;
  }
  cma_desc_t rd;
  TRY(tutti__recv(comm, root, &rd, sizeof rd, a->deadline));
  TRY(cma_read(comm, root, a->recvbuf, rd.send, bytes));
  TRY(tutti__isend(comm, &ops[0], root, &token, sizeof token));
  return tutti__wait(comm, &ops[0], a->deadline);
}
