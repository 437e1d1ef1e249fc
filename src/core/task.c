/*
 * Running a task (a checked call, from coll.c or coll_v.c through the engine): fix the call's
 * fingerprint, pick the algorithm, run it, and turn a failure into a failed communicator.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "algo/cma.h"
#include "core/engine.h"
#include "core/userop.h"
#include "kernels/kernels.h"

static tutti_result_t usable(struct tutti_comm *comm) {
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
  return TUTTI_SUCCESS;
}

static uint32_t p2p_tag(uint32_t n) { return 0x80000000u | (n & 0x7fffffffu); }

tutti_result_t tutti__p2p_post(struct tutti_comm *comm, const tutti_task_t *t, tutti_xfer_t *x,
                               int64_t *deadline) {
  const tutti_coll_args_t *a = &t->a;
  TUTTI_SET_OP(comm, t->api);
  TRY(usable(comm));
  tutti_peer_t *p = &comm->peers[a->coll == TUTTI_COLL_SEND ? a->peer : comm->rank];
  size_t bytes = a->count * tutti__dtype_size(a->dtype);
  /* Both ends describe the pair the same way, so a size or dtype mismatch is caught; the
   * user's tag travels in the root field (transport.h, matched receives). */
  tutti__fp_store(&comm->fp, (tutti_fingerprint_t){TUTTI_COLL_SEND, (uint8_t)a->dtype, 0, 0,
                                                   a->tag, a->count});
  *deadline = tutti__deadline_after(comm->cfg.timeout_s);
  /* Point-to-point messages count per ordered pair and carry the point-to-point bit, so they
   * can never be taken for a collective's message (whose tag is the collective sequence
   * number). Receives match by source and tag (p2p_match.c). */
  if (a->coll == TUTTI_COLL_SEND)
    return tutti__isend_tag(comm, x, a->peer, a->sendbuf, bytes, p2p_tag(p->p2p_sent++));
  return tutti__p2p_irecv(comm, x, a->peer, a->recvbuf, bytes, a->tag, a->status);
}

/* Elements of sendbuf a reducing collective reads: what a premul-sum must scale. */
static size_t send_elems(const struct tutti_comm *comm, const tutti_coll_args_t *a) {
  switch (a->coll) {
  case TUTTI_COLL_REDUCE_SCATTER: return a->count * (size_t)comm->nranks;
  case TUTTI_COLL_REDUCE_SCATTERV: {
    size_t s = 0;
    for (int i = 0; i < comm->nranks; i++) s += a->counts[i];
    return s;
  }
  default: return a->count;
  }
}

/* Whether a copy-only call writes its output with streaming stores (cma.h): when what the
 * local ranks' calls touch together, their outputs and inputs, overflows the last-level cache
 * they share, so that the output lines would be read from memory only to be overwritten. The
 * output alone undercounts: an n = 2 all-gather of 16 MiB writes 32 MiB and reads 16 MiB on
 * a host with 32 MiB of L3 (docs/operations.md has the figures). A broadcast keeps the rule
 * of its own output against the cache: counting the host's outputs there measured neither
 * faster nor slower in the noise of a shared machine. */
static int stream_outputs(const struct tutti_comm *comm, const tutti_coll_args_t *a) {
  size_t bytes = a->count * a->esize, nlocal = comm->nlocal > 0 ? (size_t)comm->nlocal : 1;
  if (a->coll == TUTTI_COLL_ALLGATHER) {
    size_t out = bytes * (size_t)comm->nranks;
    int apart = a->sendbuf != (const char *)a->recvbuf + (size_t)comm->rank * bytes;
    return tutti__cma_nt(comm, (out + (apart ? bytes : 0)) * nlocal);
  }
  if (a->coll == TUTTI_COLL_BROADCAST) return tutti__cma_nt(comm, bytes);
  return 0;
}

static tutti_result_t run_algorithm(struct tutti_comm *comm, tutti_coll_args_t *a) {
  a->esize = tutti__dtype_size(a->dtype);
  /* One clock read per call: the deadline counts from the call's start. */
  a->deadline = comm->call_start_ns + (int64_t)(comm->cfg.timeout_s * 1e9);
  comm->online.running = NULL;
  const tutti_algo_t *algo = tutti__algo_select(comm, a);
  comm->recv_nt = stream_outputs(comm, a);
  if (!algo)
    return tutti__error(comm, TUTTI_ERR_INTERNAL, "no algorithm implements %s",
                        tutti__coll_name(a->coll));
  TRACE("coll", comm->rank, "%s #%u: %zu x %s, algorithm %s", tutti__coll_name(a->coll),
        comm->seq, a->count, tutti__dtype_name((int)a->dtype), algo->name);
  int64_t t0 = comm->online.running ? tutti__now_ns() : 0;
  comm->first_use_ns = 0;
  tutti_result_t res = algo->fn[a->coll](comm, a);
  if (comm->online.running && res == TUTTI_SUCCESS)
    tutti__online_timed(comm, tutti__now_ns() - t0, comm->first_use_ns);
  /* Every receive of the call has landed: point-to-point calls after it copy as usual. */
  comm->recv_nt = 0;
  return res;
}

tutti_result_t tutti__task_run(struct tutti_comm *comm, tutti_task_t *t) {
  TUTTI_SET_OP(comm, t->api);
  TRY(usable(comm));
  /* The task is this run's own (the caller's or its request's), so the call fills in its
   * element size and deadline there, not in a copy (copying it costs more than a copy of
   * 160 bytes: the loads wait for the stores that just wrote it). A premul-sum runs on a
   * copy: userop.c points its input at a scaled buffer freed below and makes its op SUM. */
  tutti_coll_args_t copy, *a = &t->a;
  if ((int)a->op >= TUTTI_NUM_OPS) {
    copy = t->a;
    a = &copy;
  }
  tutti_result_t res;
  if (a->coll == TUTTI_COLL_SEND || a->coll == TUTTI_COLL_RECV) {
    tutti_xfer_t x;
    int64_t deadline;
    res = tutti__p2p_post(comm, t, &x, &deadline);
    if (res == TUTTI_SUCCESS) res = tutti__wait(comm, &x, deadline);
  } else {
    comm->seq++;
    const tutti_coll_info_t *info = &tutti__colls[a->coll];
    int v = info->variable, rooted = info->rooted, reduces = info->reduces;
    tutti__fp_store(&comm->fp, (tutti_fingerprint_t){(uint8_t)a->coll, (uint8_t)a->dtype,
                                                     (uint8_t)(reduces ? a->op : 0), 0,
                                                     rooted ? a->root : 0, v ? 0 : a->count});
    if (!v && a->count == 0 && a->coll != TUTTI_COLL_BARRIER) return TUTTI_SUCCESS;
    void *scaled = NULL;
    res = TUTTI_SUCCESS;
    if ((int)a->op >= TUTTI_NUM_OPS)
      res = tutti__userop_prepare(comm, a, send_elems(comm, a), &scaled);
    comm->call_seq = comm->seq;
    comm->call_start_ns = tutti__coarse_ns();
    if (res == TUTTI_SUCCESS) res = tutti__call_publish(comm);
    if (res == TUTTI_SUCCESS) res = run_algorithm(comm, a);
    /* In a rooted call a rank may hear from no rank that names another root (receivers read
     * the root only, roots only send or only receive): compare the published calls of this
     * host before reporting success (or, for a call run one-shot, leave it to the mailboxes:
     * mbox.c's call_conflict). */
    if (res == TUTTI_SUCCESS && (rooted || comm->verify_seq))
      res = tutti__call_conflict(comm, rooted);
    if (res == TUTTI_SUCCESS && comm->online.due) res = tutti__online_agree(comm);
    free(scaled);
  }
  if (res != TUTTI_SUCCESS) {
    tutti__comm_fail(comm, res);
    tutti__drop_ops(comm);
  }
  comm->call_seq = 0;
  return res;
}

