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
  TUTTI_FLOAT64,
  /* OCP 8-bit floats: E4M3 (no infinities, max 448, NaN = S.1111.111) and E5M2 (IEEE-like,
   * max 57344). They combine in float32 and round to nearest even; E4M3 saturates to +-448
   * on overflow, E5M2 overflows to infinity as IEEE does. */
  TUTTI_FLOAT8_E4M3,
  TUTTI_FLOAT8_E5M2,
  /* 16-bit integers, appended so the values above keep their numbers. Integer rules apply
   * (wrapping SUM/PROD, truncating AVG, the bitwise ops). */
  TUTTI_INT16,
  TUTTI_UINT16
} tutti_dtype_t;

/* AVG: floats divide the sum by nranks; integers divide the sum by nranks, truncating toward
 * zero, where the sum is SUM's, computed in the element type and wrapping (two's complement)
 * like SUM: an int8 AVG of 100 on 2 ranks is (200 wrapped to -56) / 2 = -28. Use a wider
 * dtype when the sum may not fit.
 * FLOAT16/BFLOAT16/FLOAT8 combine two values at a time in float32 and round to nearest even
 * after each combination: a reduction over n ranks rounds n - 1 times (it is not the float32
 * sum rounded once), in an order the algorithm chooses (the same on every rank). With
 * TUTTI_DETERMINISTIC=1 the result is bit for bit the rank-order fold
 * r = x0, r = round(r op x1), r = round(r op x2), ... for any algorithm. BAND, BOR, BXOR
 * are bitwise and apply to integer dtypes only (TUTTI_ERR_INVALID_ARGUMENT for floats).
 * Values from tutti_op_create_premul_sum() are also tutti_op_t. */
typedef enum {
  TUTTI_SUM,
  TUTTI_PROD,
  TUTTI_MIN,
  TUTTI_MAX,
  TUTTI_AVG,
  TUTTI_BAND,
  TUTTI_BOR,
  TUTTI_BXOR,
  TUTTI_NUM_OPS /* not an operation: the first value of user-created operations */
} tutti_op_t;

/* A non-blocking operation in flight; see tutti_wait(). */
typedef struct tutti_request *tutti_request_t;

/* tutti_comm_split: the color that puts a rank in no new communicator (it gets NULL). */
#define TUTTI_SPLIT_NOCOLOR (-1)

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

/* Creates the nranks communicators of one job whose ranks are threads of this process
 * (ncclCommInitAll's shape): comms[r] is rank r. No rendezvous and no sockets: messages go
 * through in-process queues, so it suits tests of code written against tutti and runs of
 * many ranks on one machine. Each communicator is then used from its own thread, as if each
 * were a process; every collective, point-to-point call and algorithm works as over shm.
 * Settings come from the environment as for tutti_comm_init_rank (TUTTI_TRANSPORT does not
 * apply; TUTTI_SHM_QUEUE_SIZE bounds each queue). Each communicator must be destroyed. */
TUTTI_API tutti_result_t tutti_comm_init_threads(tutti_comm_t *comms, int nranks);

/* Allocates bytes (rounded up to whole pages) of registered memory, like ncclMemAlloc: a
 * shared region every local rank of comm can map. Collectives on comm whose buffers lie in
 * such memory have their peers read (and write) those buffers in place, with no copy into a
 * queue or landing buffer, when the single-copy algorithm runs (ranks of one host, see
 * docs/operations.md); any other collective treats the memory as ordinary. Ranks may
 * register some buffers and not others, in any mix: each peer is read in place or through
 * process_vm_readv. The region has no name (nothing is left in /dev/shm after a crash) and is
 * freed by tutti_mem_free or with the communicator. Use on this communicator only; on
 * another it is ordinary memory. Errors: TUTTI_ERR_INVALID_ARGUMENT (NULL comm or ptr,
 * bytes 0), TUTTI_ERR_SYSTEM (out of memory); neither fails the communicator. */
TUTTI_API tutti_result_t tutti_mem_alloc(tutti_comm_t comm, size_t bytes, void **ptr);

/* Frees memory from tutti_mem_alloc on the same communicator (NULL: nothing to do). Not
 * during a collective that uses it. A pointer that tutti_mem_alloc did not return fails
 * with TUTTI_ERR_INVALID_ARGUMENT and changes nothing. */
TUTTI_API tutti_result_t tutti_mem_free(tutti_comm_t comm, void *ptr);

/* Frees the communicator. Never blocks on peers. */
TUTTI_API tutti_result_t tutti_comm_destroy(tutti_comm_t comm);

/* Makes every pending and future operation on comm fail with TUTTI_ERR_ABORTED, and tells the
 * peers. Safe to call from another thread while a collective is running. */
TUTTI_API tutti_result_t tutti_comm_abort(tutti_comm_t comm);

TUTTI_API tutti_result_t tutti_comm_rank(tutti_comm_t comm, int *rank);
TUTTI_API tutti_result_t tutti_comm_size(tutti_comm_t comm, int *size);

/* A static string naming the result code. */
TUTTI_API const char *tutti_result_string(tutti_result_t result);

/* The first failure this communicator met, as a sentence ("tutti_allreduce (rank 2 of 4): peer
 * rank 1 (pid 812 on host a) closed the connection"), or "" if none. A failure is any error
 * but TUTTI_ERR_INVALID_ARGUMENT (and refusals that leave comm usable, such as
 * tutti_comm_set_timeout's INVALID_USAGE): its sentence stays first for comm's life, and a
 * later error is appended after it ("; later: ..."), replacing the previous such note. Before
 * any failure it is the latest argument error's sentence. Valid until the next call on comm. */
TUTTI_API const char *tutti_comm_last_error(tutti_comm_t comm);

/* Why this thread's latest failed tutti_comm_init_rank / tutti_comm_init_env failed, as a
 * sentence (there is no communicator to ask), or "" if none has failed. Per thread; valid
 * until that thread's next init call fails. */
TUTTI_API const char *tutti_last_init_error(void);

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

/* ---- Variable-count collectives -------------------------------------------------------- */
/* Counts and displacements are in elements, arrays of nranks entries; any count may be 0.
 * These are different calls from the equal-count forms: fragments may differ in length and
 * land where displs says, not at rank * count. */

/* Rank i's sendcount elements (sendcount must equal recvcounts[i] on every rank) land at
 * recvbuf + displs[i] on every rank. In place when sendbuf == recvbuf + displs[rank]. */
TUTTI_API tutti_result_t tutti_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                          const size_t *recvcounts, const size_t *displs,
                                          tutti_dtype_t dtype, tutti_comm_t comm);

/* sendbuf holds sum(recvcounts) elements, segment i starting at recvcounts[0] + ... +
 * recvcounts[i-1]; rank i receives in recvbuf the reduction of every rank's segment i. In
 * place when recvbuf == sendbuf + that offset for this rank. */
TUTTI_API tutti_result_t tutti_reduce_scatterv(const void *sendbuf, void *recvbuf,
                                               const size_t *recvcounts, tutti_dtype_t dtype,
                                               tutti_op_t op, tutti_comm_t comm);

/* Rank i's sendcount elements (== recvcounts[i] at the root) land at recvbuf + displs[i] on
 * the root only; recvcounts, displs and recvbuf are read only at the root. The blocks must
 * not overlap (TUTTI_ERR_INVALID_ARGUMENT), here and in tutti_allgatherv. */
TUTTI_API tutti_result_t tutti_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                       const size_t *recvcounts, const size_t *displs,
                                       tutti_dtype_t dtype, int root, tutti_comm_t comm);

/* The root's sendcounts[i] elements at sendbuf + displs[i] go to rank i's recvbuf
 * (recvcount == sendcounts[i]); sendbuf, sendcounts and displs are read only at the root. */
TUTTI_API tutti_result_t tutti_scatterv(const void *sendbuf, const size_t *sendcounts,
                                        const size_t *displs, void *recvbuf, size_t recvcount,
                                        tutti_dtype_t dtype, int root, tutti_comm_t comm);

/* sendcounts[j] elements at sendbuf + sdispls[j] go to rank j, landing there at recvbuf +
 * rdispls[i] (i = this rank), with recvcounts[i] on j equal to sendcounts[j] here. Send and
 * receive buffers must not overlap, nor may two receive blocks (TUTTI_ERR_INVALID_ARGUMENT:
 * the result would depend on arrival order); send blocks may. No in-place form. */
TUTTI_API tutti_result_t tutti_alltoallv(const void *sendbuf, const size_t *sendcounts,
                                         const size_t *sdispls, void *recvbuf,
                                         const size_t *recvcounts, const size_t *rdispls,
                                         tutti_dtype_t dtype, tutti_comm_t comm);

/* ---- Equal-count forms ----------------------------------------------------------------- */

/* count elements per peer: block j of sendbuf goes to rank j, block i of recvbuf comes from
 * rank i (blocks of count elements). No in-place form: sendbuf and recvbuf must not overlap
 * (sendbuf == recvbuf is TUTTI_ERR_INVALID_ARGUMENT); copy the input aside first. */
TUTTI_API tutti_result_t tutti_alltoall(const void *sendbuf, void *recvbuf, size_t count,
                                        tutti_dtype_t dtype, tutti_comm_t comm);
/* The root's recvbuf receives nranks * count elements, rank i's at i * count. */
TUTTI_API tutti_result_t tutti_gather(const void *sendbuf, void *recvbuf, size_t count,
                                      tutti_dtype_t dtype, int root, tutti_comm_t comm);
/* Block i of the root's sendbuf (count elements) goes to rank i's recvbuf. */
TUTTI_API tutti_result_t tutti_scatter(const void *sendbuf, void *recvbuf, size_t count,
                                       tutti_dtype_t dtype, int root, tutti_comm_t comm);

/* ---- Point-to-point -------------------------------------------------------------------- */
/* Matched in order per (sender, receiver) pair; count and dtype must agree on both sides. */
TUTTI_API tutti_result_t tutti_send(const void *buf, size_t count, tutti_dtype_t dtype, int peer,
                                    tutti_comm_t comm);
TUTTI_API tutti_result_t tutti_recv(void *buf, size_t count, tutti_dtype_t dtype, int peer,
                                    tutti_comm_t comm);

/* Tagged point-to-point (MPI_Send / MPI_Recv). A message carries a tag >= 0 (the untagged
 * calls above send and receive tag 0). A receive takes the first message, in the order that
 * source sent them, whose source and tag it names; TUTTI_ANY_SOURCE and TUTTI_ANY_TAG match
 * any. A message that arrives before a receive matches it is kept in memory (sends do not wait
 * for the matching receive to be posted), so tag 3 can be received before an earlier tag 7.
 * One exception, as MPI_Send may wait: TCP connections are made on first use, so the first
 * message to a peer reached over TCP waits until that peer is inside any tutti call that waits
 * on TCP (to accept the connection); later messages to it do not wait.
 * Count and dtype must agree between a send and the receive that matches it (else
 * TUTTI_ERR_INVALID_USAGE on both). Point-to-point and collective messages between two ranks
 * share one ordered stream: a receive cannot skip over a collective's message. */
#define TUTTI_ANY_SOURCE (-1)
#define TUTTI_ANY_TAG (-1)
/* Who sent the message a receive matched, and its tag (MPI_Status). */
typedef struct {
  int source;
  int tag;
} tutti_status_t;

TUTTI_API tutti_result_t tutti_send_tag(const void *buf, size_t count, tutti_dtype_t dtype,
                                        int peer, int tag, tutti_comm_t comm);
/* peer may be TUTTI_ANY_SOURCE, tag TUTTI_ANY_TAG; status (may be NULL) gets the match. */
TUTTI_API tutti_result_t tutti_recv_tag(void *buf, size_t count, tutti_dtype_t dtype, int peer,
                                        int tag, tutti_comm_t comm, tutti_status_t *status);

/* ---- Non-blocking forms ---------------------------------------------------------------- */
/* Each starts the operation and returns at once with *req; buffers may not be touched until
 * tutti_wait(req) (or tutti_test reporting done). Operations on one communicator complete in
 * the order they were issued; a progress thread of the communicator drives them, so the
 * caller need not call tutti_test to make progress. Arguments are checked before return:
 * an invalid one gives TUTTI_ERR_INVALID_ARGUMENT and no request. */
TUTTI_API tutti_result_t tutti_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                          tutti_dtype_t dtype, tutti_comm_t comm,
                                          tutti_request_t *req);
TUTTI_API tutti_result_t tutti_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                                          tutti_dtype_t dtype, tutti_op_t op, tutti_comm_t comm,
                                          tutti_request_t *req);
TUTTI_API tutti_result_t tutti_ireduce_scatter(const void *sendbuf, void *recvbuf,
                                               size_t recvcount, tutti_dtype_t dtype,
                                               tutti_op_t op, tutti_comm_t comm,
                                               tutti_request_t *req);
TUTTI_API tutti_result_t tutti_ibroadcast(const void *sendbuf, void *recvbuf, size_t count,
                                          tutti_dtype_t dtype, int root, tutti_comm_t comm,
                                          tutti_request_t *req);
TUTTI_API tutti_result_t tutti_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                                       tutti_dtype_t dtype, tutti_op_t op, int root,
                                       tutti_comm_t comm, tutti_request_t *req);
TUTTI_API tutti_result_t tutti_ibarrier(tutti_comm_t comm, tutti_request_t *req);
TUTTI_API tutti_result_t tutti_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                           const size_t *recvcounts, const size_t *displs,
                                           tutti_dtype_t dtype, tutti_comm_t comm,
                                           tutti_request_t *req);
TUTTI_API tutti_result_t tutti_ireduce_scatterv(const void *sendbuf, void *recvbuf,
                                                const size_t *recvcounts, tutti_dtype_t dtype,
                                                tutti_op_t op, tutti_comm_t comm,
                                                tutti_request_t *req);
TUTTI_API tutti_result_t tutti_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                        const size_t *recvcounts, const size_t *displs,
                                        tutti_dtype_t dtype, int root, tutti_comm_t comm,
                                        tutti_request_t *req);
TUTTI_API tutti_result_t tutti_iscatterv(const void *sendbuf, const size_t *sendcounts,
                                         const size_t *displs, void *recvbuf, size_t recvcount,
                                         tutti_dtype_t dtype, int root, tutti_comm_t comm,
                                         tutti_request_t *req);
TUTTI_API tutti_result_t tutti_ialltoallv(const void *sendbuf, const size_t *sendcounts,
                                          const size_t *sdispls, void *recvbuf,
                                          const size_t *recvcounts, const size_t *rdispls,
                                          tutti_dtype_t dtype, tutti_comm_t comm,
                                          tutti_request_t *req);
TUTTI_API tutti_result_t tutti_ialltoall(const void *sendbuf, void *recvbuf, size_t count,
                                         tutti_dtype_t dtype, tutti_comm_t comm,
                                         tutti_request_t *req);
TUTTI_API tutti_result_t tutti_igather(const void *sendbuf, void *recvbuf, size_t count,
                                       tutti_dtype_t dtype, int root, tutti_comm_t comm,
                                       tutti_request_t *req);
TUTTI_API tutti_result_t tutti_iscatter(const void *sendbuf, void *recvbuf, size_t count,
                                        tutti_dtype_t dtype, int root, tutti_comm_t comm,
                                        tutti_request_t *req);
TUTTI_API tutti_result_t tutti_isend(const void *buf, size_t count, tutti_dtype_t dtype,
                                     int peer, tutti_comm_t comm, tutti_request_t *req);
TUTTI_API tutti_result_t tutti_irecv(void *buf, size_t count, tutti_dtype_t dtype, int peer,
                                     tutti_comm_t comm, tutti_request_t *req);
TUTTI_API tutti_result_t tutti_isend_tag(const void *buf, size_t count, tutti_dtype_t dtype,
                                         int peer, int tag, tutti_comm_t comm,
                                         tutti_request_t *req);
TUTTI_API tutti_result_t tutti_irecv_tag(void *buf, size_t count, tutti_dtype_t dtype, int peer,
                                         int tag, tutti_comm_t comm, tutti_request_t *req);

/* Blocks (without burning a core) until req is complete and returns its result. The request
 * stays valid, and keeps its result, until tutti_request_free. */
TUTTI_API tutti_result_t tutti_wait(tutti_request_t req);
/* Sets *done to 1 if req is complete (and returns its result), else to 0 (TUTTI_SUCCESS). */
TUTTI_API tutti_result_t tutti_test(tutti_request_t req, int *done);
/* Releases req; if it is still running, it completes in the background first. */
TUTTI_API tutti_result_t tutti_request_free(tutti_request_t req);
/* For a completed receive request: the source and tag of the message it matched. For any
 * other complete request, source and tag are -1. TUTTI_IN_PROGRESS if req is not done. */
TUTTI_API tutti_result_t tutti_request_status(tutti_request_t req, tutti_status_t *status);

/* ---- Groups ---------------------------------------------------------------------------- */
/* Calls made by this thread between tutti_group_start() and tutti_group_end() are collected
 * and run together at tutti_group_end() (like ncclGroupStart/End); groups nest. Blocking
 * calls inside a group only check their arguments and return; their buffers are complete
 * when tutti_group_end() returns, which returns the first failure among them. All sends and
 * receives of a group are posted at once, so any order of them cannot deadlock; consecutive
 * all-reduces with the same dtype and op travel as one message unless one reads or writes
 * what an earlier one writes (the ranks agree on that with one small all-reduce first), so
 * results are those of issue order. A call that fails its checks inside a group returns its
 * error (sentence in its communicator's tutti_comm_last_error) and does not run; the group's
 * other calls still run, and tutti_group_end() returns that error too. A group may span any
 * number of communicators. */
TUTTI_API tutti_result_t tutti_group_start(void);
TUTTI_API tutti_result_t tutti_group_end(void);

/* ---- Communicator construction --------------------------------------------------------- */
/* Collective over comm (MPI_Comm_split): ranks with the same color form a new communicator,
 * ordered by key, then by rank in comm. color TUTTI_SPLIT_NOCOLOR gives *newcomm = NULL. The
 * new communicators are independent of comm and may run at the same time. */
TUTTI_API tutti_result_t tutti_comm_split(tutti_comm_t comm, int color, int key,
                                          tutti_comm_t *newcomm);
/* Collective over comm: a new communicator with the same ranks. */
TUTTI_API tutti_result_t tutti_comm_dup(tutti_comm_t comm, tutti_comm_t *newcomm);

/* Called by every surviving rank after a failure (ncclCommShrink, MPIX_Comm_shrink): the ranks
 * that are alive and call it agree on who they are and get a new communicator of just them,
 * ordered by their rank in comm. Works on a failed communicator (that is its purpose) and on
 * a healthy one. A rank that died, or that does not call it within half of comm's timeout, is
 * left out. comm stays as it was (failed or not) and must still be destroyed (after a
 * successful shrink its listener moves to *newcomm, so a second shrink of comm is
 * TUTTI_ERR_INVALID_USAGE). A rank that cannot join, or cannot be sure it is in the group the
 * others formed (e.g. it was left out, or called it too late), gets TUTTI_ERR_TIMEOUT or
 * TUTTI_ERR_REMOTE: the survivors never end in two communicators. */
TUTTI_API tutti_result_t tutti_comm_shrink(tutti_comm_t comm, tutti_comm_t *newcomm);

/* The deadline, in seconds, of every wait of comm's calls started after this one (and of
 * tutti_comm_shrink); TUTTI_TIMEOUT sets the initial value. TUTTI_ERR_INVALID_ARGUMENT unless
 * seconds > 0; TUTTI_ERR_INVALID_USAGE (timeout unchanged, comm still usable) while a request
 * of comm is queued or running: wait for it first. */
TUTTI_API tutti_result_t tutti_comm_set_timeout(tutti_comm_t comm, double seconds);

/* ---- User operations ------------------------------------------------------------------- */
/* ncclRedOpCreatePreMulSum: an operation that multiplies every input element by *scalar (of
 * type dtype) and sums. It is valid on comm only, with that dtype (floats, or integers with
 * wrapping arithmetic), until tutti_op_destroy. */
TUTTI_API tutti_result_t tutti_op_create_premul_sum(tutti_op_t *op, const void *scalar,
                                                    tutti_dtype_t dtype, tutti_comm_t comm);
TUTTI_API tutti_result_t tutti_op_destroy(tutti_op_t op, tutti_comm_t comm);

#ifdef __cplusplus
}
#endif
#endif /* TUTTI_H */
