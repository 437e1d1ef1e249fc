/*
 * Single-copy all-gather and broadcast for ranks of one host (cma.h): the data moves once,
 * straight from the buffer of the rank that has it into the buffer of the rank that needs it.
 *
 *   all-gather: every rank reads every other rank's input into its output.
 *   broadcast:  the non-roots read the root's buffer while the root writes a share of every
 *               receiver's output (process_vm_writev), so that every rank copies and none
 *               idles.
 *
 * A rank returns only when no peer will read its buffers any more (a final token from each
 * reader), since the user may reuse them at once.
 */
#include <string.h>

#include "algo/cma.h"
#include "algo/patterns.h"
#include "kernels/kernels.h"

/* Puts peer's block of an all-gather (ctx: the call) in its place in the output: read from
 * the peer, or this rank's own copied (out of place). comm->recv_nt (task.c): the call's
 * host footprint against the cache. */
static tutti_result_t gather_block(struct tutti_comm *comm, int peer, void *ctx) {
  const tutti_coll_args_t *a = ctx;
  const cma_desc_t *d = comm->cma_descs;
  size_t bytes = a->count * a->esize;
  char *to = (char *)a->recvbuf + (size_t)peer * bytes;
  if (peer != comm->rank)
    return tutti__cma_fetch(comm, peer, to, &d[peer].send, d[peer].send.addr, bytes,
                            comm->recv_nt);
  if (a->sendbuf != to) tutti__copy(to, a->sendbuf, bytes, comm->recv_nt);
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__cma_allgather(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  cma_desc_t *d;
  TRY(tutti__cma_exchange_descs(comm, a, &d, gather_block, (void *)a));
  return tutti__cma_barrier_tokens(comm, a->deadline, NULL, NULL);
}

/* What the root of a broadcast tells each receiver: where to read, and how many leading bytes
 * the root writes into the receiver's buffer itself (the receiver reads the rest). */
typedef struct {
  tutti_regbuf_t src;
  uint64_t share;
} bcast_desc_t;

/* Bytes of each receiver's buffer the root copies itself, so that the root and the receivers
 * finish together. In place every rank copies (n-1)/n of a buffer: the root 1/n of the whole
 * into each receiver. Out of place the root also copies the whole buffer into its own output,
 * with memcpy, at c bytes a second against the kernel's copy at k: the root's m/c + (n-1)s/k
 * equals a receiver's (m - s)/k at s = (1 - k/c) m / n, with k/c the model's measured ratio
 * (single copy over copy from memory; where either is not measured, 1/3, the ratio on the
 * development VM of CMA_COPY_SLOWDOWN's comment in tuner.c). A machine whose kernel copies as
 * fast as memcpy gets s = 0, where the fixed 2/3 m / n this took before would leave the root
 * a third behind (n = 2). Whole pages, so that no page is pinned by
 * both sides, and none below a page each, where the extra token costs more than it saves.
 * With more local ranks than cores the ranks do not run side by side: the root's writes
 * then only make every receiver wait for the root's turn on a core (one more wake-up each,
 * at n = 8 on 2 cores about half the busbw), so the receivers read everything. */
static size_t root_share(const struct tutti_comm *comm, const tutti_coll_args_t *a,
                         size_t bytes, int n) {
  if (comm->oversubscribed) return 0;
  if (a->sendbuf == a->recvbuf) return (bytes / (size_t)n) & ~(size_t)4095;
  const tutti_model_t *m = comm->cfg.model.have ? &comm->cfg.model : NULL;
  double kc = m && m->cma_bps > 0 && m->copy_mem_bps > 0 ? m->cma_bps / m->copy_mem_bps
                                                          : 1.0 / 3;
  if (!(kc < 1)) return 0;
  double s = (1 - kc) * (double)bytes / n;
  return (size_t)s & ~(size_t)4095;
}

static tutti_result_t bcast_root(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                 size_t bytes) {
  int n = comm->nranks, me = comm->rank;
  tutti_xfer_t *ops = comm->cma_ops;
  cma_desc_t *peer = comm->cma_descs; /* each receiver's output address, in .recv */
  uint64_t token = comm->seq;
  bcast_desc_t mine = {.share = root_share(comm, a, bytes, n)};
  int nt = comm->recv_nt;
  tutti__memreg_describe(comm, a->sendbuf, bytes, &mine.src);
  for (int k = 1; k < n; k++) {
    int to = tutti__mod(me + k, n);
    TRY(tutti__irecv(comm, &ops[2 * k], to, &peer[to], sizeof peer[to]));
    TRY(tutti__isend(comm, &ops[2 * k + 1], to, &mine, sizeof mine));
  }
  if (a->sendbuf != a->recvbuf) tutti__copy(a->recvbuf, a->sendbuf, bytes, nt);
  for (int k = 1; k < n; k++) {
    int to = tutti__mod(me + k, n);
    TRY(tutti__wait(comm, &ops[2 * k], a->deadline));
    TRY(tutti__wait(comm, &ops[2 * k + 1], a->deadline));
    if (mine.share) {
      TRY(tutti__cma_put(comm, to, &peer[to].recv, peer[to].recv.addr, a->sendbuf, mine.share,
                         nt));
      TRY(tutti__isend(comm, &ops[2 * k + 1], to, &token, sizeof token));
    }
    TRY(tutti__irecv(comm, &ops[2 * k], to, &comm->cma_tokens[to], sizeof token));
  }
  /* The root's buffer is read until every receiver says it is done. */
  for (int k = 1; k < n; k++) {
    if (mine.share) TRY(tutti__wait(comm, &ops[2 * k + 1], a->deadline));
    TRY(tutti__wait(comm, &ops[2 * k], a->deadline));
  }
  return TUTTI_SUCCESS;
}

static tutti_result_t bcast_receiver(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                     size_t bytes) {
  int root = a->root;
  tutti_xfer_t *ops = comm->cma_ops;
  uint64_t token = comm->seq, written;
  cma_desc_t mine = {{0}, {0}};
  tutti__memreg_describe(comm, a->recvbuf, bytes, &mine.recv);
  bcast_desc_t rd;
  TRY(tutti__isend(comm, &ops[0], root, &mine, sizeof mine));
  TRY(tutti__irecv(comm, &ops[1], root, &rd, sizeof rd));
  TRY(tutti__wait(comm, &ops[1], a->deadline));
  if (rd.share > bytes) {
    char who[128];
    tutti__peer_desc(comm, root, who, sizeof who);
    return tutti__error(comm, TUTTI_ERR_INTERNAL, "broadcast: root %s claims %llu of %zu "
                        "bytes", who, (unsigned long long)rd.share, bytes);
  }
  /* The root writes the first rd.share bytes meanwhile. */
  TRY(tutti__cma_fetch(comm, root, (char *)a->recvbuf + rd.share, &rd.src,
                       rd.src.addr + rd.share, bytes - rd.share, comm->recv_nt));
  TRY(tutti__wait(comm, &ops[0], a->deadline));
  TRY(tutti__isend(comm, &ops[0], root, &token, sizeof token));
  /* The output is complete, and no longer written by the root, once it says so. */
  if (rd.share) TRY(tutti__recv(comm, root, &written, sizeof written, a->deadline));
  return tutti__wait(comm, &ops[0], a->deadline);
}

tutti_result_t tutti__cma_broadcast(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  size_t bytes = a->count * a->esize;
  return comm->rank == a->root ? bcast_root(comm, a, bytes) : bcast_receiver(comm, a, bytes);
}
