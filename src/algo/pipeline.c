/* Send windows and blocking receives shared by the pipelined algorithms. */
#include <string.h>

#include "algo/algo.h"
#include "kernels/kernels.h"

size_t tutti__chunk_for_cache(size_t l2_bytes, size_t fallback) {
  if (!l2_bytes) return fallback;
  size_t want = l2_bytes / 4, c = (size_t)64 << 10;
  while (c < ((size_t)1 << 20) && c * 2 <= want) c *= 2;
  return c;
}

void tutti__sendq_init(tutti_sendq_t *q) { memset(q, 0, sizeof *q); }

tutti_result_t tutti__sendq_acquire(struct tutti_comm *comm, tutti_sendq_t *q, int64_t deadline,
                                    int *slot) {
  int s = q->next;
  if (q->used[s]) TRY(tutti__wait(comm, &q->op[s], deadline));
  q->used[s] = 0;
  *slot = s;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__sendq_post(struct tutti_comm *comm, tutti_sendq_t *q, int slot, int peer,
                                 const void *buf, size_t len) {
  q->used[slot] = 1;
  q->next = (slot + 1) % TUTTI_SENDQ_SLOTS;
  return tutti__isend(comm, &q->op[slot], peer, buf, len);
}

tutti_result_t tutti__sendq_drain(struct tutti_comm *comm, tutti_sendq_t *q, int64_t deadline) {
  for (int i = 0; i < TUTTI_SENDQ_SLOTS; i++) {
    int s = (q->next + i) % TUTTI_SENDQ_SLOTS; /* oldest first */
    if (q->used[s]) TRY(tutti__wait(comm, &q->op[s], deadline));
    q->used[s] = 0;
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__recv(struct tutti_comm *comm, int peer, void *buf, size_t len,
                           int64_t deadline) {
  tutti_xfer_t op;
  TRY(tutti__irecv(comm, &op, peer, buf, len));
  return tutti__wait(comm, &op, deadline);
}

tutti_result_t tutti__sendrecv(struct tutti_comm *comm, int to, const void *sbuf, size_t slen,
                               int from, void *rbuf, size_t rlen, int64_t deadline) {
  tutti_xfer_t so, ro;
  /* The receive is posted first so that, while this rank waits for room to send, it keeps
   * draining its own inbound queue: that is what makes a ring of these deadlock-free. */
  if (rlen) TRY(tutti__irecv(comm, &ro, from, rbuf, rlen));
  if (slen) TRY(tutti__isend(comm, &so, to, sbuf, slen));
  if (rlen) TRY(tutti__wait(comm, &ro, deadline));
  if (slen) TRY(tutti__wait(comm, &so, deadline));
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__sendrecv_reduce(struct tutti_comm *comm, const tutti_coll_args_t *a, int to,
                                      const void *sbuf, size_t slen, int from, void *dst,
                                      const void *own, int own_first, void *tmp, size_t count) {
  size_t rlen = count * a->esize;
  if (!rlen || !tutti__can_recv_reduce(comm, from)) {
    TRY(tutti__sendrecv(comm, to, sbuf, slen, from, tmp, rlen, a->deadline));
    if (count)
      tutti__reduce(dst, own_first ? own : tmp, own_first ? tmp : own, count, a->dtype, a->op);
    return TUTTI_SUCCESS;
  }
  tutti_xfer_t so, ro;
  TRY(tutti__irecv_reduce(comm, &ro, from, dst, own, rlen, (int)a->dtype, (int)a->op,
                          own_first, tmp));
  if (slen) TRY(tutti__isend(comm, &so, to, sbuf, slen));
  TRY(tutti__wait(comm, &ro, a->deadline));
  if (slen) TRY(tutti__wait(comm, &so, a->deadline));
  return TUTTI_SUCCESS;
}
