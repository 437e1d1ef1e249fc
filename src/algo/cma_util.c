/* The transfers and small exchanges the single-copy algorithms share (cma.h). */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "algo/cma.h"
#include "algo/patterns.h"
#include "kernels/kernels.h"

/* Moves len bytes between local and addr in peer's memory, in either direction. */
static tutti_result_t cma_xfer(struct tutti_comm *comm, int peer, char *local, uint64_t addr,
                               size_t len, int write) {
  while (len) {
    struct iovec l = {local, len};
    struct iovec r = {(void *)(uintptr_t)addr, len};
    pid_t pid = comm->peers[peer].pid;
    ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                      : process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n <= 0) {
      char who[128];
      int e = n < 0 ? errno : EFAULT;
      /* A peer that is gone may have left because another rank failed first and told
       * everyone: that failure, published through the transport, is the one to report. */
      tutti_transport_t *tp = comm->peers[peer].tp;
      if (tp) TRY(tp->ops->block(tp, NULL, 0, 0));
      tutti__peer_desc(comm, peer, who, sizeof who);
      if (e == ESRCH) {
        if (!comm->culprit) comm->culprit = peer + 1;
        return tutti__error(comm, TUTTI_ERR_REMOTE, "%s died during the collective (its "
                            "buffer cannot be %s any more)", who, write ? "written" : "read");
      }
      return tutti__error(comm, TUTTI_ERR_SYSTEM, "cannot %s %zu bytes of %s's buffer: %s",
                          write ? "write" : "read", len, who, strerror(e));
    }
    local += n;
    addr += (uint64_t)n;
    len -= (size_t)n;
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__cma_read(struct tutti_comm *comm, int peer, void *dst, uint64_t addr,
                               size_t len) {
  return cma_xfer(comm, peer, dst, addr, len, 0);
}

tutti_result_t tutti__cma_write(struct tutti_comm *comm, int peer, uint64_t addr,
                                const void *src, size_t len) {
  /* process_vm_writev only reads the local side; the iovec type is not const. */
  return cma_xfer(comm, peer, (char *)(uintptr_t)src, addr, len, 1);
}

tutti_result_t tutti__cma_fetch(struct tutti_comm *comm, int peer, void *dst,
                                const tutti_regbuf_t *b, uint64_t addr, size_t len, int nt) {
  const void *p = tutti__memreg_peer(comm, peer, b, addr, len);
  if (!p) return tutti__cma_read(comm, peer, dst, addr, len);
  tutti__copy(dst, p, len, nt);
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__cma_put(struct tutti_comm *comm, int peer, const tutti_regbuf_t *b,
                              uint64_t addr, const void *src, size_t len, int nt) {
  void *p = tutti__memreg_peer(comm, peer, b, addr, len);
  if (!p) return tutti__cma_write(comm, peer, addr, src, len);
  tutti__copy(p, src, len, nt);
  return TUTTI_SUCCESS;
}

int tutti__cma_nt(const struct tutti_comm *comm, size_t bytes) {
  const tutti_model_t *m = &comm->cfg.model;
  size_t llc = m->l3_bytes ? m->l3_bytes : m->l2_bytes;
  return llc && bytes > llc;
}

/* ops[2k] receives from peer me - k, ops[2k + 1] sends to me + k. */
static int recv_slot(const struct tutti_comm *comm, int peer) {
  return 2 * tutti__mod(comm->rank - peer, comm->nranks);
}

tutti_result_t tutti__cma_exchange_post(struct tutti_comm *comm, const void *mine, void *theirs,
                                        size_t len) {
  int n = comm->nranks, me = comm->rank;
  tutti_xfer_t *ops = comm->cma_ops;
  for (int k = 1; k < n; k++) {
    int from = tutti__mod(me - k, n);
    TRY(tutti__irecv(comm, &ops[2 * k], from, (char *)theirs + (size_t)from * len, len));
  }
  for (int k = 1; k < n; k++)
    TRY(tutti__isend(comm, &ops[2 * k + 1], tutti__mod(me + k, n), mine, len));
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__cma_await(struct tutti_comm *comm, int peer, int64_t deadline) {
  return tutti__wait(comm, &comm->cma_ops[recv_slot(comm, peer)], deadline);
}

tutti_result_t tutti__cma_exchange_end(struct tutti_comm *comm, int64_t deadline) {
  for (int k = 1; k < comm->nranks; k++) {
    TRY(tutti__wait(comm, &comm->cma_ops[2 * k], deadline));
    TRY(tutti__wait(comm, &comm->cma_ops[2 * k + 1], deadline));
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__cma_all_exchange(struct tutti_comm *comm, const void *mine, void *theirs,
                                       size_t len, int64_t deadline, cma_arrival_fn on,
                                       void *ctx) {
  int n = comm->nranks, me = comm->rank, np = 0;
  tutti_xfer_t *ops = comm->cma_ops, **pending = comm->cma_pending;
  TRY(tutti__cma_exchange_post(comm, mine, theirs, len));
  /* With nothing to do per peer, the order does not matter and waiting in it is cheaper
   * than scanning for the first arrival (thread ranks may be hundreds). */
  if (on) {
    TRY(on(comm, me, ctx));
    for (int k = 1; k < n; k++) pending[np++] = &ops[2 * k];
  }
  while (np) {
    int i;
    TRY(tutti__wait_any(comm, pending, np, deadline, &i));
    int k = (int)(pending[i] - ops) / 2;
    pending[i] = pending[--np];
    TRY(on(comm, tutti__mod(me - k, n), ctx));
  }
  return tutti__cma_exchange_end(comm, deadline);
}

/* Fills this rank's descriptor of call a in comm->cma_descs (*descs). */
static cma_desc_t *describe(struct tutti_comm *comm, const tutti_coll_args_t *a,
                            cma_desc_t **descs) {
  cma_desc_t *d = comm->cma_descs;
  size_t bytes = a->count * a->esize, n = (size_t)comm->nranks;
  size_t send = a->coll == TUTTI_COLL_REDUCE_SCATTER ? n * bytes : bytes;
  size_t recv = a->coll == TUTTI_COLL_ALLGATHER ? n * bytes : bytes;
  tutti__memreg_describe(comm, a->sendbuf, send, &d[comm->rank].send);
  tutti__memreg_describe(comm, a->recvbuf, recv, &d[comm->rank].recv);
  *descs = d;
  return &d[comm->rank];
}

tutti_result_t tutti__cma_exchange_descs(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                         cma_desc_t **descs, cma_arrival_fn on, void *ctx) {
  cma_desc_t *mine = describe(comm, a, descs);
  return tutti__cma_all_exchange(comm, mine, *descs, sizeof *mine, a->deadline, on, ctx);
}

tutti_result_t tutti__cma_post_descs(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                     cma_desc_t **descs) {
  cma_desc_t *mine = describe(comm, a, descs);
  return tutti__cma_exchange_post(comm, mine, *descs, sizeof *mine);
}

tutti_result_t tutti__cma_barrier_tokens(struct tutti_comm *comm, int64_t deadline,
                                         cma_arrival_fn on, void *ctx) {
  uint64_t token = comm->seq;
  return tutti__cma_all_exchange(comm, &token, comm->cma_tokens, sizeof token, deadline, on,
                                 ctx);
}
