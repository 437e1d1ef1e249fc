/*
 * Why a TCP connection closed, and which rank to blame.
 *
 * A rank that gives up sends each peer, where its stream is between frames, an abort frame
 * (result code and the full rank its failure follows from), then one urgent (out-of-band)
 * byte saying what kind of failure it was, and shuts down; a clean destroy sends an urgent
 * byte too. The urgent byte is outside the stream, so it arrives even when the stream is in
 * the middle of a frame; it names the blamed rank only for ranks 0-61, so the abort frame is
 * what names any rank. A peer that closes with neither died. So when a failure cascades down
 * a ring, every rank can still name the rank that died or stopped answering, not just the
 * neighbour that gave up.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "transport/tcp_int.h"

/* How long a rank that cannot tell who failed first waits for a dying peer's connections. */
#define FIND_DEAD_MS 100

/* The urgent byte the peer sent before closing, or 0 (none, or not arrived). */
static unsigned peer_mark(int fd) {
  unsigned char c;
  if (recv(fd, &c, 1, MSG_OOB | MSG_PEEK | MSG_DONTWAIT) == 1) return c;
  return 0;
}

void tcp__keep_mark(tcp_transport_t *t, int peer) {
  unsigned m = peer_mark(t->peer[peer].fd[0]);
  if (m) t->peer[peer].mark = (unsigned char)m;
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
      if (r == except || t->peer[r].fd[0] < 0 || t->peer[r].mark) continue;
      t->pfd[n].fd = t->peer[r].fd[0];
      t->pfd[n].events = POLLRDHUP;
      t->pfd_peer[n] = r;
      t->pfd[n++].revents = 0;
    }
    int64_t left = (until - tutti__now_ns()) / 1000000;
    if (poll(t->pfd, n, left > 0 ? (int)left : 0) <= 0) return -1;
    for (nfds_t i = 0; i < n; i++) {
      if (!(t->pfd[i].revents & (POLLRDHUP | POLLHUP | POLLERR))) continue;
      int r = t->pfd_peer[i];
      tcp__keep_mark(t, r);
      if (!t->peer[r].mark) return r;
    }
  }
}

/* Reads the rest of an abort frame waiting at the head of peer's stream, if one is: it names
 * the blamed rank in full. Never blocks; a stream in the middle of a frame is left alone. */
static void read_abort(tcp_transport_t *t, int peer) {
  tcp_peer_t *p = &t->peer[peer];
  if (p->abort_code || p->rx_left || p->rx_hout) return;
  while (p->rx_hpos < TCP_HDR_BYTES) {
    ssize_t n = tcp__stream_recv(t, p, (char *)&p->rx_hdr + p->rx_hpos,
                                 TCP_HDR_BYTES - p->rx_hpos);
    if (n <= 0) return;
    p->rx_hpos += (size_t)n;
  }
  if (p->rx_hdr.magic != TUTTI_ABORT_MAGIC) return;
  p->abort_code = (int)p->rx_hdr.seq;
  uint64_t c = p->rx_hdr.fp.count;
  p->abort_culprit = c <= (uint64_t)t->base.comm->nranks ? (int)c : 0;
}

/* A peer other than `except` that reported the ranks disagree on the call (its urgent byte or
 * abort frame), or -1. Such a report is the first cause of every other closed connection: the
 * peers it reached gave up and closed the pairs still being made, whose other ends hear
 * nothing else. */
static int usage_peer(tcp_transport_t *t, int except) {
  for (int r = 0; r < t->base.comm->nranks; r++) {
    if (r == except || t->peer[r].fd[0] < 0) continue;
    tcp__keep_mark(t, r);
    read_abort(t, r);
    if (t->peer[r].mark == (MARK_FAILED | MARK_USAGE) ||
        t->peer[r].abort_code == TUTTI_ERR_INVALID_USAGE)
      return r;
  }
  return -1;
}

static tutti_result_t disagreed(struct tutti_comm *comm, int peer) {
  char who[128];
  return tutti__error(comm, TUTTI_ERR_INVALID_USAGE, "%s gave up: the ranks disagree on the "
                      "call (see that rank's error)", tutti__peer_desc(comm, peer, who, sizeof who));
}

tutti_result_t tcp__peer_error(tcp_transport_t *t, int peer, const char *what, int e) {
  char who[128], root[128];
  struct tutti_comm *comm = t->base.comm;
  tutti__peer_desc(comm, peer, who, sizeof who);
  if (comm->failed != TUTTI_SUCCESS) /* an echo of this rank's own failure */
    return tutti__error(comm, TUTTI_ERR_REMOTE, "%s %s%s%s", what, who, e ? ": " : "",
                        e ? strerror(e) : "");
  tcp__keep_mark(t, peer);
  read_abort(t, peer);
  tcp_peer_t *p = &t->peer[peer];
  unsigned mark = p->mark;
  int usage = mark == (MARK_FAILED | MARK_USAGE) || p->abort_code == TUTTI_ERR_INVALID_USAGE
                  ? peer
                  : -1;
  /* Closed without a word (no urgent byte, no abort frame): another peer may have said why. */
  if (usage < 0 && !mark && !p->abort_code) usage = usage_peer(t, peer);
  if (usage >= 0) return disagreed(comm, usage);
  /* The abort frame names any rank; the urgent byte only the first 62. */
  int blamed = p->abort_culprit ? p->abort_culprit - 1 : (int)(mark & ~MARK_KIND) - 1;
  if (blamed == comm->rank || blamed >= comm->nranks) blamed = -1;
  int timed_out = p->abort_code ? p->abort_code == TUTTI_ERR_TIMEOUT
                                : (mark & MARK_KIND) == MARK_TIMEOUT;
  if (timed_out && blamed >= 0) {
    comm->culprit = blamed + 1;
    return tutti__error(comm, TUTTI_ERR_TIMEOUT, "%s timed out waiting for %s and abandoned "
                        "the call", who, tutti__peer_desc(comm, blamed, root, sizeof root));
  }
  if ((mark & MARK_KIND) == MARK_LEFT)
    return tutti__error(comm, TUTTI_ERR_REMOTE, "%s destroyed its communicator during the "
                        "call", who);
  if (blamed < 0) blamed = find_dead(t, peer, FIND_DEAD_MS);
  if (blamed < 0 && !mark && !p->abort_code && (usage = usage_peer(t, peer)) >= 0)
    return disagreed(comm, usage);
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
  if (mark || p->abort_code)
    return tutti__error(comm, TUTTI_ERR_REMOTE, "%s failed and abandoned the call", who);
  return tutti__error(comm, TUTTI_ERR_REMOTE, "%s died during the call (%s it%s%s)", who, what,
                      e ? ": " : "", e ? strerror(e) : "");
}
