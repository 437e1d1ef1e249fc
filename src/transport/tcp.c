/*
 * TCP transport: one non-blocking, TCP_NODELAY socket per peer pair. Rank i connects to
 * every lower rank's data listener and accepts every higher one, so each pair has exactly one
 * connection. Large messages stream as the kernel accepts them; waiting is one poll() over
 * the sockets this rank waits on plus an eventfd for tutti_comm_abort. Every connection
 * starts with a mutual HMAC challenge-response over the job secret (core/auth.h).
 *
 * Why a connection closed: a rank that gives up sends each peer one urgent (out-of-band)
 * byte before shutting down, saying how it failed and which rank it blames; a clean destroy
 * sends one too. The byte is outside the stream, so it never breaks a frame. A peer that
 * closes without one died. So when a failure cascades down a ring, every rank can still name
 * the rank that died or the rank that stopped answering, not just the neighbour that gave up.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "algo/algo.h"
#include "core/auth.h"
#include "core/sock.h"
#include "transport/transport.h"

#define TCP_HELLO_MAGIC 0x74747463u     /* "tttc" */
#define TCP_CHALLENGE_MAGIC 0x74747461u /* "ttta" */
/* How long a new connection may take to answer the challenge; a silent stranger holds the
 * mesh set-up up this long at most. */
#define TCP_HELLO_NS 5000000000LL

/* The data handshake (core/auth.h): the accepting rank sends a challenge, the connecting rank
 * answers with a hello proving the job secret over its identity, and the accepting rank
 * answers with its own proof (32 bytes) over its identity. Every message has a fixed size. */
typedef struct tcp_challenge {
  uint32_t magic;
  uint32_t pad;
  uint8_t na[TUTTI_AUTH_NONCE_BYTES];
} tcp_challenge_t;

/* Who a side of the connection is; each side's proof covers its own. */
typedef struct tcp_ident {
  uint32_t magic;
  int32_t rank;
  uint64_t job_id;
} tcp_ident_t;

typedef struct tcp_hello {
  tcp_ident_t id;
  uint8_t nc[TUTTI_AUTH_NONCE_BYTES];
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES];
} tcp_hello_t;

/* The urgent byte: the kind in the top two bits, 1 + the blamed rank (0: none, or a rank
 * above 61) in the low six; see MARK_USAGE. */
#define MARK_FAILED 0x40u  /* it failed: a peer died or failed, or it was aborted */
#define MARK_TIMEOUT 0x80u /* it timed out waiting for the blamed rank */
#define MARK_LEFT 0xC0u    /* it destroyed its communicator cleanly */
#define MARK_KIND 0xC0u
#define MARK_RANKS 62 /* ranks 0..61 can be blamed; 63 with MARK_FAILED: */
#define MARK_USAGE 63 /* the ranks disagree on the call (TUTTI_ERR_INVALID_USAGE) */
/* How long a rank that cannot tell who failed first waits for a dying peer's connections. */
#define FIND_DEAD_MS 100

typedef struct tcp_transport {
  tutti_transport_t base;
  int *fd;          /* per global rank; -1 for peers on other transports */
  int wake_fd;      /* eventfd that tutti_comm_abort writes */
  struct pollfd *pfd;
  unsigned char *mark; /* per global rank: the urgent byte it sent, once seen; 0 before */
} tcp_transport_t;

/* The urgent byte the peer sent before closing, or 0 (none, or not arrived). */
static unsigned peer_mark(int fd) {
  unsigned char c;
  if (recv(fd, &c, 1, MSG_OOB | MSG_PEEK | MSG_DONTWAIT) == 1) return c;
  return 0;
}

/* The kernel forgets the urgent byte once the reader passes it, and a read stops short just
 * before it; so a short read checks for it and keeps it. */
static void keep_mark(tcp_transport_t *t, int peer) {
  unsigned m = peer_mark(t->fd[peer]);
  if (m) t->mark[peer] = (unsigned char)m;
}

/* A peer other than `except` whose connection closes without an urgent byte: one that died
 * (killed, crashed, exited without destroying). A dying process may close its sockets one by
 * one, late, when it gets a core again, so this waits up to wait_ms for one. -1 if none. */
static int find_dead(tcp_transport_t *t, int except, int wait_ms) {
  struct tutti_comm *comm = t->base.comm;
  int64_t until = tutti__now_ns() + (int64_t)wait_ms * 1000000;
  for (;;) {
    nfds_t n = 0;
    for (int r = 0; r < comm->nranks; r++) {
      if (r == except || t->fd[r] < 0 || t->mark[r]) continue;
      t->pfd[n].fd = t->fd[r];
      t->pfd[n].events = POLLRDHUP;
      t->pfd[n++].revents = 0;
    }
    int64_t left = (until - tutti__now_ns()) / 1000000;
    if (poll(t->pfd, n, left > 0 ? (int)left : 0) <= 0) return -1;
    for (nfds_t i = 0; i < n; i++) {
      if (!(t->pfd[i].revents & (POLLRDHUP | POLLHUP | POLLERR))) continue;
      int r = 0;
      while (t->fd[r] != t->pfd[i].fd) r++;
      keep_mark(t, r);
      if (!t->mark[r]) return r;
    }
  }
}

/* The failure of peer's connection, blamed on the rank that caused it: the one its urgent
 * byte names, else one whose connection closed without notice, else peer itself. */
static tutti_result_t peer_error(tcp_transport_t *t, int peer, const char *what, int e) {
  char who[128], root[128];
  struct tutti_comm *comm = t->base.comm;
  tutti__peer_desc(comm, peer, who, sizeof who);
  if (comm->failed != TUTTI_SUCCESS) /* an echo of this rank's own failure */
    return tutti__error(comm, TUTTI_ERR_REMOTE, "%s %s%s%s", what, who, e ? ": " : "",
                        e ? strerror(e) : "");
  keep_mark(t, peer);
  unsigned mark = t->mark[peer];
  if (mark == (MARK_FAILED | MARK_USAGE)) /* its abort frame may have been lost */
    return tutti__error(comm, TUTTI_ERR_INVALID_USAGE, "%s gave up: the ranks disagree on the "
                        "call (see that rank's error)", who);
  int blamed = (int)(mark & ~MARK_KIND) - 1;
  if (blamed == comm->rank || blamed >= comm->nranks) blamed = -1;
  if ((mark & MARK_KIND) == MARK_TIMEOUT && blamed >= 0) {
    comm->culprit = blamed + 1;
    return tutti__error(comm, TUTTI_ERR_TIMEOUT, "%s timed out waiting for %s and abandoned "
                        "the call", who, tutti__peer_desc(comm, blamed, root, sizeof root));
  }
  if ((mark & MARK_KIND) == MARK_LEFT)
    return tutti__error(comm, TUTTI_ERR_REMOTE, "%s destroyed its communicator during the "
                        "call", who);
  if (blamed < 0) blamed = find_dead(t, peer, FIND_DEAD_MS);
  if (blamed < 0 && (blamed = tutti__stopped_peer(comm)) >= 0) {
    /* Nobody died, but a rank of this host is stopped: peer gave up waiting on it. */
    comm->culprit = blamed + 1;
    return tutti__error(comm, TUTTI_ERR_TIMEOUT, "%s gave up while %s is stopped (SIGSTOP)",
                        who, tutti__peer_desc(comm, blamed, root, sizeof root));
  }
  if (blamed >= 0) {
    comm->culprit = blamed + 1;
    return tutti__error(comm, TUTTI_ERR_REMOTE, "%s died or failed during the call (%s %s%s%s)",
                        tutti__peer_desc(comm, blamed, root, sizeof root), what, who,
                        e ? ": " : "", e ? strerror(e) : "");
  }
  comm->culprit = peer + 1;
  if (mark)
    return tutti__error(comm, TUTTI_ERR_REMOTE, "%s failed and abandoned the call", who);
  return tutti__error(comm, TUTTI_ERR_REMOTE, "%s died during the call (%s it%s%s)", who, what,
                      e ? ": " : "", e ? strerror(e) : "");
}

static tutti_result_t tcp_send(tutti_transport_t *tp, int peer, const struct iovec *iov,
                               int iovcnt, size_t *moved) {
  tcp_transport_t *t = (tcp_transport_t *)tp;
  struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};
  ssize_t n = sendmsg(t->fd[peer], &m, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n >= 0) {
    *moved = (size_t)n;
    return TUTTI_SUCCESS;
  }
  *moved = 0;
  if (errno == EAGAIN || errno == EINTR) return TUTTI_SUCCESS;
  return peer_error(t, peer, "lost the connection to", errno);
}

static tutti_result_t tcp_recv(tutti_transport_t *tp, int peer, void *buf, size_t len,
                               size_t *moved) {
  tcp_transport_t *t = (tcp_transport_t *)tp;
  *moved = 0;
  if (len == 0) return TUTTI_SUCCESS;
  ssize_t n = recv(t->fd[peer], buf, len, MSG_DONTWAIT);
  if (n > 0) {
    *moved = (size_t)n;
    if ((size_t)n < len) keep_mark(t, peer);
    return TUTTI_SUCCESS;
  }
  if (n == 0) return peer_error(t, peer, "connection closed by", 0);
  if (errno == EAGAIN || errno == EINTR) return TUTTI_SUCCESS;
  return peer_error(t, peer, "lost the connection to", errno);
}

static tutti_result_t tcp_block(tutti_transport_t *tp, const tutti_want_t *wants, int nwants,
                                int timeout_ms) {
  tcp_transport_t *t = (tcp_transport_t *)tp;
  for (int i = 0; i < nwants; i++) {
    t->pfd[i].fd = t->fd[wants[i].peer];
    /* POLLPRI: a failing peer's urgent byte, kept before a read passes (and drops) it. */
    t->pfd[i].events = (short)(((wants[i].what & TUTTI_WANT_RECV) ? POLLIN | POLLPRI : 0) |
                               ((wants[i].what & TUTTI_WANT_SEND) ? POLLOUT : 0));
    t->pfd[i].revents = 0;
  }
  t->pfd[nwants].fd = t->wake_fd;
  t->pfd[nwants].events = POLLIN;
  int rc = poll(t->pfd, (nfds_t)nwants + 1, timeout_ms);
  if (rc < 0 && errno != EINTR)
    return tutti__error(t->base.comm, TUTTI_ERR_SYSTEM, "poll failed: %s", strerror(errno));
  for (int i = 0; rc > 0 && i < nwants; i++)
    if (t->pfd[i].revents & POLLPRI) keep_mark(t, wants[i].peer);
  if (rc > 0 && t->pfd[nwants].revents) {
    uint64_t v;
    if (read(t->wake_fd, &v, sizeof v) < 0) { /* drained; nothing else to do */
    }
  }
  /* Errors and hang-ups surface from the next send or recv, which names the peer. */
  return TUTTI_SUCCESS;
}

static void tcp_wake(tutti_transport_t *tp) {
  tcp_transport_t *t = (tcp_transport_t *)tp;
  uint64_t one = 1;
  if (write(t->wake_fd, &one, sizeof one) < 0) { /* the counter is full: already woken */
  }
}

/* Shutting the sockets down makes every peer's next poll report the failure at once. The
 * owner first tells each peer why in an abort frame, where the stream is between frames: the
 * result code, and which rank's failure this one follows from, so a rank that only hears from
 * a survivor still learns which rank died. It is best effort; EOF follows anyway. An abort
 * from another thread only shuts down: it must not write into a stream the owner writes (and
 * it has not set comm->failed). */
static void tcp_fail(tutti_transport_t *tp, const char *reason) {
  (void)reason; /* the text stays in this rank's own error; the frame carries code and culprit */
  tcp_transport_t *t = (tcp_transport_t *)tp;
  struct tutti_comm *comm = t->base.comm;
  /* The urgent byte: on a timeout, the rank waited for (the first with a receive pending)
   * unless a peer's failure already named one. An abort from another thread (failed still
   * unset) blames nobody: the owner's queues are not ours to read. */
  unsigned kind = comm->failed == TUTTI_ERR_TIMEOUT ? MARK_TIMEOUT : MARK_FAILED;
  int blamed = comm->failed != TUTTI_SUCCESS ? comm->culprit - 1 : -1;
  for (int i = 0; kind == MARK_TIMEOUT && blamed < 0 && i < comm->nranks; i++)
    if (comm->peers[i].recvq_head) blamed = i;
  unsigned char mark =
      (unsigned char)(kind | (blamed >= 0 && blamed < MARK_RANKS ? (unsigned)blamed + 1 : 0));
  if (comm->failed == TUTTI_ERR_INVALID_USAGE) mark = MARK_FAILED | MARK_USAGE;
  for (int i = 0; i < comm->nranks; i++) {
    if (t->fd[i] < 0) continue;
    const tutti_xfer_t *head = comm->peers[i].sendq_head;
    if (comm->failed != TUTTI_SUCCESS && (!head || head->done == 0)) {
      tutti_msg_hdr_t h = {.magic = TUTTI_ABORT_MAGIC, .seq = (uint32_t)comm->failed};
      h.fp.root = comm->rank;
      h.fp.count = (uint64_t)comm->culprit;
      if (send(t->fd[i], &h, sizeof h, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) { /* best effort */
      }
    }
    /* Best effort too: with the send buffer full it is lost; the peer blames by elimination. */
    if (send(t->fd[i], &mark, 1, MSG_OOB | MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
    }
    shutdown(t->fd[i], SHUT_RDWR);
  }
}

static void tcp_destroy(tutti_transport_t *tp) {
  tcp_transport_t *t = (tcp_transport_t *)tp;
  /* A clean goodbye, so a peer still running does not take this close for a death. After a
   * failure the sockets are shut down and the send fails, harmlessly. */
  unsigned char bye = MARK_LEFT;
  for (int i = 0; t->fd && i < t->base.comm->nranks; i++)
    if (t->fd[i] >= 0) {
      if (t->base.comm->failed == TUTTI_SUCCESS &&
          send(t->fd[i], &bye, 1, MSG_OOB | MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
      }
      close(t->fd[i]);
    }
  if (t->wake_fd >= 0) close(t->wake_fd);
  free(t->fd);
  free(t->pfd);
  free(t->mark);
  free(t);
}

static const tutti_transport_ops_t tcp_ops = {
    .name = "tcp",
    .send = tcp_send,
    .recv = tcp_recv,
    .block = tcp_block,
    .wake = tcp_wake,
    .fail = tcp_fail,
    .destroy = tcp_destroy,
};

static int is_tcp_peer(const struct tutti_comm *comm, const tcp_transport_t *t, int r) {
  return r != comm->rank && comm->peers[r].tp == &t->base;
}

/* Runs the accepting side of the handshake on the new connection fd, within TCP_HELLO_NS and
 * the deadline. Returns the higher rank that proved the job secret (and has been sent this
 * rank's proof), or -1 after logging why the connection is refused; the caller closes it. */
static int accept_one(tcp_transport_t *t, int fd, int64_t deadline) {
  struct tutti_comm *comm = t->base.comm;
  char err[256], why[320], who[64];
  int64_t dl = tutti__now_ns() + TCP_HELLO_NS;
  if (dl > deadline) dl = deadline;
  tcp_challenge_t ch = {TCP_CHALLENGE_MAGIC, 0, {0}};
  tcp_hello_t h;
  if (tutti__auth_make_nonce(ch.na) != TUTTI_SUCCESS) {
    snprintf(why, sizeof why, "no nonce could be made");
    goto reject;
  }
  if (tutti__sock_send_all(fd, &ch, sizeof ch, dl, err, sizeof err) != TUTTI_SUCCESS ||
      tutti__sock_recv_all(fd, &h, sizeof h, dl, err, sizeof err) != TUTTI_SUCCESS) {
    snprintf(why, sizeof why, "no complete hello: %s", err);
    goto reject;
  }
  struct iovec part = {&h.id, sizeof h.id};
  if (h.id.magic != TCP_HELLO_MAGIC ||
      !tutti__auth_verify(comm->secret, TUTTI_AUTH_CONNECTOR, ch.na, h.nc, &part, 1, h.proof)) {
    snprintf(why, sizeof why, "it did not prove it knows the job secret (a stranger, a rank "
             "of another job, or a replayed handshake)");
    goto reject;
  }
  int r = h.id.rank;
  if (h.id.job_id != comm->job_id || r <= comm->rank || r >= comm->nranks ||
      !is_tcp_peer(comm, t, r) || t->fd[r] >= 0) {
    snprintf(why, sizeof why, "it claims to be rank %d of job %016llx, which is not a higher "
             "TCP peer still expected here", r, (unsigned long long)h.id.job_id);
    goto reject;
  }
  tcp_ident_t me = {TCP_HELLO_MAGIC, comm->rank, comm->job_id};
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES];
  part = (struct iovec){&me, sizeof me};
  if (tutti__auth_proof(comm->secret, TUTTI_AUTH_ACCEPTOR, ch.na, h.nc, &part, 1, proof) !=
          TUTTI_SUCCESS ||
      tutti__sock_send_all(fd, proof, sizeof proof, dl, err, sizeof err) != TUTTI_SUCCESS) {
    snprintf(why, sizeof why, "cannot answer rank %d with this rank's proof", r);
    goto reject;
  }
  return r;
reject:
  WARN("net", comm->rank, "rejected a data connection from %s: %s",
       tutti__auth_peer_name(fd, who, sizeof who), why);
  return -1;
}

/* Accepts connections from the higher ranks; strangers, replays and duplicates are dropped
 * (and logged) without failing the mesh. */
static tutti_result_t accept_peers(tcp_transport_t *t, int listen_fd, int expected,
                                   int64_t deadline) {
  struct tutti_comm *comm = t->base.comm;
  char err[256];
  while (expected > 0) {
    int fd;
    tutti_result_t r = tutti__sock_accept(listen_fd, deadline, &fd, err, sizeof err);
    if (r != TUTTI_SUCCESS)
      return tutti__error(comm, r, "connecting the TCP mesh: %s (%d higher ranks missing)",
                          err, expected);
    int peer = accept_one(t, fd, deadline);
    if (peer < 0) {
      close(fd);
      continue;
    }
    tutti__sock_nodelay_nonblock(fd);
    t->fd[peer] = fd;
    expected--;
  }
  return TUTTI_SUCCESS;
}

/* Connects to lower rank r's data listener and runs the connecting side of the handshake:
 * proves the job secret and checks that the listener proves it too, as rank r of this job. */
static tutti_result_t connect_one(tcp_transport_t *t, int r, int64_t deadline, int *out,
                                  char *err, size_t errlen) {
  struct tutti_comm *comm = t->base.comm;
  int fd;
  TRY(tutti__sock_connect(comm->peers[r].ip, comm->peers[r].port, deadline, 1, &fd, err,
                          errlen));
  tcp_challenge_t ch;
  tcp_hello_t h = {{TCP_HELLO_MAGIC, comm->rank, comm->job_id}, {0}, {0}};
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES];
  struct iovec part = {&h.id, sizeof h.id};
  tutti_result_t res;
  /* Rank r answers once it has connected to its own lower ranks: allow it the deadline. */
  TRY_GOTO(tutti__sock_recv_all(fd, &ch, sizeof ch, deadline, err, errlen), res, fail);
  if (ch.magic != TCP_CHALLENGE_MAGIC) {
    snprintf(err, errlen, "its data listener does not speak the tutti handshake");
    res = TUTTI_ERR_REMOTE;
    goto fail;
  }
  if (tutti__auth_make_nonce(h.nc) != TUTTI_SUCCESS ||
      tutti__auth_proof(comm->secret, TUTTI_AUTH_CONNECTOR, ch.na, h.nc, &part, 1, h.proof) !=
          TUTTI_SUCCESS) {
    snprintf(err, errlen, "cannot compute the proof of the job secret (libcrypto failed)");
    res = TUTTI_ERR_INTERNAL;
    goto fail;
  }
  TRY_GOTO(tutti__sock_send_all(fd, &h, sizeof h, deadline, err, errlen), res, fail);
  res = tutti__sock_recv_all(fd, proof, sizeof proof, deadline, err, errlen);
  if (res == TUTTI_ERR_REMOTE)
    snprintf(err, errlen, "it closed the connection after this rank's hello: it did not accept "
             "this rank's proof of the job secret, or it exited");
  if (res != TUTTI_SUCCESS) goto fail;
  tcp_ident_t peer = {TCP_HELLO_MAGIC, r, comm->job_id};
  part = (struct iovec){&peer, sizeof peer};
  if (!tutti__auth_verify(comm->secret, TUTTI_AUTH_ACCEPTOR, ch.na, h.nc, &part, 1, proof)) {
    snprintf(err, errlen, "its data listener did not prove it knows the job secret");
    res = TUTTI_ERR_REMOTE;
    goto fail;
  }
  *out = fd;
  return TUTTI_SUCCESS;
fail:
  close(fd);
  return res;
}

tutti_result_t tutti__tcp_create(struct tutti_comm *comm, int listen_fd, tutti_transport_t **out) {
  tutti_result_t res = TUTTI_SUCCESS;
  tcp_transport_t *t = calloc(1, sizeof *t);
  if (!t) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory creating tcp transport");
  t->base.ops = &tcp_ops;
  t->base.comm = comm;
  t->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  t->fd = malloc((size_t)comm->nranks * sizeof *t->fd);
  t->pfd = malloc(((size_t)comm->nranks + 1) * sizeof *t->pfd);
  t->mark = calloc((size_t)comm->nranks, 1);
  if (!t->fd || !t->pfd || !t->mark || t->wake_fd < 0) {
    res = tutti__error(comm, TUTTI_ERR_SYSTEM, "cannot create tcp transport state");
    goto out;
  }
  int higher = 0;
  for (int r = 0; r < comm->nranks; r++) {
    t->fd[r] = -1;
    if (comm->peers[r].kind == TUTTI_TRANSPORT_TCP) {
      comm->peers[r].tp = &t->base;
      if (r > comm->rank) higher++;
    }
  }
  int64_t deadline = tutti__deadline_after(comm->cfg.timeout_s);
  char err[256], who[128];
  for (int r = 0; r < comm->rank; r++) {
    if (!is_tcp_peer(comm, t, r)) continue;
    int fd;
    tutti_result_t c = connect_one(t, r, deadline, &fd, err, sizeof err);
    if (c != TUTTI_SUCCESS) {
      res = tutti__error(comm, c, "cannot connect to %s: %s",
                         tutti__peer_desc(comm, r, who, sizeof who), err);
      goto out;
    }
    tutti__sock_nodelay_nonblock(fd);
    t->fd[r] = fd;
  }
  TRY_GOTO(accept_peers(t, listen_fd, higher, deadline), res, out);
out:
  if (res != TUTTI_SUCCESS) {
    tcp_destroy(&t->base);
    return res;
  }
  *out = &t->base;
  return TUTTI_SUCCESS;
}
