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
 * (all-gather and broadcast, which only copy, are in cma_copy.c; shared helpers in cma.h)
 *
 * A rank returns only when no peer will read its buffers any more (a final token from each
 * reader), since the user may reuse them at once.
 */
#include <string.h>

#include "algo/cma.h"
#include "algo/patterns.h"
#include "algo/tuner.h"
#include "kernels/kernels.h"

/* Elements per CMA chunk (TUTTI_CHUNK_SIZE, by default a quarter of the measured L2): one
 * process_vm_readv lands in a buffer that stays in L2 until the reduction reads it back; larger calls pin pages in fewer, cheaper
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

/* Where m bytes at byte_off of peer k's send buffer can be read: in place when the peer
 * registered that buffer (tutti_mem_alloc) and it is mapped here, else copied into tmp with
 * process_vm_readv. first: the block's first chunk, before which k's address may still be on
 * its way (tutti__cma_post_descs); then every registered part of k's buffers the call will
 * read here (the block of its input, `block` bytes, and for an all-reduce in two halves k's
 * slice of its output, read after the fold) is mapped in at once, so that a rank's first use of them
 * (page faults, tutti__first_use) falls in one stretch at the start, not between the waits
 * of later phases, where the online trial (its time less the largest first use, online.c)
 * cannot tell it from the algorithm's own time: n = 2, 64 MiB all-reduce on registered
 * buffers, fresh jobs, cma's trial 19.7-23.9 ms faulted in phase by phase, 9.5-11.4 in one
 * go, against 7-9 ms a call in steady state. */
static tutti_result_t peer_input(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                 const cma_desc_t *d, int k, size_t byte_off, size_t m,
                                 char *tmp, const char **out, size_t block) {
  if (block) {
    TRY(tutti__cma_await(comm, k, a->deadline));
    (void)tutti__memreg_peer(comm, k, &d[k].send, d[k].send.addr + byte_off, block);
    if (a->coll == TUTTI_COLL_ALLREDUCE && !tutti__cma_one_shot(comm->nranks, a->count * a->esize)) {
      size_t off, len;
      tutti__block_range(a->count, comm->nranks, k, &off, &len);
      (void)tutti__memreg_peer(comm, k, &d[k].recv, d[k].recv.addr + off * a->esize,
                               len * a->esize);
    }
  }
  uint64_t at = d[k].send.addr + byte_off;
  const char *p = tutti__memreg_peer(comm, k, &d[k].send, at, m);
  if (!p) {
    TRY(tutti__cma_read(comm, k, tmp, at, m));
    p = tmp;
  }
  *out = p;
  return TUTTI_SUCCESS;
}

/* Reduces block [off, off + len) (elements) of every rank's send buffer into dst, folding in
 * rank order 0..n-1, chunk by chunk. The first fold takes two inputs straight into dst
 * (dst = x0 op x1), so no contribution is copied before it is combined; a peer's chunk is
 * read in place when registered, else into a scratch chunk first (two when both of the first
 * two are peers). The last fold streams its output past the cache when nt is set (not for
 * AVG, whose division reads the output again). Each peer's address is awaited just before
 * its first chunk is read, so the fold starts with the first ranks' inputs while the later
 * ranks' are on their way (with more ranks than cores, a scheduler turn apart). */
static tutti_result_t reduce_block(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                   const cma_desc_t *d, size_t off, size_t len, char *dst,
                                   char *scratch, int nt) {
  int n = comm->nranks, me = comm->rank;
  size_t es = a->esize;
  size_t chunk = cma_chunk_elems(comm, es);
  char *tmp[2], *own;
  tmp[0] = scratch;
  tmp[1] = tmp[0] + chunk * es;
  own = tmp[1] + chunk * es;
  if (a->op == TUTTI_AVG) nt = 0;
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
      if (k == me)
        x[k] = mine;
      else
        TRY(peer_input(comm, a, d, k, byte_off, m * es, tmp[k], &x[k], c ? 0 : len * es));
    }
    if (n == 1) {
      if (x[0] != out) tutti__copy(out, x[0], m * es, nt);
    } else {
      tutti__reduce_to(out, x[0], x[1], m, a->dtype, a->op, nt && n == 2);
    }
    for (int k = 2; k < n; k++) {
      const char *y = mine;
      if (k != me) TRY(peer_input(comm, a, d, k, byte_off, m * es, tmp[0], &y, c ? 0 : len * es));
      tutti__reduce_to(out, out, y, m, a->dtype, a->op, nt && k == n - 1);
    }
    if (a->op == TUTTI_AVG) tutti__avg_finish(out, m, a->dtype, n);
  }
  return TUTTI_SUCCESS;
}

/* Reads owner's final slice of an all-reduce (ctx: the call) into this rank's output. */
static tutti_result_t read_slice(struct tutti_comm *comm, int owner, void *ctx) {
  const tutti_coll_args_t *a = ctx;
  const cma_desc_t *d = comm->cma_descs;
  size_t off, len, es = a->esize;
  if (owner == comm->rank) return TUTTI_SUCCESS;
  tutti__block_range(a->count, comm->nranks, owner, &off, &len);
  return tutti__cma_fetch(comm, owner, (char *)a->recvbuf + off * es, &d[owner].recv,
                          d[owner].recv.addr + off * es, len * es,
                          tutti__cma_nt(comm, a->count * es));
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
    TRY(tutti__cma_post_descs(comm, a, &d));
    char *out = inplace ? whole : a->recvbuf;
    TRY(reduce_block(comm, a, d, 0, a->count, out, scratch, 0));
    TRY(tutti__cma_exchange_end(comm, a->deadline));
    TRY(tutti__cma_barrier_tokens(comm, a->deadline, NULL, NULL));
    if (inplace) memcpy(a->recvbuf, whole, bytes);
    return TUTTI_SUCCESS;
  }
  TRY(block_scratch(comm, a->esize, 0, &scratch, NULL));
  TRY(tutti__cma_post_descs(comm, a, &d));
  size_t off, len;
  tutti__block_range(a->count, n, me, &off, &len);
  int nt = tutti__cma_nt(comm, bytes);
  TRY(reduce_block(comm, a, d, off, len, (char *)a->recvbuf + off * a->esize, scratch, nt));
  TRY(tutti__cma_exchange_end(comm, a->deadline));
  /* Every slice is final once its owner says so, and is read as soon as it does. */
  TRY(tutti__cma_barrier_tokens(comm, a->deadline, read_slice, (void *)a));
  return tutti__cma_barrier_tokens(comm, a->deadline, NULL, NULL);
}

tutti_result_t tutti__cma_reduce_scatter(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  cma_desc_t *d;
  char *scratch;
  TRY(block_scratch(comm, a->esize, 0, &scratch, NULL));
  TRY(tutti__cma_post_descs(comm, a, &d));
  int nt = tutti__cma_nt(comm, a->count * a->esize);
  TRY(reduce_block(comm, a, d, (size_t)comm->rank * a->count, a->count, a->recvbuf, scratch,
                   nt));
  TRY(tutti__cma_exchange_end(comm, a->deadline));
  return tutti__cma_barrier_tokens(comm, a->deadline, NULL, NULL);
}
