/*
 * tutti — collective communication for CPU processes over shared memory and TCP.
 *
 * This is the only public header. Semantics follow NCCL (ncclAllGather & co.); where NCCL is
 * silent, MPI. Every function returns a tutti_result_t; on failure, tutti_comm_last_error()
 * gives a sentence naming the operation, the rank and the cause.
 */
#ifndef TUTTI_H
#define TUTTI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TUTTI_API __attribute__((visibility("default")))
#else
#define TUTTI_API
#endif

#define TUTTI_VERSION_MAJOR 0
#define TUTTI_VERSION_MINOR 1
#define TUTTI_VERSION_PATCH 0
#define TUTTI_VERSION_STRING "0.1.0"

/* An opaque communicator: a group of ranks that call collectives together. */
typedef struct tutti_comm *tutti_comm_t;

#define TUTTI_UNIQUE_ID_BYTES 128
/* Created by one rank with tutti_get_unique_id() and shared with the others out of band. */
typedef struct {
  char internal[TUTTI_UNIQUE_ID_BYTES];
} tutti_unique_id_t;

typedef enum {
  TUTTI_SUCCESS = 0,
  TUTTI_ERR_INVALID_ARGUMENT, /* bad pointer, count, dtype, op, rank or root           */
  TUTTI_ERR_INVALID_USAGE,    /* ranks disagree on a call, wrong order, comm unusable  */
  TUTTI_ERR_SYSTEM,           /* an OS call failed (socket, mmap, fork, ...)           */
  TUTTI_ERR_REMOTE,           /* a peer died, disconnected, or failed itself           */
  TUTTI_ERR_TIMEOUT,          /* an operation outlived its deadline                    */
  TUTTI_ERR_ABORTED,          /* the communicator was aborted                          */
  TUTTI_ERR_INTERNAL,
  TUTTI_IN_PROGRESS /* non-blocking request not finished yet                 */
} tutti_result_t;

typedef enum {
  TUTTI_INT8,
  TUTTI_UINT8,
  TUTTI_INT32,
  TUTTI_UINT32,
  TUTTI_INT64,
  TUTTI_UINT64,
  TUTTI_FLOAT16,
  TUTTI_BFLOAT16,
  TUTTI_FLOAT32,
  TUTTI_FLOAT64
} tutti_dtype_t;

/* AVG: floats divide the sum by nranks; integers divide the sum by nranks, truncating.
 * FLOAT16/BFLOAT16 accumulate in float32 and round to nearest even. */
typedef enum { TUTTI_SUM, TUTTI_PROD, TUTTI_MIN, TUTTI_MAX, TUTTI_AVG } tutti_op_t;

/* ---- Communicators ------------------------------------------------------------------- */

/* Starts a rendezvous listener in the calling process and packs its address and a fresh job
 * secret into *id. One rank calls it and passes the id to every rank (itself included). */
TUTTI_API tutti_result_t tutti_get_unique_id(tutti_unique_id_t *id);

/* Joins the communicator of nranks ranks described by id as `rank`. Collective: every rank
 * calls it; it returns once all ranks are connected, or with an error on every rank when the
 * ranks disagree (world size, duplicate rank) or the deadline (TUTTI_TIMEOUT) passes. */
TUTTI_API tutti_result_t tutti_comm_init_rank(tutti_comm_t *comm, int nranks,
                                              const tutti_unique_id_t *id, int rank);

/* Like tutti_comm_init_rank, with rank, size and rendezvous address from the environment:
 * TUTTI_RANK/TUTTI_WORLD_SIZE/TUTTI_ADDR, then torchrun's RANK/WORLD_SIZE/MASTER_ADDR/
 * MASTER_PORT, then OMPI_COMM_WORLD_RANK/SIZE or SLURM_PROCID/NTASKS (with the address from
 * TUTTI_ADDR or MASTER_ADDR/MASTER_PORT). Rank 0 hosts the rendezvous at that address. */
TUTTI_API tutti_result_t tutti_comm_init_env(tutti_comm_t *comm);

/* Frees the communicator. Never blocks on peers. */
TUTTI_API tutti_result_t tutti_comm_destroy(tutti_comm_t comm);

/* Makes every pending and future operation on comm fail with TUTTI_ERR_ABORTED, and tells the
 * peers. Safe to call from another thread while a collective is running. */
TUTTI_API tutti_result_t tutti_comm_abort(tutti_comm_t comm);

TUTTI_API tutti_result_t tutti_comm_rank(tutti_comm_t comm, int *rank);
TUTTI_API tutti_result_t tutti_comm_size(tutti_comm_t comm, int *size);

/* A static string naming the result code. */
TUTTI_API const char *tutti_result_string(tutti_result_t result);

/* The first error this communicator met, as a sentence ("tutti_allreduce (rank 2 of 4): peer
 * rank 1 (pid 812 on host a) closed the connection"), or "" if none. Valid until the next call
 * on comm. */
TUTTI_API const char *tutti_comm_last_error(tutti_comm_t comm);

/* ---- Collectives --------------------------------------------------------------------- */
/* Blocking: each returns when this rank's buffers are complete. In place: all-gather when
 * sendbuf == recvbuf + rank*sendcount; reduce-scatter when recvbuf == sendbuf + rank*recvcount;
 * all-reduce, broadcast and reduce when sendbuf == recvbuf. Count 0 is a valid no-op. */

/* recvbuf holds nranks*sendcount elements; rank i's fragment lands at offset i*sendcount.
 * Nothing is summed, de-duplicated or sorted. */
TUTTI_API tutti_result_t tutti_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                         tutti_dtype_t dtype, tutti_comm_t comm);

/* Every rank receives the element-wise reduction of all ranks' sendbuf; bit-identical on all. */
TUTTI_API tutti_result_t tutti_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                         tutti_dtype_t dtype, tutti_op_t op, tutti_comm_t comm);

/* sendbuf holds nranks*recvcount elements; rank i receives the reduction of every rank's
 * slice i. */
TUTTI_API tutti_result_t tutti_reduce_scatter(const void *sendbuf, void *recvbuf,
                                              size_t recvcount, tutti_dtype_t dtype,
                                              tutti_op_t op, tutti_comm_t comm);

/* Only the root's sendbuf is read; every rank's recvbuf receives it. */
TUTTI_API tutti_result_t tutti_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                                         tutti_dtype_t dtype, int root, tutti_comm_t comm);

/* Only the root's recvbuf is written, with the reduction of every rank's sendbuf. */
TUTTI_API tutti_result_t tutti_reduce(const void *sendbuf, void *recvbuf, size_t count,
                                      tutti_dtype_t dtype, tutti_op_t op, int root,
                                      tutti_comm_t comm);

/* Returns once every rank has entered the barrier. */
TUTTI_API tutti_result_t tutti_barrier(tutti_comm_t comm);

#ifdef __cplusplus
}
#endif
#endif /* TUTTI_H */
