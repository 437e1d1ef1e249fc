/*
 * The collective and point-to-point entry points: check the arguments (before touching any
 * buffer or peer), turn the call into a task, and hand it to the engine. Running the task is
 * task.c's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/engine.h"
#include "core/userop.h"
#include "kernels/kernels.h"

/* ---- Argument checks ----------------------------------------------------------------- */

static tutti_result_t bad(struct tutti_comm *comm, const char *what, const char *why) {
  return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "%s %s", what, why);
}

tutti_result_t tutti__check_dtype_op(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                     int reduces) {
  if (!tutti__dtype_valid((int)a->dtype))
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "dtype %d is not a tutti_dtype_t",
                        (int)a->dtype);
  if (!reduces) return TUTTI_SUCCESS;
  if ((int)a->op >= TUTTI_NUM_OPS) return tutti__userop_check(comm, a->op, a->dtype);
  if (!tutti__op_valid((int)a->op))
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "op %d is not a tutti_op_t",
                        (int)a->op);
  if (!tutti__op_supports((int)a->op, (int)a->dtype))
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "op %s does not apply to dtype %s",
                        tutti__op_name((int)a->op), tutti__dtype_name((int)a->dtype));
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__check_rank(struct tutti_comm *comm, const char *what, int r) {
  if (r < 0 || r >= comm->nranks)
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "%s %d is not a rank of this "
                        "communicator of %d", what, r, comm->nranks);
  return TUTTI_SUCCESS;
}

/* count elements, times mult, of the widest dtype (16 bytes bounds every element size) must
 * fit in the address space. */
tutti_result_t tutti__check_size(struct tutti_comm *comm, size_t count, size_t mult) {
  if (mult && count > SIZE_MAX / 16 / mult)
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "count %zu overflows the address "
                        "space", count);
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__need_buf(struct tutti_comm *comm, const void *buf, const char *name,
                               size_t count) {
  if (count && !buf)
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "%s is NULL with %zu elements to "
                        "move", name, count);
  return TUTTI_SUCCESS;
}

/* Sums an array of nranks counts, checking it and the displacements for overflow; displs
 * may be NULL. */
tutti_result_t tutti__check_array(struct tutti_comm *comm, const size_t *counts,
                                  const size_t *displs, const char *name, size_t *total) {
  if (!counts) return bad(comm, name, "is NULL");
  size_t sum = 0;
  for (int i = 0; i < comm->nranks; i++) {
    if (counts[i] > SIZE_MAX / 16 - sum ||
        (displs && displs[i] > SIZE_MAX / 16 - counts[i]))
      return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "%s[%d] overflows the address "
                          "space", name, i);
    sum += counts[i];
  }
  *total = sum;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__check_overlap(struct tutti_comm *comm, const void *sendbuf, size_t sbytes,
                                    const void *recvbuf, size_t rbytes, const void *in_place) {
  uintptr_t s = (uintptr_t)sendbuf, r = (uintptr_t)recvbuf;
  if (!sbytes || !rbytes || s + sbytes <= r || r + rbytes <= s) return TUTTI_SUCCESS;
  if (in_place && sendbuf == in_place) return TUTTI_SUCCESS;
  /* Overlapping buffers would be read after being written, differently on every algorithm. */
  if (in_place)
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "sendbuf and recvbuf overlap, but not "
                        "in this call's in-place layout (this rank's block of the larger "
                        "buffer, or the same address)");
  return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "sendbuf and recvbuf overlap, which "
                      "this call does not allow");
}

static int by_displ(const void *x, const void *y, void *ctx) {
  const size_t *d = ctx, a = d[*(const int *)x], b = d[*(const int *)y];
  return a < b ? -1 : a > b;
}

tutti_result_t tutti__check_blocks(struct tutti_comm *comm, const size_t *counts,
                                   const size_t *displs, const char *name) {
  /* Displacements usually increase: one pass proves those disjoint without sorting. */
  size_t end = 0;
  int i, n = comm->nranks, sorted = 1;
  for (i = 0; i < n && sorted; i++)
    if (counts[i]) {
      sorted = displs[i] >= end;
      end = displs[i] + counts[i];
    }
  if (sorted) return TUTTI_SUCCESS;
  int *order = malloc((size_t)n * sizeof *order), k = 0;
  if (!order) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory");
  for (i = 0; i < n; i++)
    if (counts[i]) order[k++] = i;
  qsort_r(order, (size_t)k, sizeof *order, by_displ, (void *)displs);
  tutti_result_t res = TUTTI_SUCCESS;
  for (i = 1; i < k && res == TUTTI_SUCCESS; i++) {
    int p = order[i - 1], q = order[i];
    if (displs[p] + counts[p] > displs[q])
      res = tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "the %s blocks of ranks %d and %d "
                         "overlap (elements %zu..%zu and %zu..%zu): the result would depend on "
                         "arrival order", name, p, q, displs[p], displs[p] + counts[p] - 1,
                         displs[q], displs[q] + counts[q] - 1);
  }
  free(order);
  return res;
}

size_t tutti__extent(const struct tutti_comm *comm, const size_t *counts, const size_t *displs) {
  size_t end = 0, sum = 0;
  for (int i = 0; i < comm->nranks; i++) {
    size_t e = (displs ? displs[i] : sum) + counts[i];
    sum += counts[i];
    if (counts[i] && e > end) end = e;
  }
  return end;
}

/* ---- Entry points ---------------------------------------------------------------------- */

tutti_result_t tutti__submit(struct tutti_comm *comm, const char *api, const tutti_coll_args_t *a,
                             tutti_request_t *req) {
  tutti_task_t t = {*a, api, NULL};
  return tutti__engine_submit(comm, &t, req);
}

/* The task of a call of the fixed-size collectives, every field written once, for their hot
 * path: a compound literal zeroes the whole struct first (GCC emits a `rep stos`, 40% of
 * the argument checks' cycles in an 8-byte broadcast) and tutti__submit's copy then reads
 * 16-byte pieces back from 8-byte stores just made, which the CPU cannot forward. */
static inline void task_of(tutti_task_t *t, const char *api, tutti_coll_t kind,
                           const void *sendbuf, void *recvbuf, size_t count, tutti_dtype_t dtype,
                           tutti_op_t op, int root) {
  tutti_coll_args_t *a = &t->a;
  a->coll = kind;
  a->sendbuf = sendbuf;
  a->recvbuf = recvbuf;
  a->count = count;
  a->dtype = dtype;
  a->op = op;
  a->root = root;
  a->esize = 0;
  a->deadline = 0;
  a->counts = a->displs = a->rcounts = a->rdispls = NULL;
  a->peer = a->tag = 0;
  a->status = NULL;
  t->api = api;
  t->arrays = NULL;
}

static tutti_result_t do_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                   tutti_dtype_t dtype, tutti_comm_t comm, tutti_request_t *req,
                                   const char *api) {
  TUTTI_ENTER(comm, api);
  tutti_task_t t;
  task_of(&t, api, TUTTI_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, TUTTI_SUM, 0);
  TRY(tutti__check_dtype_op(comm, &t.a, 0));
  TRY(tutti__check_size(comm, sendcount, (size_t)comm->nranks));
  TRY(tutti__need_buf(comm, sendbuf, "sendbuf", sendcount));
  TRY(tutti__need_buf(comm, recvbuf, "recvbuf", sendcount));
  size_t es = tutti__dtype_size(dtype), bytes = sendcount * es;
  TRY(tutti__check_overlap(comm, sendbuf, bytes, recvbuf, bytes * (size_t)comm->nranks,
                           (char *)recvbuf + (size_t)comm->rank * bytes));
  return tutti__engine_submit(comm, &t, req);
}

static tutti_result_t do_reducing(tutti_coll_t kind, const void *sendbuf, void *recvbuf,
                                  size_t count, tutti_dtype_t dtype, tutti_op_t op, int root,
                                  tutti_comm_t comm, tutti_request_t *req, const char *api) {
  TUTTI_ENTER(comm, api);
  tutti_task_t t;
  task_of(&t, api, kind, sendbuf, recvbuf, count, dtype, op, root);
  int has_root = kind == TUTTI_COLL_BROADCAST || kind == TUTTI_COLL_REDUCE;
  TRY(tutti__check_dtype_op(comm, &t.a, kind != TUTTI_COLL_BROADCAST));
  if (has_root) TRY(tutti__check_rank(comm, "root", root));
  TRY(tutti__check_size(comm, count, kind == TUTTI_COLL_REDUCE_SCATTER ? (size_t)comm->nranks : 1));
  int is_root = has_root && root == comm->rank;
  /* Broadcast reads sendbuf only at the root; reduce writes recvbuf only at the root. */
  if (kind != TUTTI_COLL_BROADCAST || is_root) TRY(tutti__need_buf(comm, sendbuf, "sendbuf", count));
  if (kind != TUTTI_COLL_REDUCE || is_root) TRY(tutti__need_buf(comm, recvbuf, "recvbuf", count));
  /* In place is sendbuf == recvbuf, except for reduce-scatter, whose output is this rank's
   * block of the input; rooted calls use both buffers at the root only. */
  size_t bytes = count * tutti__dtype_size(dtype);
  if (kind == TUTTI_COLL_REDUCE_SCATTER)
    TRY(tutti__check_overlap(comm, sendbuf, bytes * (size_t)comm->nranks, recvbuf, bytes,
                             (const char *)recvbuf - (size_t)comm->rank * bytes));
  else if (!has_root || is_root)
    TRY(tutti__check_overlap(comm, sendbuf, bytes, recvbuf, bytes, recvbuf));
  return tutti__engine_submit(comm, &t, req);
}

tutti_result_t tutti_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                               tutti_dtype_t dtype, tutti_comm_t comm) {
  return do_allgather(sendbuf, recvbuf, sendcount, dtype, comm, NULL, "tutti_allgather");
}
tutti_result_t tutti_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                tutti_dtype_t dtype, tutti_comm_t comm, tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  return do_allgather(sendbuf, recvbuf, sendcount, dtype, comm, req, "tutti_iallgather");
}
tutti_result_t tutti_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                               tutti_dtype_t dtype, tutti_op_t op, tutti_comm_t comm) {
  return do_reducing(TUTTI_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0, comm, NULL,
                     "tutti_allreduce");
}
tutti_result_t tutti_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                                tutti_dtype_t dtype, tutti_op_t op, tutti_comm_t comm,
                                tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  return do_reducing(TUTTI_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0, comm, req,
                     "tutti_iallreduce");
}
tutti_result_t tutti_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                    tutti_dtype_t dtype, tutti_op_t op, tutti_comm_t comm) {
  return do_reducing(TUTTI_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0,
                     comm, NULL, "tutti_reduce_scatter");
}
tutti_result_t tutti_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                     tutti_dtype_t dtype, tutti_op_t op, tutti_comm_t comm,
                                     tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  return do_reducing(TUTTI_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0,
                     comm, req, "tutti_ireduce_scatter");
}
tutti_result_t tutti_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                               tutti_dtype_t dtype, int root, tutti_comm_t comm) {
  return do_reducing(TUTTI_COLL_BROADCAST, sendbuf, recvbuf, count, dtype, TUTTI_SUM, root,
                     comm, NULL, "tutti_broadcast");
}
tutti_result_t tutti_ibroadcast(const void *sendbuf, void *recvbuf, size_t count,
                                tutti_dtype_t dtype, int root, tutti_comm_t comm,
                                tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  return do_reducing(TUTTI_COLL_BROADCAST, sendbuf, recvbuf, count, dtype, TUTTI_SUM, root,
                     comm, req, "tutti_ibroadcast");
}
tutti_result_t tutti_reduce(const void *sendbuf, void *recvbuf, size_t count,
                            tutti_dtype_t dtype, tutti_op_t op, int root, tutti_comm_t comm) {
  return do_reducing(TUTTI_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root, comm, NULL,
                     "tutti_reduce");
}
tutti_result_t tutti_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                             tutti_dtype_t dtype, tutti_op_t op, int root, tutti_comm_t comm,
                             tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  return do_reducing(TUTTI_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root, comm, req,
                     "tutti_ireduce");
}

static tutti_result_t do_barrier(tutti_comm_t comm, tutti_request_t *req, const char *api) {
  TUTTI_ENTER(comm, api);
  tutti_coll_args_t a = TUTTI_ARGS(TUTTI_COLL_BARRIER, .dtype = TUTTI_UINT8);
  return tutti__submit(comm, api, &a, req);
}
tutti_result_t tutti_barrier(tutti_comm_t comm) { return do_barrier(comm, NULL, "tutti_barrier"); }
tutti_result_t tutti_ibarrier(tutti_comm_t comm, tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  return do_barrier(comm, req, "tutti_ibarrier");
}

static tutti_result_t do_p2p(tutti_coll_t kind, const void *buf, size_t count,
                             tutti_dtype_t dtype, int peer, int tag, tutti_status_t *status,
                             tutti_comm_t comm, tutti_request_t *req, const char *api) {
  TUTTI_ENTER(comm, api);
  tutti_coll_args_t a = TUTTI_ARGS(kind, .count = count, .dtype = dtype, .peer = peer,
                                   .tag = tag, .status = status);
  if (kind == TUTTI_COLL_SEND)
    a.sendbuf = buf;
  else
    a.recvbuf = (void *)buf;
  TRY(tutti__check_dtype_op(comm, &a, 0));
  /* The wildcards belong to the tagged calls; for tutti_recv, -1 stays a bad rank. */
  int any = kind == TUTTI_COLL_RECV && strstr(api, "_tag") != NULL;
  if (!(any && peer == TUTTI_ANY_SOURCE)) {
    TRY(tutti__check_rank(comm, "peer", peer));
    if (peer == comm->rank)
      return bad(comm, "peer", "is this rank: a rank cannot send to itself");
  } else if (comm->nranks == 1) {
    return bad(comm, "peer", "is TUTTI_ANY_SOURCE on a communicator of one rank: no rank can "
               "send to it");
  }
  if (tag < 0 && !(any && tag == TUTTI_ANY_TAG))
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "tag %d is negative (tags are >= 0"
                        "%s)", tag, any ? "; TUTTI_ANY_TAG is -1" : "");
  TRY(tutti__check_size(comm, count, 1));
  TRY(tutti__need_buf(comm, buf, "buf", count));
  if (status) *status = (tutti_status_t){-1, -1};
  return tutti__submit(comm, api, &a, req);
}
tutti_result_t tutti_send(const void *buf, size_t count, tutti_dtype_t dtype, int peer,
                          tutti_comm_t comm) {
  return do_p2p(TUTTI_COLL_SEND, buf, count, dtype, peer, 0, NULL, comm, NULL, "tutti_send");
}
tutti_result_t tutti_recv(void *buf, size_t count, tutti_dtype_t dtype, int peer,
                          tutti_comm_t comm) {
  return do_p2p(TUTTI_COLL_RECV, buf, count, dtype, peer, 0, NULL, comm, NULL, "tutti_recv");
}
tutti_result_t tutti_isend(const void *buf, size_t count, tutti_dtype_t dtype, int peer,
                           tutti_comm_t comm, tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  return do_p2p(TUTTI_COLL_SEND, buf, count, dtype, peer, 0, NULL, comm, req, "tutti_isend");
}
tutti_result_t tutti_irecv(void *buf, size_t count, tutti_dtype_t dtype, int peer,
                           tutti_comm_t comm, tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  return do_p2p(TUTTI_COLL_RECV, buf, count, dtype, peer, 0, NULL, comm, req, "tutti_irecv");
}
tutti_result_t tutti_send_tag(const void *buf, size_t count, tutti_dtype_t dtype, int peer,
                              int tag, tutti_comm_t comm) {
  return do_p2p(TUTTI_COLL_SEND, buf, count, dtype, peer, tag, NULL, comm, NULL,
                "tutti_send_tag");
}
tutti_result_t tutti_recv_tag(void *buf, size_t count, tutti_dtype_t dtype, int peer, int tag,
                              tutti_comm_t comm, tutti_status_t *status) {
  return do_p2p(TUTTI_COLL_RECV, buf, count, dtype, peer, tag, status, comm, NULL,
                "tutti_recv_tag");
}
tutti_result_t tutti_isend_tag(const void *buf, size_t count, tutti_dtype_t dtype, int peer,
                               int tag, tutti_comm_t comm, tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  return do_p2p(TUTTI_COLL_SEND, buf, count, dtype, peer, tag, NULL, comm, req,
                "tutti_isend_tag");
}
tutti_result_t tutti_irecv_tag(void *buf, size_t count, tutti_dtype_t dtype, int peer, int tag,
                               tutti_comm_t comm, tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  return do_p2p(TUTTI_COLL_RECV, buf, count, dtype, peer, tag, NULL, comm, req,
                "tutti_irecv_tag");
}
