/*
 * The one interface between algorithms and the ways bytes move (NCCL's ncclNet_t, redis's
 * ConnectionType). A transport is an ordered, reliable byte stream per peer; it never blocks
 * in send or recv. Message framing, queues of posted operations, waiting with deadlines and
 * error reporting are written once, in progress.c, on top of it.
 *
 * Algorithms use only the tutti__isend / tutti__irecv / tutti__wait functions below.
 */
#ifndef TUTTI_TRANSPORT_H
#define TUTTI_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/internal.h"

typedef struct tutti_transport tutti_transport_t;

/* What a waiting rank needs from one peer: bytes to arrive, room to send, or both. */
enum { TUTTI_WANT_RECV = 1, TUTTI_WANT_SEND = 2 };
typedef struct tutti_want {
  int peer;
  int what;
} tutti_want_t;

struct tutti_mbox_ops;

typedef struct tutti_transport_ops {
  const char *name;
  /* Moves a prefix of the bytes described by iov toward peer; *moved is how many (0 when
   * there is no room now). Errors name the peer through tutti__error. */
  tutti_result_t (*send)(tutti_transport_t *t, int peer, const struct iovec *iov, int iovcnt,
                         size_t *moved);
  /* Moves up to len bytes from peer into buf; *moved is how many (0 when none are there). */
  tutti_result_t (*recv)(tutti_transport_t *t, int peer, void *buf, size_t len, size_t *moved);
  /* Sleeps until one of the wants may be satisfiable, the peers failed, or timeout_ms. It
   * also detects dead peers and returns TUTTI_ERR_REMOTE for them. */
  tutti_result_t (*block)(tutti_transport_t *t, const tutti_want_t *wants, int nwants,
                          int timeout_ms);
  /* Wakes this rank's own block() from another thread (tutti_comm_abort). */
  void (*wake)(tutti_transport_t *t);
  /* Tells every peer on this transport that this rank failed, and why, without blocking.
   * Safe to call from another thread (tutti_comm_abort). */
  void (*fail)(tutti_transport_t *t, const char *reason);
  void (*destroy)(tutti_transport_t *t);
  /* Optional (NULL: none). Checks the wait loop makes before each sleep inside a collective:
   * TUTTI_ERR_INVALID_USAGE where a peer is seen running another call (e.g. through a
   * mailbox while this rank uses its queues). Never waits. */
  tutti_result_t (*check)(tutti_transport_t *t);
  /* Optional (NULL: none). Closes the connections this transport accepted on the data
   * listener whose first message it has not read: tutti_comm_shrink is about to serve that
   * listener itself, and a shrink member's connection that the last collective accepted
   * before the member's knock arrived would otherwise wait unread past the collection
   * window. The member sees it closed and asks again. Never waits. */
  void (*release_listener)(tutti_transport_t *t);
  /* Optional capability (NULL: none): shared one-shot mailboxes and published calls. */
  const struct tutti_mbox_ops *mbox;
  /* Optional, both or neither (NULL: none): the first contiguous run of the bytes from peer
   * that have arrived, readable in place (*len 0 when none), and the release of len bytes of
   * it once read. A receive that combines the bytes with this rank's own (tutti__irecv_reduce)
   * then reads the queue once, where a copy out of it first would cost a pass over the data. */
  tutti_result_t (*view)(tutti_transport_t *t, int peer, const void **ptr, size_t *len);
  void (*release)(tutti_transport_t *t, int peer, size_t len);
} tutti_transport_ops_t;

struct tutti_transport_row;

struct tutti_transport {
  const tutti_transport_ops_t *ops;
  struct tutti_comm *comm;
  const struct tutti_transport_row *row; /* its registry row, set by tutti__transport_attach */
};

/* ---- The registry (registry.c) ---------------------------------------------------------
 * One row per transport. The communicator holds the live transports (comm->tps) and one per
 * peer (peers[r].tp); nothing outside registry.c names a particular transport. */

/* Which peers a transport can serve. */
enum {
  TUTTI_SERVES_THREADS = 1, /* threads of this process (made by tutti_comm_init_threads) */
  TUTTI_SERVES_HOST = 2,    /* processes of this host */
  TUTTI_SERVES_ANY = 4      /* any process, any host */
};
/* The tuner's cost-parameter class of a transport (algo/tuner.c's params table). */
enum { TUTTI_COST_LOCAL = 0, TUTTI_COST_NETWORK = 1 };
/* Optional capabilities a row declares. */
enum {
  TUTTI_CAP_MAILBOX = 1,     /* shared one-shot mailboxes (ops->mbox) */
  TUTTI_CAP_SINGLE_COPY = 2  /* peers' memory may be read directly (comm->cma) */
};

typedef struct tutti_transport_row {
  const char *name;   /* as TUTTI_TRANSPORT spells it */
  int kind;           /* TUTTI_TRANSPORT_*: what peers[r].kind holds for its peers */
  int serves;         /* TUTTI_SERVES_* bits */
  int cost_class;     /* TUTTI_COST_* */
  int caps;           /* TUTTI_CAP_* bits */
  /* Connects the peers whose peers[r].kind is this row's kind and sets their tp; NULL for a
   * transport that makes its own communicators (mem). listen_fd: this rank's data listener. */
  tutti_result_t (*create)(struct tutti_comm *comm, int listen_fd, tutti_transport_t **out);
  /* Optional peer-state poll: the first peer of t stopped by a signal, or -1. */
  int (*stopped_peer)(tutti_transport_t *t);
} tutti_transport_row_t;

/* The registry's rows, in the order auto placement prefers them. */
const tutti_transport_row_t *tutti__transport_rows(int *count);
/* Sets every peer's kind (which row serves it) from the hosts and TUTTI_TRANSPORT; an error
 * names the peer no row may serve (a forced transport that cannot reach a peer's host). */
tutti_result_t tutti__transport_place(struct tutti_comm *comm);
/* Creates one transport per row some peer needs, in row order, and attaches each. */
tutti_result_t tutti__transport_connect(struct tutti_comm *comm, int listen_fd);
/* Adds t, made by the row of kind, to comm's live transports. */
void tutti__transport_attach(struct tutti_comm *comm, int kind, tutti_transport_t *t);
/* The live transport made by the row of kind, or NULL. */
tutti_transport_t *tutti__transport_of(const struct tutti_comm *comm, int kind);
/* The live transports' names joined by "+" in row order ("self" if none), for logs. */
const char *tutti__transport_label(const struct tutti_comm *comm, char *buf, size_t len);
/* The tuner's cost class for comm: the slowest class among its live transports. */
int tutti__transport_cost_class(const struct tutti_comm *comm);
/* Loops over the live transports: checks before a sleep (the first failure returns). */
tutti_result_t tutti__transport_check(struct tutti_comm *comm);

/* The first peer stopped by a signal (SIGSTOP: /proc state T), or -1, asking each live
 * transport's peer-state poll: after a timeout, the likely culprit though this rank waited
 * on a neighbour. */
int tutti__stopped_peer(const struct tutti_comm *comm);
/* A peer-state poll for rows whose peers are processes: the first peer of t on this host
 * (not this process) stopped by a signal, or -1. */
int tutti__host_stopped_peer(tutti_transport_t *t);

/* ---- Posted operations (progress.c) -------------------------------------------------- */

/* Every message is preceded by this header, so a receiver can tell a message of another
 * collective or of another size from the one it expects instead of misreading bytes. */
typedef struct tutti_msg_hdr {
  uint32_t magic;
  uint32_t seq; /* collective sequence number, or a point-to-point tag; a code in aborts */
  uint64_t len;
  tutti_fingerprint_t fp;
} tutti_msg_hdr_t;

/* TUTTI_OP_MATCH: a point-to-point receive matched by (source, tag) (p2p_match.c). */
enum { TUTTI_OP_SEND = 1, TUTTI_OP_RECV = 2, TUTTI_OP_MATCH = 3 };

/* Owned by the caller (often on its stack) until complete or until the collective fails. */
typedef struct tutti_xfer {
  struct tutti_xfer *next;
  int kind;
  int peer;
  char *buf;
  size_t len;
  size_t done; /* bytes moved, header included */
  int complete;
  tutti_msg_hdr_t hdr; /* what is sent, or what a receive expects */
  tutti_msg_hdr_t got; /* the header a receive actually read */
  uint64_t order;          /* TUTTI_OP_MATCH: when it was posted, for MPI's matching order */
  tutti_status_t *status;  /* TUTTI_OP_MATCH: where to report source and tag, or NULL */
  /* A receive that reduces (tutti__irecv_reduce): buf = own op the bytes (the bytes op own
   * where !own_first); own NULL otherwise. */
  const char *own;
  int rdtype, rop, own_first;
  char *tmp;      /* len bytes for what cannot be reduced in place (progress.c) */
  size_t pending; /* bytes of it received, not yet reduced (less than an element) */
} tutti_xfer_t;

/* Queues a send of len bytes of buf to peer. buf must stay valid and unchanged until the op
 * completes. Operations to one peer complete in the order they were posted. */
tutti_result_t tutti__isend(struct tutti_comm *comm, tutti_xfer_t *op, int peer, const void *buf,
                            size_t len);
/* Queues a receive of exactly len bytes from peer into buf. */
tutti_result_t tutti__irecv(struct tutti_comm *comm, tutti_xfer_t *op, int peer, void *buf,
                            size_t len);
/* Whether a receive from peer can reduce as it reads (its transport has view): the condition
 * of tutti__irecv_reduce. */
int tutti__can_recv_reduce(const struct tutti_comm *comm, int peer);
/* Queues a receive of len bytes from peer (whole elements of dtype) that stores buf[i] =
 * own[i] op the i-th received element (the element op own[i] where !own_first: the order the
 * algorithm's bit-identical results rest on), reading the bytes where they arrived (own may
 * be buf); tmp (len bytes) takes those that cannot be read so: split or unaligned. */
tutti_result_t tutti__irecv_reduce(struct tutti_comm *comm, tutti_xfer_t *op, int peer, void *buf,
                                   const void *own, size_t len, int dtype, int rop,
                                   int own_first, void *tmp);
/* Drives every transport until op is complete, the deadline passes, a peer fails, or comm is
 * aborted. On failure the communicator is marked failed and every queue is emptied. */
tutti_result_t tutti__wait(struct tutti_comm *comm, tutti_xfer_t *op, int64_t deadline);
/* Like tutti__wait, but also returns TUTTI_IN_PROGRESS (the communicator unharmed) at
 * return_at or as soon as comm->work_pending is set, so a progress thread can take new work. */
tutti_result_t tutti__wait_slice(struct tutti_comm *comm, tutti_xfer_t *op, int64_t deadline,
                                 int64_t return_at);
/* Like tutti__wait, until the first of ops[0..n) (n >= 1) is complete; *which is its index
 * (an op complete already counts at once, so the caller drops those it has handled). */
tutti_result_t tutti__wait_any(struct tutti_comm *comm, tutti_xfer_t *const *ops, int n,
                               int64_t deadline, int *which);
/* Something to wait for outside the queues: a peer's post in a shared mailbox. */
typedef struct tutti_cond {
  /* 1 once the awaited thing happened. Called on every turn of the spin: cheap. */
  int (*met)(const struct tutti_cond *c);
  /* Detects failures without waiting: a failure published by another rank, a dead peer
   * (spun: the spin is over, so costlier checks are due), a peer running another call. */
  tutti_result_t (*check)(const struct tutti_cond *c, int spun);
  /* Sleeps until met may have changed, a failure, or ms milliseconds. */
  void (*sleep)(const struct tutti_cond *c, int ms);
  int peer;  /* the rank it waits on, for a timeout's report and SIGUSR1's */
  void *ctx; /* the waiter's state */
} tutti_cond_t;
/* The wait loop of tutti__wait for cond instead of an operation: spins, then sleeps in
 * cond's sleep; the same deadline, abort check and timeout report. On failure the
 * communicator is marked failed and every queue is emptied. */
tutti_result_t tutti__wait_cond(struct tutti_comm *comm, const tutti_cond_t *cond,
                                int64_t deadline);
/* The same as tutti__isend / tutti__irecv with an explicit header tag instead of the
 * collective sequence number (point-to-point messages count per peer pair). */
tutti_result_t tutti__isend_tag(struct tutti_comm *comm, tutti_xfer_t *op, int peer,
                                const void *buf, size_t len, uint32_t tag);
tutti_result_t tutti__irecv_tag(struct tutti_comm *comm, tutti_xfer_t *op, int peer, void *buf,
                                size_t len, uint32_t tag);

/* Empties every queue without completing anything (after a failure, or at destroy). */
void tutti__drop_ops(struct tutti_comm *comm);

/* Checks a received header against what op expects; a mismatch becomes comm's error. */
/* Fills op as a transfer of kind with peer whose header carries tag and the current call's
 * fingerprint, not yet started. */
void tutti__xfer_init(struct tutti_comm *comm, tutti_xfer_t *op, int kind, int peer, void *buf,
                      size_t len, uint32_t tag);
tutti_result_t tutti__check_header(struct tutti_comm *comm, const tutti_xfer_t *op,
                                   const tutti_msg_hdr_t *got);

/* ---- Matched point-to-point receives (p2p_match.c) ----------------------------------------
 * Point-to-point messages carry the user's tag in fp.root. A receive takes the first message
 * from peer (or from any peer: TUTTI_ANY_SOURCE) whose tag matches (any: TUTTI_ANY_TAG); a
 * message no posted receive matches is read into memory and kept, so a later message of
 * another tag is never stuck behind it. Matches from one peer keep that peer's order. */

/* Posts the receive (or completes it at once from a kept message). */
tutti_result_t tutti__p2p_irecv(struct tutti_comm *comm, tutti_xfer_t *op, int peer, void *buf,
                                size_t len, int tag, tutti_status_t *status);
/* 1 if the wait loop must read from peer for the matched receives. */
int tutti__p2p_wants(const struct tutti_comm *comm, int peer);
/* Reads from peer for the matched receives. *handled is 0 when the collective receive at the
 * head of peer's queue may read the stream itself (its header may have been handed over). */
tutti_result_t tutti__p2p_progress(struct tutti_comm *comm, int peer, int *moved_any,
                                   int *handled);
/* 1 if hdr, read from a peer's stream by a collective receive, is a point-to-point
 * message's: it went ahead of the collective's data (the peer sent it first). */
int tutti__p2p_is_p2p_header(const tutti_msg_hdr_t *hdr);
/* Takes over such a header from the collective receive that read it: the message's body goes
 * to the matching posted receive or is kept (tutti__p2p_wants then reads it), and the
 * collective receive reads its own header after it. */
tutti_result_t tutti__p2p_divert(struct tutti_comm *comm, int peer, const tutti_msg_hdr_t *hdr);
/* Forgets every posted matched receive and kept message (after a failure, at destroy). */
void tutti__p2p_drop(struct tutti_comm *comm);

/* ---- One-shot mailboxes: a transport capability (ops->mbox) ------------------------------
 * Small collectives of ranks that share one host. Every rank of a one-shot call calls begin,
 * then post (its payload, possibly none), then get for each peer whose payload it needs.
 * Payloads are read in place until the next begin. comm->mbox is the transport whose
 * mailboxes serve every peer, or NULL (then the capacity is 0 and no one-shot algorithm is
 * picked); comm->calls is the transport that publishes calls to the ranks of this host, or
 * NULL. The functions below dispatch to them. */

/* Payload bytes a mailbox holds. */
#define TUTTI_MBOX_BYTES ((size_t)64 << 10)

typedef struct tutti_mbox_ops {
  /* Starts a one-shot call that will post len bytes: waits until this rank's mailbox for it
   * is read by no one any more, and checks the peers' headers of the previous one-shot calls
   * not checked yet. */
  tutti_result_t (*begin)(tutti_transport_t *t, size_t len, int64_t deadline);
  /* Publishes len (<= TUTTI_MBOX_BYTES) bytes of data for the current call and the call's
   * header (comm->seq, comm->fp and call_bytes, the size every rank gives the call). */
  tutti_result_t (*post)(tutti_transport_t *t, const void *data, size_t len, size_t call_bytes);
  /* Waits for peer's post of the current call, checks its header against this rank's (a
   * disagreement fails as a message header's would), and points *data at its payload. */
  tutti_result_t (*get)(tutti_transport_t *t, int peer, int64_t deadline, const char **data);
  /* Publishes the collective this rank starts (comm->seq, comm->fp) to the ranks of this
   * host. Waits first (under the call's deadline) where a rooted call not yet seen on every
   * peer would otherwise drop out of reach of the check (call_conflict). */
  tutti_result_t (*call_publish)(tutti_transport_t *t);
  /* TUTTI_ERR_INVALID_USAGE, with a sentence naming the field, if a rank of this host has
   * published the current collective, or a rooted one of the last few not yet seen on every
   * peer, with another fingerprint (e.g. another root). rooted: the current call is one, to
   * be verified by later calls if some peer has not published it yet. A transport whose
   * mailboxes ran the call one-shot may leave its verification to them. Never waits. */
  tutti_result_t (*call_conflict)(tutti_transport_t *t, int rooted);
} tutti_mbox_ops_t;

/* TUTTI_MBOX_BYTES, or 0 where there are no mailboxes (some peer is not served by a
 * transport that has them). The same on every rank. */
static inline size_t tutti__mbox_capacity(const struct tutti_comm *comm) {
  return comm->mbox ? TUTTI_MBOX_BYTES : 0;
}
static inline tutti_result_t tutti__mbox_begin(struct tutti_comm *comm, size_t len,
                                               int64_t deadline) {
  return comm->mbox->ops->mbox->begin(comm->mbox, len, deadline);
}
static inline tutti_result_t tutti__mbox_post(struct tutti_comm *comm, const void *data,
                                              size_t len, size_t call_bytes) {
  return comm->mbox->ops->mbox->post(comm->mbox, data, len, call_bytes);
}
static inline tutti_result_t tutti__mbox_get(struct tutti_comm *comm, int peer,
                                             int64_t deadline, const char **data) {
  return comm->mbox->ops->mbox->get(comm->mbox, peer, deadline, data);
}
static inline tutti_result_t tutti__call_publish(struct tutti_comm *comm) {
  return comm->calls ? comm->calls->ops->mbox->call_publish(comm->calls) : TUTTI_SUCCESS;
}
static inline tutti_result_t tutti__call_conflict(struct tutti_comm *comm, int rooted) {
  return comm->calls ? comm->calls->ops->mbox->call_conflict(comm->calls, rooted)
                     : TUTTI_SUCCESS;
}

#define TUTTI_MSG_MAGIC 0x54545431u /* "TTT1" */
/* A header-only frame a failing rank sends, where the stream is between frames, to tell a
 * peer why it gave up (seq holds the result code, fp.root the sender's rank). */
#define TUTTI_ABORT_MAGIC 0x54545441u /* "ATTT" */

#endif
