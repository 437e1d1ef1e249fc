/*
 * The byte stream of one peer pair, its frame parser, and call probes.
 *
 * Striping (TUTTI_NSOCKS): with k sockets per pair, stream offset o travels on socket
 * (o / TCP_STRIPE) mod k. Each side keeps its own offset, so sender and receiver agree on
 * every byte's socket without extra framing; with k = 1 it is one sendmsg/recv as before.
 *
 * Frames: the receive side stages each header before handing it over, so it can take out
 * the frames only this transport speaks (probes) and note abort frames; bodies go straight
 * into the caller's buffer. progress.c and p2p_match.c read exactly a header, then exactly
 * its body, so staging costs a 32-byte copy per message and no extra system call.
 *
 * Probes (issue 11 item 6): ranks that name different roots may each wait for a message that
 * no rank sends, and no header ever shows them the disagreement. Once a call has waited
 * TCP_PROBE_AFTER_NS, block() sends each peer it waits on a probe frame, between frames of
 * the stream, carrying this call's (seq, fingerprint), and keeps reading probes from the
 * other connected peers too. A peer in the same call with another fingerprint fails with
 * the field named (both roots), and the failure reaches every rank as failures do. Nothing
 * happens on the hot path: a call that finishes within TCP_PROBE_AFTER_NS sends none.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "transport/header_check.h"
#include "transport/tcp_int.h"

/* How long a call waits before it probes, and the growing gap between probe rounds. */
#define TCP_PROBE_AFTER_NS 200000000LL

int tcp__rx_fd(const tcp_transport_t *t, const tcp_peer_t *p) {
  return t->nsocks == 1 ? p->fd[0] : p->fd[(p->rx_off / TCP_STRIPE) % (uint64_t)t->nsocks];
}

int tcp__tx_fd(const tcp_transport_t *t, const tcp_peer_t *p) {
  return t->nsocks == 1 ? p->fd[0] : p->fd[(p->tx_off / TCP_STRIPE) % (uint64_t)t->nsocks];
}

ssize_t tcp__stream_send(tcp_transport_t *t, tcp_peer_t *p, const struct iovec *iov, int cnt) {
  if (t->nsocks == 1) {
    struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)cnt};
    ssize_t n = sendmsg(p->fd[0], &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) p->tx_off += (uint64_t)n;
    return n;
  }
  /* One stripe at a time, each on its socket, until a socket is full or iov is sent. */
  size_t total = 0;
  int i = 0;
  size_t skip = 0; /* bytes of iov[i] already sent */
  while (i < cnt) {
    size_t room = (size_t)(TCP_STRIPE - p->tx_off % TCP_STRIPE);
    struct iovec v[4];
    int nv = 0;
    size_t want = 0;
    for (int j = i; j < cnt && nv < 4 && want < room; j++) {
      size_t off = j == i ? skip : 0, len = iov[j].iov_len - off;
      if (len > room - want) len = room - want;
      if (!len) continue;
      v[nv].iov_base = (char *)iov[j].iov_base + off;
      v[nv++].iov_len = len;
      want += len;
    }
    if (!want) break;
    struct msghdr m = {.msg_iov = v, .msg_iovlen = (size_t)nv};
    ssize_t n = sendmsg(tcp__tx_fd(t, p), &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) return total ? (ssize_t)total : -1;
    p->tx_off += (uint64_t)n;
    total += (size_t)n;
    for (size_t adv = (size_t)n; adv;) { /* advance over iov */
      size_t here = iov[i].iov_len - skip;
      if (adv < here) {
        skip += adv;
        adv = 0;
      } else {
        adv -= here;
        i++;
        skip = 0;
      }
    }
    while (i < cnt && iov[i].iov_len == skip) { /* empty entries */
      i++;
      skip = 0;
    }
    if ((size_t)n < want) break; /* this socket is full for now */
  }
  return (ssize_t)total;
}

ssize_t tcp__stream_recv(tcp_transport_t *t, tcp_peer_t *p, void *buf, size_t len) {
  if (t->nsocks == 1) {
    ssize_t n = recv(p->fd[0], buf, len, MSG_DONTWAIT);
    if (n > 0) p->rx_off += (uint64_t)n;
    return n;
  }
  size_t total = 0;
  while (total < len) {
    size_t room = (size_t)(TCP_STRIPE - p->rx_off % TCP_STRIPE), want = len - total;
    if (want > room) want = room;
    ssize_t n = recv(tcp__rx_fd(t, p), (char *)buf + total, want, MSG_DONTWAIT);
    if (n <= 0) return total ? (ssize_t)total : n;
    p->rx_off += (uint64_t)n;
    total += (size_t)n;
    if ((size_t)n < want) break;
  }
  return (ssize_t)total;
}

int tcp__ctl_flush(tcp_transport_t *t, tcp_peer_t *p) {
  if (p->tx_ctl_pos == p->tx_ctl_len) return 1;
  struct iovec v = {(char *)&p->tx_ctl + p->tx_ctl_pos, p->tx_ctl_len - p->tx_ctl_pos};
  ssize_t n = tcp__stream_send(t, p, &v, 1);
  if (n < 0) return errno == EAGAIN || errno == EINTR ? 0 : -1;
  p->tx_ctl_pos += (size_t)n;
  if (p->tx_ctl_pos < p->tx_ctl_len) return 0;
  p->tx_ctl_pos = p->tx_ctl_len = 0;
  t->ctl_pending--;
  return 1;
}

int tcp__tx_between_frames(const tcp_transport_t *t, int peer) {
  const tutti_xfer_t *head = t->base.comm->peers[peer].sendq_head;
  const tcp_peer_t *p = &t->peer[peer];
  return (!head || head->done == 0) && p->tx_ctl_pos == p->tx_ctl_len;
}

/* A probe from peer: a conflict if it is in this rank's current call with another call. */
static tutti_result_t probe_heard(tcp_transport_t *t, int peer, const tutti_msg_hdr_t *h) {
  struct tutti_comm *comm = t->base.comm;
  if (!comm->call_seq || h->seq != comm->call_seq || !memcmp(&h->fp, &comm->fp, sizeof h->fp))
    return TUTTI_SUCCESS;
  tutti_msg_hdr_t want = {TUTTI_MSG_MAGIC, comm->call_seq, 0, comm->fp};
  tutti_msg_hdr_t got = {TUTTI_MSG_MAGIC, h->seq, 0, h->fp};
  char who[128], msg[512];
  tutti__peer_desc(comm, peer, who, sizeof who);
  if (tutti__hdr_check(&want, &got, sizeof got, who, msg, sizeof msg) == TUTTI_SUCCESS)
    return TUTTI_SUCCESS;
  TRACE("net", comm->rank, "a probe of %s shows another call", who);
  return tutti__error(comm, TUTTI_ERR_INVALID_USAGE, "%s", msg);
}

/* Reads the rest of peer's next header into the stage; consumes probes. *ready: a header
 * other than a probe is staged. A closed or failed connection returns n <= 0 in *rc. */
static tutti_result_t stage_header(tcp_transport_t *t, int peer, int *ready, ssize_t *rc) {
  tcp_peer_t *p = &t->peer[peer];
  *ready = 0;
  *rc = 1;
  while (p->rx_hpos < TCP_HDR_BYTES) {
    ssize_t n = tcp__stream_recv(t, p, (char *)&p->rx_hdr + p->rx_hpos,
                                 TCP_HDR_BYTES - p->rx_hpos);
    if (n <= 0) {
      *rc = n;
      return TUTTI_SUCCESS;
    }
    p->rx_hpos += (size_t)n;
    if (p->rx_hpos < TCP_HDR_BYTES) {
      tcp__keep_mark(t, peer);
      return TUTTI_SUCCESS;
    }
    if (p->rx_hdr.magic == TCP_PROBE_MAGIC) {
      p->rx_hpos = 0;
      TRY(probe_heard(t, peer, &p->rx_hdr));
      continue;
    }
    if (p->rx_hdr.magic == TUTTI_ABORT_MAGIC) {
      /* Kept for the blame: the full culprit, which the urgent byte cannot always carry. */
      p->abort_code = (int)p->rx_hdr.seq;
      uint64_t c = p->rx_hdr.fp.count;
      p->abort_culprit = c <= (uint64_t)t->base.comm->nranks ? (int)c : 0;
    }
  }
  *ready = 1;
  return TUTTI_SUCCESS;
}

tutti_result_t tcp__frame_recv(tcp_transport_t *t, int peer, void *buf, size_t len,
                               size_t *moved) {
  tcp_peer_t *p = &t->peer[peer];
  *moved = 0;
  if (len == 0) return TUTTI_SUCCESS;
  ssize_t n;
  if (p->rx_left == 0) {
    int ready;
    TRY(stage_header(t, peer, &ready, &n));
    if (!ready) goto short_read;
    size_t give = TCP_HDR_BYTES - p->rx_hout;
    if (give > len) give = len;
    memcpy(buf, (char *)&p->rx_hdr + p->rx_hout, give);
    p->rx_hout += give;
    *moved = give;
    if (p->rx_hout == TCP_HDR_BYTES) {
      p->rx_left = p->rx_hdr.magic == TUTTI_MSG_MAGIC ? p->rx_hdr.len : 0;
      p->rx_hpos = p->rx_hout = 0;
    }
    return TUTTI_SUCCESS;
  }
  size_t want = len < p->rx_left ? len : (size_t)p->rx_left;
  n = tcp__stream_recv(t, p, buf, want);
  if (n > 0) {
    p->rx_left -= (uint64_t)n;
    *moved = (size_t)n;
    if ((size_t)n < want) tcp__keep_mark(t, peer);
    return TUTTI_SUCCESS;
  }
short_read:
  if (n > 0) return TUTTI_SUCCESS;
  if (n == 0) return tcp__peer_error(t, peer, "connection closed by", 0);
  if (errno == EAGAIN || errno == EINTR) return TUTTI_SUCCESS;
  return tcp__peer_error(t, peer, "lost the connection to", errno);
}

/* Sends peer a probe of the current call if the stream to it is between frames. */
static void probe_send(tcp_transport_t *t, int peer) {
  struct tutti_comm *comm = t->base.comm;
  tcp_peer_t *p = &t->peer[peer];
  if (p->conn != TCP_UP || !tcp__tx_between_frames(t, peer)) return;
  p->tx_ctl = (tutti_msg_hdr_t){TCP_PROBE_MAGIC, comm->call_seq, 0, comm->fp};
  p->tx_ctl_pos = 0;
  p->tx_ctl_len = TCP_HDR_BYTES;
  t->ctl_pending++;
  (void)tcp__ctl_flush(t, p); /* the rest, if any, goes before the next data */
  TRACE("net", comm->rank, "call #%u waits: probed rank %d", comm->call_seq, peer);
}

int tcp__probe_prepare(tcp_transport_t *t, const tutti_want_t *wants, int nwants, int at) {
  struct tutti_comm *comm = t->base.comm;
  if (t->ctl_pending)
    for (int r = 0; r < comm->nranks; r++)
      if (t->peer[r].tx_ctl_len) (void)tcp__ctl_flush(t, &t->peer[r]);
  if (!comm->call_seq) return at;
  int64_t now = tutti__coarse_ns();
  if (now - comm->call_start_ns < TCP_PROBE_AFTER_NS) return at;
  if (t->probe_seq != comm->call_seq) {
    t->probe_seq = comm->call_seq;
    t->probe_at = now;
    t->probe_gap = TCP_PROBE_AFTER_NS;
  }
  if (now >= t->probe_at) {
    for (int i = 0; i < nwants; i++)
      if (wants[i].what & TUTTI_WANT_RECV) probe_send(t, wants[i].peer);
    t->probe_at = now + t->probe_gap;
    if (t->probe_gap < 4 * 1000000000LL) t->probe_gap *= 2;
  }
  /* Peers this rank does not read now may hold a probe at the head of their stream. */
  for (int r = 0; r < comm->nranks; r++) {
    tcp_peer_t *p = &t->peer[r];
    if (r == comm->rank || p->conn != TCP_UP || p->rx_quiet || p->rx_left || p->rx_hout ||
        p->rx_hpos == TCP_HDR_BYTES)
      continue;
    int waited = 0;
    for (int i = 0; i < nwants && !waited; i++)
      waited = wants[i].peer == r && (wants[i].what & TUTTI_WANT_RECV);
    if (waited) continue;
    t->pfd[at].fd = tcp__rx_fd(t, p);
    t->pfd[at].events = POLLIN;
    t->pfd[at].revents = 0;
    t->pfd_peer[at++] = r;
  }
  return at;
}

tutti_result_t tcp__probe_read(tcp_transport_t *t, int from, int to) {
  for (int i = from; i < to; i++) {
    if (!(t->pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    int peer = t->pfd_peer[i], ready;
    ssize_t rc;
    TRY(stage_header(t, peer, &ready, &rc));
    /* A closed connection surfaces when this rank next reads from it; until then it is not
     * polled here again. */
    if (rc == 0 || (rc < 0 && errno != EAGAIN && errno != EINTR)) t->peer[peer].rx_quiet = 1;
  }
  return TUTTI_SUCCESS;
}
