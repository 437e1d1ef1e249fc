/*
 * The collective entry points: check the arguments (before touching any buffer or peer),
 * pick the algorithm, run it, and turn a failure into a failed communicator.
 */
#include <stdint.h>

#include "algo/algo.h"
#include "kernels/kernels.h"
#include "transport/transport.h"

static tutti_result_t invalid(struct tutti_comm *comm, const char *fmt, const char *what,
                              long long value) {
  return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, fmt, what, value);
}

/* Checks dtype, op, root, sizes and buffers of a; the communicator stays usable if not. */
static tutti_result_t check_args(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                 int reduces, int has_root, size_t nblocks) {
  if (!tutti__dtype_valid((int)a->dtype))
    return invalid(comm, "%s %lld is not a tutti_dtype_t", "dtype", (long long)a->dtype);
  if (reduces && !tutti__op_valid((int)a->op))
    return invalid(comm, "%s %lld is not a tutti_op_t", "op", (long long)a->op);
  if (has_root && (a->root < 0 || a->root >= comm->nranks))
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "root %d is not a rank of this "
                        "communicator of %d", a->root, comm->nranks);
  size_t es = tutti__dtype_size(a->dtype);
  if (a->count > SIZE_MAX / es / nblocks)
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "count %zu of %s overflows the "
                        "address space", a->count, tutti__dtype_name((int)a->dtype));
  if (a->count == 0) return TUTTI_SUCCESS;
  int is_root = has_root && a->root == comm->rank;
  /* Broadcast reads sendbuf only at the root; reduce writes recvbuf only at the root. */
  int need_send = a->coll != TUTTI_COLL_BROADCAST || is_root;
  int need_recv = a->coll != TUTTI_COLL_REDUCE || is_root;
  if (need_send && !a->sendbuf)
    return invalid(comm, "%s is NULL with count %lld", "sendbuf", (long long)a->count);
  if (need_recv && !a->recvbuf)
    return invalid(comm, "%s is NULL with count %lld", "recvbuf", (long long)a->count);
  return TUTTI_SUCCESS;
}

static tutti_result_t run(struct tutti_comm *comm, tutti_coll_args_t *a) {
  if (atomic_load(&comm->aborted)) {
    tutti__error(comm, TUTTI_ERR_ABORTED, "the communicator was aborted");
    tutti__comm_fail(comm, TUTTI_ERR_ABORTED);
    return TUTTI_ERR_ABORTED;
  }
  if (comm->failed != TUTTI_SUCCESS) {
    WARN("coll", comm->rank, "%s refused: the communicator failed earlier: %s", comm->op_name,
         comm->last_error);
    return TUTTI_ERR_INVALID_USAGE;
  }
  comm->seq++;
  if (a->count == 0 && a->coll != TUTTI_COLL_BARRIER) return TUTTI_SUCCESS;
  a->esize = tutti__dtype_size(a->dtype);
  a->deadline = tutti__deadline_after(comm->cfg.timeout_s);
  const tutti_algo_t *algo = tutti__algo_select(comm, a);
  if (!algo) return tutti__error(comm, TUTTI_ERR_INTERNAL, "no algorithm implements %s",
                                 tutti__coll_name(a->coll));
  TRACE("coll", comm->rank, "%s #%u: %zu x %s, algorithm %s", tutti__coll_name(a->coll),
        comm->seq, a->count, tutti__dtype_name((int)a->dtype), algo->name);
  tutti_result_t res = algo->fn[a->coll](comm, a);
  if (res != TUTTI_SUCCESS) {
    tutti__comm_fail(comm, res);
    tutti__drop_ops(comm);
  }
  return res;
}

/* Common prologue: a NULL communicator has nowhere to keep a message, so it is logged. */
#define ENTER(comm, name)                                                                   \
  do {                                                                                      \
    if (!(comm)) {                                                                          \
      WARN("coll", -1, "%s: the communicator is NULL", name);                               \
      return TUTTI_ERR_INVALID_ARGUMENT;                                                    \
    }                                                                                       \
    (comm)->op_name = name;                                                                 \
  } while (0)

tutti_result_t tutti_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                               tutti_dtype_t dtype, tutti_comm_t comm) {
  ENTER(comm, "tutti_allgather");
  tutti_coll_args_t a = {TUTTI_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, TUTTI_SUM,
                         0, 0, 0};
  TRY(check_args(comm, &a, 0, 0, (size_t)comm->nranks));
  return run(comm, &a);
}

tutti_result_t tutti_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                               tutti_dtype_t dtype, tutti_op_t op, tutti_comm_t comm) {
  ENTER(comm, "tutti_allreduce");
  tutti_coll_args_t a = {TUTTI_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0, 0, 0};
  TRY(check_args(comm, &a, 1, 0, 1));
  return run(comm, &a);
}

tutti_result_t tutti_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                    tutti_dtype_t dtype, tutti_op_t op, tutti_comm_t comm) {
  ENTER(comm, "tutti_reduce_scatter");
  tutti_coll_args_t a = {TUTTI_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op,
                         0, 0, 0};
  TRY(check_args(comm, &a, 1, 0, (size_t)comm->nranks));
  return run(comm, &a);
}

tutti_result_t tutti_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                               tutti_dtype_t dtype, int root, tutti_comm_t comm) {
  ENTER(comm, "tutti_broadcast");
  tutti_coll_args_t a = {TUTTI_COLL_BROADCAST, sendbuf, recvbuf, count, dtype, TUTTI_SUM,
                         root, 0, 0};
  TRY(check_args(comm, &a, 0, 1, 1));
  return run(comm, &a);
}

tutti_result_t tutti_reduce(const void *sendbuf, void *recvbuf, size_t count,
                            tutti_dtype_t dtype, tutti_op_t op, int root, tutti_comm_t comm) {
  ENTER(comm, "tutti_reduce");
  tutti_coll_args_t a = {TUTTI_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root, 0, 0};
  TRY(check_args(comm, &a, 1, 1, 1));
  return run(comm, &a);
}

tutti_result_t tutti_barrier(tutti_comm_t comm) {
  ENTER(comm, "tutti_barrier");
  tutti_coll_args_t a = {TUTTI_COLL_BARRIER, NULL, NULL, 0, TUTTI_UINT8, TUTTI_SUM, 0, 0, 0};
  return run(comm, &a);
}
