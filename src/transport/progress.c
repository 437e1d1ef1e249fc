/*
 * Posted operations over any transport: per-peer FIFO queues, message headers, and the one
 * wait loop (spin briefly, then sleep in the transport) with a deadline. Written once for
 * every transport and every algorithm.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "core/colls.h"
#include "core/forensics.h"
#include "kernels/kernels.h"
#include "transport/header_check.h"
#include "transport/transport.h"

#define HDR_BYTES sizeof(tutti_msg_hdr_t)

static void enqueue(tutti_xfer_t **head, tutti_xfer_t **tail, tutti_xfer_t *op) {
  op->next = NULL;
  if (*tail)
    (*tail)->next = op;
  else
    *head = op;
  *tail = op;
}

static void dequeue(tutti_xfer_t **head, tutti_xfer_t **tail) {
  *head = (*head)->next;
  if (!*head) *tail = NULL;
}

void tutti__xfer_init(struct tutti_comm *comm, tutti_xfer_t *op, int kind, int peer, void *buf,
                      size_t len, uint32_t tag) {
  op->kind = kind;
  op->peer = peer;
  op->buf = buf;
  op->len = len;
  op->done = 0;
  op->complete = 0;
  op->hdr.magic = TUTTI_MSG_MAGIC;
  op->hdr.seq = tag;
  op->hdr.len = len;
  op->hdr.fp = comm->fp;
  op->own = NULL;
  op->pending = 0;
}

/* Pushes the send queue of peer as far as the transport allows. */
static tutti_result_t progress_sends(struct tutti_comm *comm, int peer, int *moved_any) {
  tutti_peer_t *p = &comm->peers[peer];
  while (p->sendq_head) {
    tutti_xfer_t *op = p->sendq_head;
    struct iovec iov[2];
    int cnt = 0;
    if (op->done < HDR_BYTES) {
      iov[cnt].iov_base = (char *)&op->hdr + op->done;
      iov[cnt++].iov_len = HDR_BYTES - op->done;
    }
    size_t sent = op->done > HDR_BYTES ? op->done - HDR_BYTES : 0;
    if (op->len > sent) {
      iov[cnt].iov_base = op->buf + sent;
      iov[cnt++].iov_len = op->len - sent;
    }
    size_t moved = 0;
    TRY(p->tp->ops->send(p->tp, peer, iov, cnt, &moved));
    op->done += moved;
    if (moved) *moved_any = 1;
    if (op->done < HDR_BYTES + op->len) break;
    op->complete = 1;
    if (!(op->hdr.seq & 0x80000000u)) p->sent_seq = op->hdr.seq;
    dequeue(&p->sendq_head, &p->sendq_tail);
  }
  return TUTTI_SUCCESS;
}

static const char *coll_label(int coll) {
  return tutti__coll_info(coll)->label;
}

/* Compares what the peer says it is calling with what this rank calls, field by field, so the
 * message names the field and both values. */
static tutti_result_t check_fingerprint(const tutti_msg_hdr_t *want_hdr,
                                        const tutti_fingerprint_t *got, const char *who,
                                        char *msg, size_t msglen) {
  const tutti_fingerprint_t *want = &want_hdr->fp;
  const char *what = coll_label(want->coll);
  char field[160] = "";
  if (got->coll != want->coll)
    snprintf(field, sizeof field, "called %s where this rank called %s", coll_label(got->coll),
             what);
  else if (got->dtype != want->dtype)
    snprintf(field, sizeof field, "called %s with dtype %s where this rank used %s", what,
             tutti__dtype_name(got->dtype), tutti__dtype_name(want->dtype));
  else if (got->op != want->op)
    snprintf(field, sizeof field, "called %s with op %s where this rank used %s", what,
             got->op < TUTTI_NUM_OPS ? tutti__op_name(got->op) : "premul_sum",
             want->op < TUTTI_NUM_OPS ? tutti__op_name(want->op) : "premul_sum");
  else if (got->root != want->root)
    snprintf(field, sizeof field, "called %s with root %d where this rank used root %d", what,
             (int)got->root, (int)want->root);
  else if (got->count != want->count)
    snprintf(field, sizeof field, "called %s with count %llu where this rank used count %llu",
             what, (unsigned long long)got->count, (unsigned long long)want->count);
  if (!field[0]) return TUTTI_SUCCESS;
  snprintf(msg, msglen, "the ranks disagree on call #%u: %s %s", want_hdr->seq, who, field);
  return TUTTI_ERR_INVALID_USAGE;
}

/* A header that does not match what this rank posted means the ranks disagree on the call
 * sequence or the sizes; reading on would misinterpret bytes, so fail loudly instead. */
tutti_result_t tutti__hdr_check(const tutti_msg_hdr_t *want, const void *got_bytes,
                                size_t got_len, const char *who, char *msg, size_t msglen) {
  tutti_msg_hdr_t got;
  if (got_len < sizeof got) {
    snprintf(msg, msglen, "received a truncated message header (%zu bytes) from %s", got_len,
             who);
    return TUTTI_ERR_REMOTE;
  }
  memcpy(&got, got_bytes, sizeof got);
  if (got.magic == TUTTI_MSG_MAGIC && got.seq == want->seq && got.len == want->len &&
      memcmp(&got.fp, &want->fp, sizeof got.fp) == 0)
    return TUTTI_SUCCESS;
  if (got.magic == TUTTI_ABORT_MAGIC) {
    tutti_result_t code = got.seq == TUTTI_ERR_INVALID_USAGE ? TUTTI_ERR_INVALID_USAGE
                                                              : TUTTI_ERR_REMOTE;
    snprintf(msg, msglen, "%s gave up on call #%u: %s", who, want->seq,
             code == TUTTI_ERR_INVALID_USAGE
                 ? "the ranks disagree on the call (see that rank's error)"
                 : "it failed");
    return code;
  }
  if (got.magic != TUTTI_MSG_MAGIC) {
    snprintf(msg, msglen, "received a corrupt message header from %s", who);
    return TUTTI_ERR_REMOTE;
  }
  tutti_result_t res = check_fingerprint(want, &got.fp, who, msg, msglen);
  if (res != TUTTI_SUCCESS) return res;
  if (got.seq != want->seq || got.len != want->len) {
    snprintf(msg, msglen,
             "%s sent %llu bytes for its call #%u while this rank expected %llu bytes for call "
             "#%u: the ranks called different collectives, counts or dtypes",
             who, (unsigned long long)got.len, got.seq, (unsigned long long)want->len,
             want->seq);
    return TUTTI_ERR_INVALID_USAGE;
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__check_header(struct tutti_comm *comm, const tutti_xfer_t *op,
                                   const tutti_msg_hdr_t *got) {
  /* The common case costs three compares; sentences are built only for a mismatch. */
  if (got->magic == TUTTI_MSG_MAGIC && got->seq == op->hdr.seq && got->len == op->len &&
      memcmp(&got->fp, &op->hdr.fp, sizeof got->fp) == 0)
    return TUTTI_SUCCESS;
  char who[128], msg[512];
  tutti__peer_desc(comm, op->peer, who, sizeof who);
  /* An abort frame names the rank whose failure the sender's follows from: only this side
   * can describe that rank, so it is read here; everything else is the pure check's. */
  if (got->magic == TUTTI_ABORT_MAGIC) {
    /* A disagreement is every rank's error, and so is a timeout (someone stopped answering);
     * anything else is a remote failure. */
    tutti_result_t code = got->seq == TUTTI_ERR_INVALID_USAGE ? TUTTI_ERR_INVALID_USAGE
                          : got->seq == TUTTI_ERR_TIMEOUT     ? TUTTI_ERR_TIMEOUT
                                                              : TUTTI_ERR_REMOTE;
    if (code == TUTTI_ERR_INVALID_USAGE)
      return tutti__error(comm, code, "%s gave up on call #%u: the ranks disagree on the call "
                          "(see that rank's error)", who, op->hdr.seq);
    /* The frame names the rank whose failure the sender's follows from (bounds-checked: it
     * comes off the wire); that is the one the user needs, not the messenger. */
    uint64_t c = got->fp.count;
    char cause[192] = "it failed";
    if (c >= 1 && c <= (uint64_t)comm->nranks && (int)c - 1 != op->peer) {
      char culprit[128];
      if (!comm->culprit) comm->culprit = (int)c;
      tutti__peer_desc(comm, (int)c - 1, culprit, sizeof culprit);
      if (code == TUTTI_ERR_TIMEOUT)
        snprintf(cause, sizeof cause, "it timed out waiting for %s", culprit);
      else
        snprintf(cause, sizeof cause, "%s failed (died, disconnected or timed out)", culprit);
    } else if (!comm->culprit) {
      comm->culprit = op->peer + 1;
    }
    return tutti__error(comm, code, "%s gave up on call #%u because %s", who, op->hdr.seq,
                        cause);
  }
  tutti_result_t res = tutti__hdr_check(&op->hdr, got, sizeof *got, who, msg, sizeof msg);
  if (res == TUTTI_SUCCESS) return res;
  /* A message of another call while a rooted call is still to compare: most likely that call
   * had another root on the sender, which this rank returned from before the peer started it;
   * the published calls name the field where this header only shows the numbers apart. */
  if (comm->verify_seq && got->magic == TUTTI_MSG_MAGIC && got->seq != op->hdr.seq &&
      comm->calls && comm->calls->ops->check)
    TRY(comm->calls->ops->check(comm->calls));
  return tutti__error(comm, res, "%s", msg);
}

/* Combines count received elements at src into op->buf from byte offset at on. */
static void reduce_in(const tutti_xfer_t *op, size_t at, const void *src, size_t count) {
  const char *own = op->own + at;
  tutti__reduce(op->buf + at, op->own_first ? own : src, op->own_first ? src : own, count,
                (tutti_dtype_t)op->rdtype, (tutti_op_t)op->rop);
}

/* The payload of a reducing receive (tutti__irecv_reduce): as much of it as has arrived,
 * reduced into op->buf straight out of the transport's queue where the bytes there are whole
 * elements at their type's alignment. Others (an element split where the queue wraps or not
 * yet whole, a run an odd-length message before it left unaligned for the kernels) are
 * copied to op->tmp at their offset first and reduced from there once whole. */
static tutti_result_t recv_reducing(tutti_peer_t *p, int peer, tutti_xfer_t *op, int *moved_any) {
  tutti_transport_t *tp = p->tp;
  size_t es = tutti__dtype_size((tutti_dtype_t)op->rdtype);
  for (;;) {
    size_t rcvd = op->done - HDR_BYTES, left = op->len - rcvd, moved = 0;
    if (!left) return TUTTI_SUCCESS;
    if (!op->pending) {
      const void *src = NULL;
      size_t avail = 0;
      TRY(tp->ops->view(tp, peer, &src, &avail));
      if (!avail) return TUTTI_SUCCESS;
      size_t whole = (avail < left ? avail : left) / es * es;
      if (whole && (uintptr_t)src % es == 0) {
        *moved_any = 1;
        reduce_in(op, rcvd, src, whole / es);
        tp->ops->release(tp, peer, whole);
        op->done += whole;
        continue;
      }
    }
    TRY(tp->ops->recv(tp, peer, op->tmp + rcvd, left, &moved));
    if (!moved) return TUTTI_SUCCESS;
    *moved_any = 1;
    op->done += moved;
    op->pending += moved;
    size_t whole = op->pending / es * es, at = rcvd + moved - op->pending;
    if (whole) reduce_in(op, at, op->tmp + at, whole / es);
    op->pending -= whole;
  }
}

static tutti_result_t progress_recvs(struct tutti_comm *comm, int peer, int *moved_any) {
  tutti_peer_t *p = &comm->peers[peer];
  if (comm->p2p) {
    /* Point-to-point receives, and a collective's header they may have read first. */
    int handled;
    TRY(tutti__p2p_progress(comm, peer, moved_any, &handled));
    if (handled) return TUTTI_SUCCESS;
  }
  while (p->recvq_head && p->recvq_head->kind != TUTTI_OP_MATCH) {
    tutti_xfer_t *op = p->recvq_head;
    size_t moved = 0;
    if (op->done < HDR_BYTES) {
      TRY(p->tp->ops->recv(p->tp, peer, (char *)&op->got + op->done, HDR_BYTES - op->done,
                           &moved));
      op->done += moved;
      if (moved) *moved_any = 1;
      if (op->done < HDR_BYTES) break;
      if (tutti__p2p_is_p2p_header(&op->got)) {
        /* A tagged message sent ahead of the collective's data: it goes to the matching
         * layer (kept until received), and this receive reads the next header. */
        op->done = 0;
        TRY(tutti__p2p_divert(comm, peer, &op->got));
        *moved_any = 1;
        return TUTTI_SUCCESS;
      }
      TRY(tutti__check_header(comm, op, &op->got));
      if (!(op->hdr.seq & 0x80000000u)) p->seen_seq = op->hdr.seq;
      moved = 0;
    }
    if (op->own) {
      TRY(recv_reducing(p, peer, op, moved_any));
    } else {
      size_t rcvd = op->done - HDR_BYTES;
      TRY(p->tp->ops->recv(p->tp, peer, op->buf + rcvd, op->len - rcvd, &moved));
      op->done += moved;
      if (moved) *moved_any = 1;
    }
    if (op->done < HDR_BYTES + op->len) break;
    op->complete = 1;
    dequeue(&p->recvq_head, &p->recvq_tail);
  }
  return TUTTI_SUCCESS;
}

static tutti_result_t progress_peer(struct tutti_comm *comm, int peer, int *moved_any) {
  TRY(progress_sends(comm, peer, moved_any));
  return progress_recvs(comm, peer, moved_any);
}

/* Puts peer on the active list, where the wait loop looks for posted operations. */
static inline void activate(struct tutti_comm *comm, int peer) {
  tutti_peer_t *p = &comm->peers[peer];
  if (!p->active) {
    p->active = 1;
    comm->active[comm->nactive++] = peer;
  }
}

static tutti_result_t progress_all(struct tutti_comm *comm, int *moved_any) {
  if (comm->p2p) {
    /* Matched receives (any source among them) may want any peer: look at every one. */
    for (int i = 0; i < comm->nranks; i++) {
      tutti_peer_t *p = &comm->peers[i];
      if (p->sendq_head || p->recvq_head || tutti__p2p_wants(comm, i))
        TRY(progress_peer(comm, i, moved_any));
    }
    return TUTTI_SUCCESS;
  }
  for (int k = 0; k < comm->nactive;) {
    int i = comm->active[k];
    tutti_peer_t *p = &comm->peers[i];
    if (p->sendq_head || p->recvq_head) TRY(progress_peer(comm, i, moved_any));
    if (p->sendq_head || p->recvq_head) {
      k++;
      continue;
    }
    /* Nothing posted any more: off the list (the order of the list does not matter). */
    p->active = 0;
    comm->active[k] = comm->active[--comm->nactive];
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__isend_tag(struct tutti_comm *comm, tutti_xfer_t *op, int peer,
                                const void *buf, size_t len, uint32_t tag) {
  tutti_peer_t *p = &comm->peers[peer];
  tutti__xfer_init(comm, op, TUTTI_OP_SEND, peer, (void *)buf, len, tag);
  enqueue(&p->sendq_head, &p->sendq_tail, op);
  activate(comm, peer);
  /* Start moving at once: small messages usually finish here, without entering the wait. */
  int moved = 0;
  return progress_sends(comm, peer, &moved);
}

tutti_result_t tutti__irecv_tag(struct tutti_comm *comm, tutti_xfer_t *op, int peer, void *buf,
                                size_t len, uint32_t tag) {
  tutti_peer_t *p = &comm->peers[peer];
  tutti__xfer_init(comm, op, TUTTI_OP_RECV, peer, buf, len, tag);
  enqueue(&p->recvq_head, &p->recvq_tail, op);
  activate(comm, peer);
  return TUTTI_SUCCESS;
}

int tutti__can_recv_reduce(const struct tutti_comm *comm, int peer) {
  const tutti_transport_t *tp = comm->peers[peer].tp;
  return tp && tp->ops->view && tp->ops->release;
}

tutti_result_t tutti__irecv_reduce(struct tutti_comm *comm, tutti_xfer_t *op, int peer, void *buf,
                                   const void *own, size_t len, int dtype, int rop,
                                   int own_first, void *tmp) {
  TRY(tutti__irecv_tag(comm, op, peer, buf, len, comm->seq));
  op->own = own;
  op->tmp = tmp;
  op->own_first = own_first;
  op->rdtype = dtype;
  op->rop = rop;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__isend(struct tutti_comm *comm, tutti_xfer_t *op, int peer, const void *buf,
                            size_t len) {
  return tutti__isend_tag(comm, op, peer, buf, len, comm->seq);
}

tutti_result_t tutti__irecv(struct tutti_comm *comm, tutti_xfer_t *op, int peer, void *buf,
                            size_t len) {
  return tutti__irecv_tag(comm, op, peer, buf, len, comm->seq);
}

void tutti__drop_ops(struct tutti_comm *comm) {
  for (int i = 0; i < comm->nranks; i++) {
    tutti_peer_t *p = &comm->peers[i];
    p->sendq_head = p->sendq_tail = NULL;
    p->recvq_head = p->recvq_tail = NULL;
    p->active = 0;
  }
  comm->nactive = 0;
  tutti__p2p_drop(comm);
}

/* Names what this rank waits for, so that a timeout points at the culprit; the full report
 * goes to the log. A stopped rank of this host (SIGSTOP) is named first: in a ring the rank
 * waited for is usually a neighbour that waits on it too. */
static tutti_result_t timeout_error(struct tutti_comm *comm) {
  char what[400] = "no peer is pending", who[128];
  int waited = -1;
  /* A rank waiting on a condition (a one-shot mailbox) waits on that peer, queues or not. */
  if (comm->post_wait && tutti__forensics_peer(comm, comm->post_wait - 1, what, sizeof what))
    waited = comm->post_wait - 1;
  for (int i = 0; i < comm->nranks && waited < 0; i++)
    if (i != comm->rank && tutti__forensics_peer(comm, i, what, sizeof what)) waited = i;
  tutti__forensics_log(comm, "timeout", 0);
  int stopped = tutti__stopped_peer(comm);
  if (stopped >= 0) {
    if (!comm->culprit) comm->culprit = stopped + 1;
    return tutti__error(comm, TUTTI_ERR_TIMEOUT, "timed out after %.1f s: %s is stopped "
                        "(SIGSTOP); this rank waits for: %s", comm->cfg.timeout_s,
                        tutti__peer_desc(comm, stopped, who, sizeof who), what);
  }
  if (waited >= 0 && !comm->culprit) comm->culprit = waited + 1;
  return tutti__error(comm, TUTTI_ERR_TIMEOUT, "timed out after %.1f s: %s",
                      comm->cfg.timeout_s, what);
}

/* Collects, for one transport, which peers this rank waits on. */
static int collect_wants(struct tutti_comm *comm, tutti_transport_t *tp, tutti_want_t *wants) {
  int n = 0, all = comm->p2p != NULL, count = all ? comm->nranks : comm->nactive;
  for (int k = 0; k < count; k++) {
    int i = all ? k : comm->active[k];
    tutti_peer_t *p = &comm->peers[i];
    if (p->tp != tp) continue;
    int what = (p->sendq_head ? TUTTI_WANT_SEND : 0) |
               (p->recvq_head || tutti__p2p_wants(comm, i) ? TUTTI_WANT_RECV : 0);
    if (what) {
      wants[n].peer = i;
      wants[n++].what = what;
    }
  }
  return n;
}

static tutti_result_t block_once(struct tutti_comm *comm, int64_t deadline,
                                 tutti_want_t *wants) {
  int64_t left_ms = (deadline - tutti__now_ns()) / 1000000;
  /* Short slices bound how late an abort from another thread or a dead peer is noticed. */
  int slice = left_ms < 100 ? (int)(left_ms > 0 ? left_ms : 0) : 100;
  int nw[TUTTI_MAX_TRANSPORTS], busy = 0, at = 0;
  for (int t = 0; t < comm->ntps; t++) {
    nw[t] = collect_wants(comm, comm->tps[t], wants + at);
    at += nw[t];
    busy += nw[t] > 0;
  }
  /* No transport can sleep on another's events, so with two busy each sleeps 1 ms. */
  if (busy > 1) slice = slice < 1 ? slice : 1;
  at = 0;
  for (int t = 0; t < comm->ntps; t++) {
    if (nw[t]) TRY(comm->tps[t]->ops->block(comm->tps[t], wants + at, nw[t], slice));
    at += nw[t];
  }
  return TUTTI_SUCCESS;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* How long an idle wait must last, on average, before an oversubscribed rank stops yielding
 * and sleeps at once: four futex wake-ups as measured on this machine (tune/measure_sync.c),
 * or 100 us where that was not measured. Shorter waits are hand-offs a yield serves better;
 * measured at n = 4 and 8 on 2 cores, sleeping at once doubles the busbw at >= 1 MiB but
 * costs 40% at <= 64 KiB. */
static int64_t long_wait_ns(const struct tutti_comm *comm) {
  double wake = comm->cfg.model.wake_s;
  return wake > 0 ? (int64_t)(4e9 * wake) : 100000;
}

tutti_result_t tutti__wait(struct tutti_comm *comm, tutti_xfer_t *op, int64_t deadline) {
  return tutti__wait_slice(comm, op, deadline, INT64_MAX);
}

/* The index of the first complete op of ops[0..n), or -1. */
static int first_complete(tutti_xfer_t *const *ops, int n) {
  for (int i = 0; i < n; i++)
    if (ops[i]->complete) return i;
  return -1;
}

/* The one wait loop: until op completes (driving every queue) or, where cond is given, until
 * cond is met; spin, then sleep in the transport (or in cond's sleep) in short slices, with
 * one deadline, one abort check and one timeout report for both. */
static tutti_result_t wait_loop(struct tutti_comm *comm, tutti_xfer_t *const *ops, int nops,
                                int *which, const tutti_cond_t *cond, int64_t deadline,
                                int64_t return_at) {
  tutti_result_t res = TUTTI_SUCCESS;
  int64_t spin_until = 0, wait_start = 0;
  unsigned idle = 0;
  while (cond ? !cond->met(cond) : (*which = first_complete(ops, nops)) < 0) {
    if (atomic_load_explicit(&comm->aborted, memory_order_relaxed)) {
      res = tutti__error(comm, TUTTI_ERR_ABORTED, "the communicator was aborted");
      goto out;
    }
    if (!cond) {
      int moved = 0;
      TRY_GOTO(progress_all(comm, &moved), res, out);
      if ((*which = first_complete(ops, nops)) >= 0) break;
      if (moved) {
        idle = 0;
        continue;
      }
    }
    /* Spin about as long as a wake-up costs; with more ranks than cores, spinning steals the
     * core the peer needs, so yield a few times instead and then sleep. */
    if (idle++ == 0) spin_until = tutti__now_ns() + (int64_t)(comm->cfg.spin_us * 1000);
    if (cond) {
      /* A condition is one cache line to watch, which costs the peer nothing: spin on it
       * (four times as long where ranks outnumber cores, yielding on every turn, which
       * amortises the scheduler's round trips), checking for failures every 64 turns. Where
       * they do not, no yield (see below). */
      if (idle == 1 && comm->oversubscribed)
        spin_until += 3 * (int64_t)(comm->cfg.spin_us * 1000);
      if (comm->oversubscribed)
        sched_yield();
      else
        cpu_relax();
      if (idle & 63) continue;
      int spun = tutti__now_ns() >= spin_until;
      TRY_GOTO(cond->check(cond, spun), res, out);
      if (!spun) continue;
    } else if (comm->oversubscribed) {
      /* Thread ranks sleep at once: with hundreds of them a core, a yield only hands the
       * core to another waiter. Process ranks yield a few times while this communicator's
       * waits are short (a peer sharing the core answers within its turn); once they last
       * longer than a few futex wake-ups (peers busy with large copies), they sleep at once:
       * a yielding rank comes back every turn, switching the copying peer out and its cache
       * with it, and on a loaded machine a yield sends it behind every other process, where
       * a futex wake-up would let it preempt. */
      if (!wait_start) wait_start = tutti__now_ns();
      if (idle < 8 && !comm->thread_ranks && comm->idle_wait_ns < long_wait_ns(comm)) {
        sched_yield();
        continue;
      }
    } else if ((idle & 63) != 0 || tutti__now_ns() < spin_until) {
      /* No yield while spinning: beside another busy process on this CPU, the scheduler
       * takes a yield as leave to run that process for its whole slice. One process spinning
       * on CPU 1, 2 ranks bound one a CPU, 8-byte all-reduce: a yield every 64 turns made a
       * call 160-1342 us (3 runs), none 0.72-1.04 us (Open MPI 0.35-0.98). A peer the
       * scheduler put on this very CPU runs once this rank sleeps, after spin_us. */
      cpu_relax();
      continue;
    }
    int64_t now = tutti__now_ns();
    /* What a timeout or a report names: the peer cond waits on, else the queues' peers. */
    comm->post_wait = cond ? cond->peer + 1 : 0;
    if (now >= deadline) {
      res = timeout_error(comm);
      comm->post_wait = 0;
      goto out;
    }
    tutti__forensics_poll(comm);
    comm->post_wait = 0;
    if (cond) {
      int64_t left_ms = (deadline - now) / 1000000;
      cond->sleep(cond, left_ms < 100 ? (int)left_ms + 1 : 100);
      continue;
    }
    TRY_GOTO(tutti__transport_check(comm), res, out);
    /* New work for the progress thread ends a slice early, so it can post it. */
    if (now >= return_at || atomic_load_explicit(&comm->work_pending, memory_order_relaxed))
      if (return_at != INT64_MAX) return TUTTI_IN_PROGRESS;
    TRY_GOTO(block_once(comm, deadline < return_at ? deadline : return_at, comm->wants), res,
             out);
  }
  if (wait_start) {
    /* A mean over the last few waits: one slow wait (a preempted peer) does not flip it. */
    int64_t took = tutti__now_ns() - wait_start;
    comm->idle_wait_ns += (took - comm->idle_wait_ns) / 4;
  }
out:
  if (res != TUTTI_SUCCESS) {
    tutti__comm_fail(comm, res);
    tutti__drop_ops(comm);
  }
  return res;
}

tutti_result_t tutti__wait_slice(struct tutti_comm *comm, tutti_xfer_t *op, int64_t deadline,
                                 int64_t return_at) {
  int which;
  return wait_loop(comm, &op, 1, &which, NULL, deadline, return_at);
}

tutti_result_t tutti__wait_any(struct tutti_comm *comm, tutti_xfer_t *const *ops, int n,
                               int64_t deadline, int *which) {
  return wait_loop(comm, ops, n, which, NULL, deadline, INT64_MAX);
}

tutti_result_t tutti__wait_cond(struct tutti_comm *comm, const tutti_cond_t *cond,
                                int64_t deadline) {
  int which;
  return wait_loop(comm, NULL, 0, &which, cond, deadline, INT64_MAX);
}
