/*
 * One-shot algorithms for small messages between the ranks of one host (issue 3's "direct,
 * small"): every rank posts its whole input in its mailbox (transport.h) and reads what it
 * needs from its peers' mailboxes in place. One step, no hops: the latency is one cache-line
 * exchange plus the copies.
 *
 * Reductions fold the ranks in rank order from the mailboxes (this rank's own input included,
 * read back from its mailbox, which makes in-place calls safe), so every rank computes
 * bitwise the same result.
 */
#include <string.h>

#include "algo/algo.h"
#include "kernels/kernels.h"

/* dst = fold over ranks 0..n-1, in rank order, of the count elements at offset off (bytes)
 * of every rank's payload. */
static tutti_result_t fold_all(struct tutti_comm *comm, const tutti_coll_args_t *a, size_t off,
                               size_t count, void *dst) {
  int n = comm->nranks;
  const char *p0, *p;
  TRY(tutti__mbox_get(comm, 0, a->deadline, &p0));
  if (n == 1) {
    memcpy(dst, p0 + off, count * a->esize);
  } else {
    TRY(tutti__mbox_get(comm, 1, a->deadline, &p));
    tutti__reduce(dst, p0 + off, p + off, count, a->dtype, a->op);
  }
  for (int k = 2; k < n; k++) {
    TRY(tutti__mbox_get(comm, k, a->deadline, &p));
    tutti__reduce(dst, dst, p + off, count, a->dtype, a->op);
  }
  if (a->op == TUTTI_AVG) tutti__avg_finish(dst, count, a->dtype, n);
  return TUTTI_SUCCESS;
}

static tutti_result_t start(struct tutti_comm *comm, const tutti_coll_args_t *a, const void *data,
                            size_t len, size_t call_bytes) {
  TRY(tutti__mbox_begin(comm, len, a->deadline));
  return tutti__mbox_post(comm, data, len, call_bytes);
}

tutti_result_t tutti__oneshot_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  size_t bytes = a->count * a->esize;
  TRY(start(comm, a, a->sendbuf, bytes, bytes));
  return fold_all(comm, a, 0, a->count, a->recvbuf);
}

tutti_result_t tutti__oneshot_reduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  size_t bytes = a->count * a->esize;
  TRY(start(comm, a, a->sendbuf, bytes, bytes));
  if (comm->rank != a->root) return TUTTI_SUCCESS;
  return fold_all(comm, a, 0, a->count, a->recvbuf);
}

/* Every rank posts its whole input; each folds only its own block out of all of them. */
tutti_result_t tutti__oneshot_reduce_scatter(struct tutti_comm *comm,
                                             const tutti_coll_args_t *a) {
  size_t block = a->count * a->esize, bytes = block * (size_t)comm->nranks;
  TRY(start(comm, a, a->sendbuf, bytes, bytes));
  return fold_all(comm, a, (size_t)comm->rank * block, a->count, a->recvbuf);
}

tutti_result_t tutti__oneshot_allgather(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks;
  size_t block = a->count * a->esize, cap = tutti__mbox_capacity(comm), off = 0;
  char *out = a->recvbuf, *own = out + (size_t)comm->rank * block;
  const char *in = a->sendbuf;
  do {
    size_t piece = block - off < cap ? block - off : cap;
    TRY(start(comm, a, in + off, piece, block * (size_t)n));
    /* In place the own block already sits at its offset; otherwise it is copied from the
     * user's buffer, which is as close as the mailbox. */
    if (in != own) memcpy(own + off, in + off, piece);
    for (int k = 0; k < n; k++) {
      if (k == comm->rank) continue;
      const char *p;
      TRY(tutti__mbox_get(comm, k, a->deadline, &p));
      memcpy(out + (size_t)k * block + off, p, piece);
    }
    off += piece;
  } while (off < block);
  return TUTTI_SUCCESS;
}

/* The root posts the data; the others post only their arrival (which lets the root reuse its
 * mailbox two calls later) and copy the root's payload. A payload larger than a mailbox goes
 * in mailbox-sized pieces, one one-shot call each: the root runs a few pieces ahead of the
 * slowest reader (as many as the transport keeps big mailboxes, less one), so its copy in and
 * their copies out overlap, and every byte is copied once by the root and once by each
 * reader. A chain copies it twice on every rank between the root and the last (2 (n - 1)
 * copies against n), which costs most where ranks outnumber CPUs: at n = 4 on 2 CPUs, 1 MiB
 * as 16 broadcasts of 64 KiB took 140-168 us against the chain's 184-190; at n = 8 312-346
 * against 435-554. */
tutti_result_t tutti__oneshot_broadcast(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  size_t bytes = a->count * a->esize, cap = tutti__mbox_capacity(comm);
  int root = comm->rank == a->root;
  size_t off = 0;
  do {
    size_t piece = bytes - off < cap ? bytes - off : cap;
    if (root) {
      const char *from = (const char *)a->sendbuf + off;
      TRY(start(comm, a, from, piece, bytes));
      /* After the post, so that the readers start at once (the piece is in cache now). */
      if (a->sendbuf != a->recvbuf) memcpy((char *)a->recvbuf + off, from, piece);
    } else {
      const char *p;
      TRY(start(comm, a, NULL, 0, bytes));
      TRY(tutti__mbox_get(comm, a->root, a->deadline, &p));
      memcpy((char *)a->recvbuf + off, p, piece);
    }
    off += piece;
  } while (off < bytes);
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__oneshot_barrier(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  TRY(start(comm, a, NULL, 0, 0));
  for (int k = 0; k < comm->nranks; k++) {
    const char *p;
    if (k != comm->rank) TRY(tutti__mbox_get(comm, k, a->deadline, &p));
  }
  return TUTTI_SUCCESS;
}
