/*
 * TCP transport: TUTTI_NSOCKS (default 1) non-blocking, TCP_NODELAY sockets per peer pair,
 * made on first use (tcp_conn.c) and used as one ordered byte stream (tcp_stream.c). Large
 * messages stream as the kernel accepts them; waiting is one poll() over the sockets this
 * rank waits on plus an eventfd for tutti_comm_abort. A call that waits long probes the peers
 * it waits on, so ranks that disagree on a rooted call fail instead of stalling
 * (tcp_stream.c). Why a connection closed, and whom to blame, is tcp_blame.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/tcp_int.h"

static tutti_result_t tcp_send(tutti_transport_t *tp, int peer, const struct iovec *iov,
                               int iovcnt, size_t *moved) {
  tcp_transport_t *t = (tcp_transport_t *)tp;
  tcp_peer_t *p = &t->peer[peer];
  *moved = 0;
  if (p->conn != TCP_UP) { /* the first use of the pair connects it */
    TRY(tcp__ensure(t, peer));
    if (p->conn != TCP_UP) return TUTTI_SUCCESS;
  }
  /* A probe partly sent goes first: it sits between frames of the stream. */
  int ctl = p->tx_ctl_len ? tcp__ctl_flush(t, p) : 1;
  ssize_t n = ctl > 0 ? tcp__stream_send(t, p, iov, iovcnt) : ctl;
  if (n >= 0) {
    *moved = (size_t)n;
    return TUTTI_SUCCESS;
  }
  if (errno == EAGAIN || errno == EINTR) return TUTTI_SUCCESS;
  return tcp__peer_error(t, peer, "lost the connection to", errno);
}

static tutti_result_t tcp_recv(tutti_transport_t *tp, int peer, void *buf, size_t len,
                               size_t *moved) {
  tcp_transport_t *t = (tcp_transport_t *)tp;
  if (t->peer[peer].conn != TCP_UP) {
    *moved = 0;
    TRY(tcp__ensure(t, peer));
    if (t->peer[peer].conn != TCP_UP) return TUTTI_SUCCESS;
  }
  return tcp__frame_recv(t, peer, buf, len, moved);
}

/* Adds one poll entry for peer's socket fd. */
static int add_pfd(tcp_transport_t *t, int at, int fd, short events, int peer) {
  t->pfd[at].fd = fd;
  t->pfd[at].events = events;
  t->pfd[at].revents = 0;
  t->pfd_peer[at] = peer;
  return at + 1;
}

static tutti_result_t tcp_block(tutti_transport_t *tp, const tutti_want_t *wants, int nwants,
                                int timeout_ms) {
  tcp_transport_t *t = (tcp_transport_t *)tp;
  int n = 0;
  for (int i = 0; i < nwants; i++) {
    tcp_peer_t *p = &t->peer[wants[i].peer];
    if (p->conn != TCP_UP) { /* polled below, with the connections being made */
      TRY(tcp__ensure(t, wants[i].peer));
      if (p->conn != TCP_UP) continue;
    }
    int rx = tcp__rx_fd(t, p), tx = tcp__tx_fd(t, p);
    int want_rx = wants[i].what & TUTTI_WANT_RECV, want_tx = wants[i].what & TUTTI_WANT_SEND;
    /* A header staged while reading probes is data this rank can take now. */
    if (want_rx && p->rx_hpos == TCP_HDR_BYTES) timeout_ms = 0;
    /* POLLPRI: a failing peer's urgent byte, kept before a read passes (and drops) it. */
    if (want_rx && rx == p->fd[0])
      n = add_pfd(t, n, rx, (short)(POLLIN | POLLPRI | (want_tx && tx == rx ? POLLOUT : 0)),
                  wants[i].peer);
    else if (want_rx)
      n = add_pfd(t, n, rx, POLLIN, wants[i].peer);
    if (want_tx && !(want_rx && tx == rx && rx == p->fd[0]))
      n = add_pfd(t, n, tx, POLLOUT, wants[i].peer);
  }
  int waited = n;
  n = tcp__probe_prepare(t, wants, nwants, n);
  int probed = n;
  n = tcp__conn_pollfds(t, n);
  int conns = n;
  n = add_pfd(t, n, t->wake_fd, POLLIN, -1);
  int rc = poll(t->pfd, (nfds_t)n, timeout_ms);
  if (rc < 0 && errno != EINTR)
    return tutti__error(t->base.comm, TUTTI_ERR_SYSTEM, "poll failed: %s", strerror(errno));
  for (int i = 0; rc > 0 && i < waited; i++)
    if (t->pfd[i].revents & POLLPRI) tcp__keep_mark(t, t->pfd_peer[i]);
  if (rc > 0 && t->pfd[n - 1].revents) {
    uint64_t v;
    if (read(t->wake_fd, &v, sizeof v) < 0) { /* drained; nothing else to do */
    }
  }
  if (rc > 0) TRY(tcp__probe_read(t, waited, probed));
  int busy = t->npend > 0;
  for (int i = probed; rc > 0 && !busy && i < conns; i++) busy = t->pfd[i].revents != 0;
  if (busy) TRY(tcp__conn_progress(t));
  /* Errors and hang-ups surface from the next send or recv, which names the peer. */
  return TUTTI_SUCCESS;
}

static void tcp_wake(tutti_transport_t *tp) {
  tcp_transport_t *t = (tcp_transport_t *)tp;
  uint64_t one = 1;
  if (write(t->wake_fd, &one, sizeof one) < 0) { /* the counter is full: already woken */
  }
}

/* How long a failing rank goes on with handshakes peers started with it (tcp__conn_settle). */
#define SETTLE_MS 100

/* Shutting the sockets down makes every peer's next poll report the failure at once. The
 * owner first tells each peer why in an abort frame, where the stream is between frames: the
 * result code, and which rank's failure this one follows from (any rank number), so a rank
 * that only hears from a survivor still learns which rank died. It is best effort; EOF
 * follows anyway. An abort from another thread only shuts down: it must not write into a
 * stream the owner writes (and it has not set comm->failed). */
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
  if (comm->failed == TUTTI_SUCCESS) {
    /* Another thread: the owner makes connections as it goes, so only the sockets already up
     * are read (atomically) and shut down; the owner unwinds the rest when it sees the flag. */
    for (int i = 0; i < comm->nranks; i++)
      for (int s = 0; s < t->nsocks; s++) {
        int fd = __atomic_load_n(&t->peer[i].fd[s], __ATOMIC_ACQUIRE);
        if (fd < 0) continue;
        if (s == 0 && send(fd, &mark, 1, MSG_OOB | MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        }
        shutdown(fd, SHUT_RDWR);
      }
    return;
  }
  tcp__conn_settle(t, SETTLE_MS);
  tcp__conn_close(t); /* pairs still not up: their peers learn from the others */
  for (int i = 0; i < comm->nranks; i++) {
    tcp_peer_t *p = &t->peer[i];
    if (p->fd[0] < 0) continue;
    if (p->conn == TCP_UP && (!p->tx_ctl_len || tcp__ctl_flush(t, p) > 0) &&
        tcp__tx_between_frames(t, i)) {
      tutti_msg_hdr_t h = {.magic = TUTTI_ABORT_MAGIC, .seq = (uint32_t)comm->failed};
      h.fp.root = comm->rank;
      h.fp.count = (uint64_t)(blamed + 1); /* any rank, unlike the urgent byte's six bits */
      struct iovec v = {&h, sizeof h};
      (void)tcp__stream_send(t, p, &v, 1); /* best effort */
    }
    /* Best effort too: with the send buffer full it is lost; the peer blames by elimination. */
    if (send(p->fd[0], &mark, 1, MSG_OOB | MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
    }
    for (int s = 0; s < t->nsocks; s++)
      if (p->fd[s] >= 0) shutdown(p->fd[s], SHUT_RDWR);
  }
}

/*
 * Bytes of fd's stream the peer has not acknowledged yet (sent or still queued), 0 on error.
 * A socket the peer reset (it had closed already, and our goodbye or FIN reached a closed
 * socket) keeps its stale count forever, so a closed socket counts as acknowledged.
 */
static int unacked(int fd) {
  struct tcp_info ti;
  socklen_t len = sizeof ti;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 && ti.tcpi_state == TCP_CLOSE)
    return 0;
  int n = 0;
  return ioctl(fd, SIOCOUTQ, &n) == 0 ? n : 0;
}

/*
 * A clean destroy's last bytes may still sit in the kernel's send queue (a slow or shaped
 * link), and a socket closed while bytes it received are unread (a late probe from a peer
 * still waiting for those very bytes) is reset, which drops that queue: the peer, still in
 * the last call, then fails with "connection reset". So first the write sides are shut down
 * (the queue goes out, then FIN) and, reading and discarding what arrives, this waits until
 * every peer has acknowledged everything, at most while the queues keep shrinking, 2 s
 * without progress, or TUTTI_TIMEOUT in all.
 */
static void flush_before_close(tcp_transport_t *t) {
  struct tutti_comm *comm = t->base.comm;
  int n = comm->nranks * TCP_MAX_SOCKS, left = 0;
  for (int i = 0; i < comm->nranks; i++)
    for (int s = 0; s < TCP_MAX_SOCKS; s++)
      if (t->peer[i].fd[s] >= 0) {
        shutdown(t->peer[i].fd[s], SHUT_WR);
        left += unacked(t->peer[i].fd[s]) > 0;
      }
  int64_t start = tutti__now_ns(), progress = start;
  int64_t limit = start + (int64_t)(comm->cfg.timeout_s * 1e9);
  long last = -1;
  while (left) {
    int64_t now = tutti__now_ns();
    if (now >= limit || now - progress > 2000000000LL) return;
    long total = 0;
    left = 0;
    for (int k = 0; k < n; k++) {
      int fd = t->peer[k / TCP_MAX_SOCKS].fd[k % TCP_MAX_SOCKS];
      if (fd < 0) continue;
      char sink[4096];
      while (recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
      }
      int q = unacked(fd);
      total += q;
      left += q > 0;
    }
    if (last < 0 || total < last) progress = now;
    last = total;
    if (left) {
      struct timespec nap = {0, 1000000};
      nanosleep(&nap, NULL);
    }
  }
}

static void tcp_destroy(tutti_transport_t *tp) {
  tcp_transport_t *t = (tcp_transport_t *)tp;
  /* A clean goodbye, so a peer still running does not take this close for a death. After a
   * failure the sockets are shut down and the send fails, harmlessly. */
  unsigned char bye = MARK_LEFT;
  if (t->peer) tcp__conn_close(t);
  for (int i = 0; t->peer && i < t->base.comm->nranks; i++) {
    tcp_peer_t *p = &t->peer[i];
    if (p->fd[0] >= 0 && t->base.comm->failed == TUTTI_SUCCESS &&
        send(p->fd[0], &bye, 1, MSG_OOB | MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
    }
  }
  if (t->peer && t->base.comm->failed == TUTTI_SUCCESS) flush_before_close(t);
  for (int i = 0; t->peer && i < t->base.comm->nranks; i++)
    for (int s = 0; s < TCP_MAX_SOCKS; s++)
      if (t->peer[i].fd[s] >= 0) close(t->peer[i].fd[s]);
  if (t->wake_fd >= 0) close(t->wake_fd);
  free(t->peer);
  free(t->pfd);
  free(t->pfd_peer);
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
    .release_listener = tcp__conn_release_listener,
};

tutti_result_t tutti__tcp_create(struct tutti_comm *comm, int listen_fd, tutti_transport_t **out) {
  tutti_result_t res = TUTTI_SUCCESS;
  tcp_transport_t *t = calloc(1, sizeof *t);
  if (!t) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory creating tcp transport");
  t->base.ops = &tcp_ops;
  t->base.comm = comm;
  /* A configuration made without the table (none today) gets one socket. */
  t->nsocks = comm->cfg.nsocks >= 1 && comm->cfg.nsocks <= TCP_MAX_SOCKS ? comm->cfg.nsocks : 1;
  t->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  t->peer = calloc((size_t)comm->nranks, sizeof *t->peer);
  t->listen_fd = listen_fd;
  t->pfd = malloc(TCP_PFD(comm->nranks) * sizeof *t->pfd);
  t->pfd_peer = malloc(TCP_PFD(comm->nranks) * sizeof *t->pfd_peer);
  if (!t->peer || !t->pfd || !t->pfd_peer || t->wake_fd < 0) {
    res = tutti__error(comm, TUTTI_ERR_SYSTEM, "cannot create tcp transport state");
    goto out;
  }
  for (int r = 0; r < comm->nranks; r++) {
    for (int s = 0; s < TCP_MAX_SOCKS; s++) t->peer[r].fd[s] = -1;
    t->peer[r].out_fd = -1;
    if (comm->peers[r].kind == TUTTI_TRANSPORT_TCP) comm->peers[r].tp = &t->base;
  }
  tcp__raise_fd_limit(comm);
  /* Connections are made on first use (tcp_conn.c), accepted from block()'s poll. */
  int fl = listen_fd >= 0 ? fcntl(listen_fd, F_GETFL) : -1;
  if (fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) != 0)
    res = tutti__error(comm, TUTTI_ERR_SYSTEM, "cannot make the data listener non-blocking");
out:
  if (res != TUTTI_SUCCESS) {
    tcp_destroy(&t->base);
    return res;
  }
  *out = &t->base;
  return TUTTI_SUCCESS;
}
