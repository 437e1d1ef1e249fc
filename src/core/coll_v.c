/*
 * Entry points of the variable-count collectives and of the equal-count forms built on them
 * (all-to-all, gather, scatter), which pass uniform arrays to the same algorithms.
 */
#include <stdlib.h>

#include "core/check.h"
#include "kernels/kernels.h"

static tutti_result_t do_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                    const size_t *recvcounts, const size_t *displs,
                                    tutti_dtype_t dtype, tutti_comm_t comm,
                                    tutti_request_t *req, const char *api) {
  TUTTI_ENTER(comm, api);
  tutti_coll_args_t a = TUTTI_ARGS(TUTTI_COLL_ALLGATHERV, .sendbuf = sendbuf, .recvbuf = recvbuf,
                                   .count = sendcount, .dtype = dtype, .counts = recvcounts,
                                   .displs = displs);
  size_t total;
  TRY(tutti__check_dtype_op(comm, &a, 0));
  TRY(tutti__check_array(comm, recvcounts, displs, "recvcounts", &total));
  if (!displs) return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "displs is NULL");
  if (sendcount != recvcounts[comm->rank])
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "sendcount %zu differs from "
                        "recvcounts[%d] = %zu", sendcount, comm->rank, recvcounts[comm->rank]);
  TRY(tutti__need_buf(comm, sendbuf, "sendbuf", sendcount));
  TRY(tutti__need_buf(comm, recvbuf, "recvbuf", total));
  TRY(tutti__check_blocks(comm, recvcounts, displs, "receive"));
  size_t es = tutti__dtype_size(dtype);
  TRY(tutti__check_overlap(comm, sendbuf, sendcount * es, recvbuf,
                           tutti__extent(comm, recvcounts, displs) * es,
                           (char *)recvbuf + displs[comm->rank] * es));
  return tutti__submit(comm, api, &a, req);
}

tutti_result_t tutti_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                const size_t *recvcounts, const size_t *displs,
                                tutti_dtype_t dtype, tutti_comm_t comm) {
  return do_allgatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, comm, NULL,
                       "tutti_allgatherv");
}
tutti_result_t tutti_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                 const size_t *recvcounts, const size_t *displs,
                                 tutti_dtype_t dtype, tutti_comm_t comm, tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  return do_allgatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, comm, req,
                       "tutti_iallgatherv");
}

static tutti_result_t do_reduce_scatterv(const void *sendbuf, void *recvbuf,
                                         const size_t *recvcounts, tutti_dtype_t dtype,
                                         tutti_op_t op, tutti_comm_t comm, tutti_request_t *req,
                                         const char *api) {
  TUTTI_ENTER(comm, api);
  tutti_coll_args_t a = TUTTI_ARGS(TUTTI_COLL_REDUCE_SCATTERV, .sendbuf = sendbuf,
                                   .recvbuf = recvbuf, .dtype = dtype, .op = op,
                                   .counts = recvcounts);
  size_t total;
  TRY(tutti__check_dtype_op(comm, &a, 1));
  TRY(tutti__check_array(comm, recvcounts, NULL, "recvcounts", &total));
  TRY(tutti__need_buf(comm, sendbuf, "sendbuf", total));
  TRY(tutti__need_buf(comm, recvbuf, "recvbuf", recvcounts[comm->rank]));
  size_t *displs = malloc((size_t)comm->nranks * sizeof *displs);
  if (!displs) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory");
  for (int i = 0; i < comm->nranks; i++) displs[i] = i ? displs[i - 1] + recvcounts[i - 1] : 0;
  size_t es = tutti__dtype_size(dtype);
  tutti_result_t bad = tutti__check_overlap(comm, sendbuf, total * es, recvbuf,
                                            recvcounts[comm->rank] * es,
                                            (const char *)recvbuf - displs[comm->rank] * es);
  if (bad != TUTTI_SUCCESS) {
    free(displs);
    return bad;
  }
  a.displs = displs;
  tutti_result_t res = tutti__submit(comm, api, &a, req); /* requests copy the arrays */
  free(displs);
  return res;
}

tutti_result_t tutti_reduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                     tutti_dtype_t dtype, tutti_op_t op, tutti_comm_t comm) {
  return do_reduce_scatterv(sendbuf, recvbuf, recvcounts, dtype, op, comm, NULL,
                            "tutti_reduce_scatterv");
}
tutti_result_t tutti_ireduce_scatterv(const void *sendbuf, void *recvbuf,
                                      const size_t *recvcounts, tutti_dtype_t dtype,
                                      tutti_op_t op, tutti_comm_t comm, tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  return do_reduce_scatterv(sendbuf, recvbuf, recvcounts, dtype, op, comm, req,
                            "tutti_ireduce_scatterv");
}

/* Gather (to_root) and scatter share their checks: the arrays matter at the root only. */
static tutti_result_t do_rooted(tutti_coll_t kind, const void *sendbuf, void *recvbuf,
                                size_t mycount, const size_t *counts, const size_t *displs,
                                tutti_dtype_t dtype, int root, tutti_comm_t comm,
                                tutti_request_t *req, const char *api) {
  TUTTI_ENTER(comm, api);
  tutti_coll_args_t a = TUTTI_ARGS(kind, .sendbuf = sendbuf, .recvbuf = recvbuf,
                                   .count = mycount, .dtype = dtype, .root = root);
  TRY(tutti__check_dtype_op(comm, &a, 0));
  TRY(tutti__check_rank(comm, "root", root));
  TRY(tutti__check_size(comm, mycount, 1));
  int gather = kind == TUTTI_COLL_GATHERV;
  TRY(tutti__need_buf(comm, gather ? sendbuf : recvbuf, gather ? "sendbuf" : "recvbuf",
                      mycount));
  if (root == comm->rank) {
    size_t total;
    TRY(tutti__check_array(comm, counts, displs, gather ? "recvcounts" : "sendcounts", &total));
    if (!displs) return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "displs is NULL");
    if (counts[root] != mycount)
      return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "the root's own count %zu differs "
                          "from its entry %zu in the counts array", mycount, counts[root]);
    TRY(tutti__need_buf(comm, gather ? recvbuf : sendbuf, gather ? "recvbuf" : "sendbuf",
                        total));
    if (gather) TRY(tutti__check_blocks(comm, counts, displs, "receive"));
    /* The root's own block may be its in-place position in the big buffer. */
    size_t es = tutti__dtype_size(dtype), big = tutti__extent(comm, counts, displs) * es;
    if (gather)
      TRY(tutti__check_overlap(comm, sendbuf, mycount * es, recvbuf, big,
                               (char *)recvbuf + displs[root] * es));
    else
      TRY(tutti__check_overlap(comm, recvbuf, mycount * es, sendbuf, big,
                               (const char *)sendbuf + displs[root] * es));
    a.counts = counts;
    a.displs = displs;
  }
  return tutti__submit(comm, api, &a, req);
}

tutti_result_t tutti_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                             const size_t *recvcounts, const size_t *displs, tutti_dtype_t dtype,
                             int root, tutti_comm_t comm) {
  return do_rooted(TUTTI_COLL_GATHERV, sendbuf, recvbuf, sendcount, recvcounts, displs, dtype,
                   root, comm, NULL, "tutti_gatherv");
}
tutti_result_t tutti_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                              const size_t *recvcounts, const size_t *displs, tutti_dtype_t dtype,
                              int root, tutti_comm_t comm, tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  return do_rooted(TUTTI_COLL_GATHERV, sendbuf, recvbuf, sendcount, recvcounts, displs, dtype,
                   root, comm, req, "tutti_igatherv");
}
tutti_result_t tutti_scatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                              void *recvbuf, size_t recvcount, tutti_dtype_t dtype, int root,
                              tutti_comm_t comm) {
  return do_rooted(TUTTI_COLL_SCATTERV, sendbuf, recvbuf, recvcount, sendcounts, displs, dtype,
                   root, comm, NULL, "tutti_scatterv");
}
tutti_result_t tutti_iscatterv(const void *sendbuf, const size_t *sendcounts,
                               const size_t *displs, void *recvbuf, size_t recvcount,
                               tutti_dtype_t dtype, int root, tutti_comm_t comm,
                               tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  return do_rooted(TUTTI_COLL_SCATTERV, sendbuf, recvbuf, recvcount, sendcounts, displs, dtype,
                   root, comm, req, "tutti_iscatterv");
}

static tutti_result_t do_alltoallv(const void *sendbuf, const size_t *sendcounts,
                                   const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                   const size_t *rdispls, tutti_dtype_t dtype, tutti_comm_t comm,
                                   tutti_request_t *req, const char *api) {
  TUTTI_ENTER(comm, api);
  tutti_coll_args_t a = TUTTI_ARGS(TUTTI_COLL_ALLTOALLV, .sendbuf = sendbuf, .recvbuf = recvbuf,
                                   .dtype = dtype, .counts = sendcounts, .displs = sdispls,
                                   .rcounts = recvcounts, .rdispls = rdispls);
  size_t stotal, rtotal;
  TRY(tutti__check_dtype_op(comm, &a, 0));
  TRY(tutti__check_array(comm, sendcounts, sdispls, "sendcounts", &stotal));
  TRY(tutti__check_array(comm, recvcounts, rdispls, "recvcounts", &rtotal));
  if (!sdispls || !rdispls)
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "%s is NULL",
                        sdispls ? "rdispls" : "sdispls");
  TRY(tutti__need_buf(comm, sendbuf, "sendbuf", stotal));
  TRY(tutti__need_buf(comm, recvbuf, "recvbuf", rtotal));
  TRY(tutti__check_blocks(comm, recvcounts, rdispls, "receive"));
  size_t es = tutti__dtype_size(dtype);
  TRY(tutti__check_overlap(comm, sendbuf, tutti__extent(comm, sendcounts, sdispls) * es, recvbuf,
                           tutti__extent(comm, recvcounts, rdispls) * es, NULL));
  return tutti__submit(comm, api, &a, req);
}

tutti_result_t tutti_alltoallv(const void *sendbuf, const size_t *sendcounts,
                               const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                               const size_t *rdispls, tutti_dtype_t dtype, tutti_comm_t comm) {
  return do_alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype, comm,
                      NULL, "tutti_alltoallv");
}
tutti_result_t tutti_ialltoallv(const void *sendbuf, const size_t *sendcounts,
                                const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                const size_t *rdispls, tutti_dtype_t dtype, tutti_comm_t comm,
                                tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  return do_alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype, comm,
                      req, "tutti_ialltoallv");
}

/* Equal-count forms: counts all `count`, displacements i * count. The arrays live for the
 * call only; requests copy them. */
static size_t *uniform(tutti_comm_t comm, size_t count) {
  size_t n = (size_t)comm->nranks, *arr = malloc(2 * n * sizeof *arr);
  for (size_t i = 0; arr && i < n; i++) {
    arr[i] = count;
    arr[n + i] = i * count;
  }
  return arr;
}

#define WITH_UNIFORM(comm, count, api, call)                                                \
  do {                                                                                      \
    if (!(comm)) {                                                                          \
      WARN("coll", -1, "%s: the communicator is NULL", api);                                \
      return TUTTI_ERR_INVALID_ARGUMENT;                                                    \
    }                                                                                       \
    TUTTI_SET_OP((comm), api);                                                              \
    TRY(tutti__check_size(comm, count, (size_t)(comm)->nranks));                            \
    size_t *u = uniform(comm, count);                                                       \
    if (!u) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory");                   \
    const size_t *cnt = u, *dsp = u + (comm)->nranks;                                       \
    tutti_result_t res_ = (call);                                                           \
    free(u);                                                                                \
    return res_;                                                                            \
  } while (0)

tutti_result_t tutti_alltoall(const void *sendbuf, void *recvbuf, size_t count,
                              tutti_dtype_t dtype, tutti_comm_t comm) {
  WITH_UNIFORM(comm, count, "tutti_alltoall",
               do_alltoallv(sendbuf, cnt, dsp, recvbuf, cnt, dsp, dtype, comm, NULL,
                            "tutti_alltoall"));
}
tutti_result_t tutti_ialltoall(const void *sendbuf, void *recvbuf, size_t count,
                               tutti_dtype_t dtype, tutti_comm_t comm, tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  WITH_UNIFORM(comm, count, "tutti_ialltoall",
               do_alltoallv(sendbuf, cnt, dsp, recvbuf, cnt, dsp, dtype, comm, req,
                            "tutti_ialltoall"));
}
tutti_result_t tutti_gather(const void *sendbuf, void *recvbuf, size_t count,
                            tutti_dtype_t dtype, int root, tutti_comm_t comm) {
  WITH_UNIFORM(comm, count, "tutti_gather",
               do_rooted(TUTTI_COLL_GATHERV, sendbuf, recvbuf, count, cnt, dsp, dtype, root,
                         comm, NULL, "tutti_gather"));
}
tutti_result_t tutti_igather(const void *sendbuf, void *recvbuf, size_t count,
                             tutti_dtype_t dtype, int root, tutti_comm_t comm,
                             tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  WITH_UNIFORM(comm, count, "tutti_igather",
               do_rooted(TUTTI_COLL_GATHERV, sendbuf, recvbuf, count, cnt, dsp, dtype, root,
                         comm, req, "tutti_igather"));
}
tutti_result_t tutti_scatter(const void *sendbuf, void *recvbuf, size_t count,
                             tutti_dtype_t dtype, int root, tutti_comm_t comm) {
  WITH_UNIFORM(comm, count, "tutti_scatter",
               do_rooted(TUTTI_COLL_SCATTERV, sendbuf, recvbuf, count, cnt, dsp, dtype, root,
                         comm, NULL, "tutti_scatter"));
}
tutti_result_t tutti_iscatter(const void *sendbuf, void *recvbuf, size_t count,
                              tutti_dtype_t dtype, int root, tutti_comm_t comm,
                              tutti_request_t *req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  WITH_UNIFORM(comm, count, "tutti_iscatter",
               do_rooted(TUTTI_COLL_SCATTERV, sendbuf, recvbuf, count, cnt, dsp, dtype, root,
                         comm, req, "tutti_iscatter"));
}
