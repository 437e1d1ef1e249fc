/*
 * The TCP transport's private state, shared by its files:
 *   tcp.c         the transport's operations (send, recv, block, fail, destroy), the constructor
 *   tcp_conn.c    connections made on first use and their authenticated handshake
 *   tcp_stream.c  the byte stream of a peer pair over one or more sockets (TUTTI_NSOCKS), the
 *                 receive-side frame parser, and call probes (issue 11 item 6)
 *   tcp_blame.c   why a connection closed and which rank to blame for it
 */
#ifndef TUTTI_TCP_INT_H
#define TUTTI_TCP_INT_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "transport/transport.h"

/* At most this many sockets per peer pair (TUTTI_NSOCKS). */
#define TCP_MAX_SOCKS 16
/* Bytes the stream puts on one socket before moving to the next (with TUTTI_NSOCKS > 1):
 * offset o of the stream travels on socket (o / TCP_STRIPE) mod nsocks, so both sides agree
 * with no extra framing. */
#define TCP_STRIPE ((uint64_t)128 << 10)
#define TCP_HDR_BYTES sizeof(tutti_msg_hdr_t)
/* A header-only frame a rank that has waited a while in a call sends the peers it waits on:
 * seq and fp are its call's. A peer in the same call with another fingerprint fails with the
 * field named (tcp_stream.c). Consumed by the frame parser; progress.c never sees one. */
#define TCP_PROBE_MAGIC 0x54545450u /* "PTTT" */

/* A pair's connection state (tcp_conn.c). */
enum {
  TCP_DOWN = 0, /* no socket yet: the first use starts one */
  TCP_OUT,      /* this rank is connecting (out_fd, socket out_sock of the pair) */
  TCP_WAIT_IN,  /* this rank's attempt lost the tie-break: the peer's connection is coming */
  TCP_IN,       /* the peer's sockets are arriving: some are up */
  TCP_UP        /* every socket of the pair is up */
};

typedef struct tcp_peer {
  int fd[TCP_MAX_SOCKS]; /* the pair's sockets; fd[0] carries the urgent byte; -1: none */
  int conn;              /* TCP_DOWN... */
  /* This rank's connection attempt: its socket, which of the pair's sockets it becomes, the
   * handshake step, the bytes of the answer read so far, and the nonces. */
  int out_fd, out_sock, out_step;
  size_t out_pos;
  unsigned char out_buf[64];
  unsigned char out_na[32], out_nc[32];
  unsigned char mark;    /* the urgent byte the peer sent, once seen; 0 before */
  /* Receive side: the frame parser. A frame is a header and hdr.len body bytes. */
  uint64_t rx_off;       /* stream bytes received so far (picks the socket) */
  uint64_t rx_left;      /* body bytes of the current frame still to come; 0: a header next */
  tutti_msg_hdr_t rx_hdr; /* the next header, staged here before the caller gets it */
  size_t rx_hpos;        /* bytes of rx_hdr received */
  size_t rx_hout;        /* bytes of rx_hdr handed to the caller */
  int rx_quiet;          /* the connection ended: no longer polled for probes */
  int abort_code;        /* an abort frame the peer sent: its result code, or 0 */
  int abort_culprit;     /* and 1 + the rank it blamed, or 0 */
  /* Send side. */
  uint64_t tx_off;       /* stream bytes sent so far */
  tutti_msg_hdr_t tx_ctl; /* a control frame (probe) partly sent, to finish before data */
  size_t tx_ctl_pos, tx_ctl_len;
} tcp_peer_t;

/* A connection accepted on the data listener whose handshake is under way. */
typedef struct tcp_pending {
  int fd;
  int step;          /* 0: waiting for the knock, 1: challenged, waiting for the hello */
  size_t pos;        /* bytes of the current message read */
  unsigned char buf[128];
  unsigned char na[32];
  int64_t deadline;  /* a silent or slow stranger is dropped then */
} tcp_pending_t;
#define TCP_MAX_PENDING 64

typedef struct tcp_transport {
  tutti_transport_t base;
  int listen_fd;    /* the data listener (comm->listen_fd, not owned) */
  tcp_pending_t pend[TCP_MAX_PENDING];
  int npend;
  int nconnecting;  /* pairs not up that this rank has started or waits on */
  tcp_peer_t *peer; /* per global rank; fd[0] == -1 for peers on other transports */
  int nsocks;       /* sockets per pair (TUTTI_NSOCKS) */
  int wake_fd;      /* eventfd that tutti_comm_abort writes */
  struct pollfd *pfd; /* TCP_PFD(nranks) entries */
  int *pfd_peer;    /* the peer of each pfd entry */
  /* Probes of the current call: which call, when the next round goes, and the gap after it. */
  uint32_t probe_seq;
  int64_t probe_at, probe_gap;
  int ctl_pending;  /* peers with a control frame partly sent */
} tcp_transport_t;

/* Poll entries block() may need: two per peer waited on, one per peer probed, one per
 * connection attempt, the listener, the pending connections and the eventfd. */
#define TCP_PFD(n) (4 * (size_t)(n) + TCP_MAX_PENDING + 2)

/* ---- tcp_stream.c ---- */

/* Sends a prefix of iov on peer's stream without blocking: the bytes sent, or -1 with errno
 * (EAGAIN: no room). Never sends past a frame boundary on its own; that is the caller's. */
ssize_t tcp__stream_send(tcp_transport_t *t, tcp_peer_t *p, const struct iovec *iov, int cnt);
/* Receives up to len bytes of peer's stream without blocking: as recv(2). */
ssize_t tcp__stream_recv(tcp_transport_t *t, tcp_peer_t *p, void *buf, size_t len);
/* The socket the next received (or sent) stream byte travels on. */
int tcp__rx_fd(const tcp_transport_t *t, const tcp_peer_t *p);
int tcp__tx_fd(const tcp_transport_t *t, const tcp_peer_t *p);
/* Receives up to len bytes of the frames from peer into buf (the transport's recv): probes
 * are consumed here, everything else is handed over byte for byte. */
tutti_result_t tcp__frame_recv(tcp_transport_t *t, int peer, void *buf, size_t len,
                               size_t *moved);
/* Finishes a control frame partly sent to peer: 1 when none is left, 0 if some still is,
 * -1 with errno on a socket error. */
int tcp__ctl_flush(tcp_transport_t *t, tcp_peer_t *p);
/* 1 when this rank's stream to peer is between frames (a control frame may go now). */
int tcp__tx_between_frames(const tcp_transport_t *t, int peer);
/* Called from block(): once the current call has waited a while, sends a probe to each peer
 * waited on (again at growing intervals) and adds to pfd, from index at, the other
 * connected peers whose next frame may be a probe. Returns the new count of pfd entries. */
int tcp__probe_prepare(tcp_transport_t *t, const tutti_want_t *wants, int nwants, int at);
/* After poll: reads a probe from each extra peer (entries from..to of pfd) that has data. A
 * probe from a rank in this call with another fingerprint becomes this rank's error. */
tutti_result_t tcp__probe_read(tcp_transport_t *t, int from, int to);

/* ---- tcp_blame.c ---- */

/* The urgent byte: the kind in the top two bits, 1 + the blamed rank (0: none, or a rank
 * above 61: the abort frame names every rank) in the low six; see MARK_USAGE. */
#define MARK_FAILED 0x40u  /* it failed: a peer died or failed, or it was aborted */
#define MARK_TIMEOUT 0x80u /* it timed out waiting for the blamed rank */
#define MARK_LEFT 0xC0u    /* it destroyed its communicator cleanly */
#define MARK_KIND 0xC0u
#define MARK_RANKS 62 /* ranks 0..61 can be blamed; 63 with MARK_FAILED: */
#define MARK_USAGE 63 /* the ranks disagree on the call (TUTTI_ERR_INVALID_USAGE) */

/* Keeps the urgent byte peer sent, if it is there now: the kernel forgets it once a read
 * passes it, and a read stops short just before it. */
void tcp__keep_mark(tcp_transport_t *t, int peer);
/* The failure of peer's connection as this rank's error, blamed on the rank that caused it:
 * the one the peer's abort frame or urgent byte names, else one whose connection closed
 * without notice, else peer itself. what: "connection closed by"...; e: errno or 0. */
tutti_result_t tcp__peer_error(tcp_transport_t *t, int peer, const char *what, int e);

/* ---- tcp_conn.c ---- */

/* Makes peer's connection if it is not up: starts this rank's attempt, or moves the
 * handshakes under way on as far as they go without blocking. TUTTI_SUCCESS with the pair
 * possibly still not up; an error when the peer cannot be reached (refused: it died). */
tutti_result_t tcp__ensure(tcp_transport_t *t, int peer);
/* Adds, from index at, the listener, the pending connections and this rank's attempts to
 * pfd; returns the new count. */
int tcp__conn_pollfds(tcp_transport_t *t, int at);
/* After poll: accepts what waits on the listener and moves every handshake on. */
tutti_result_t tcp__conn_progress(tcp_transport_t *t);
/* At failure: moves the handshakes peers started with this rank on, for up to wait_ms, so
 * that those peers get the abort frame and urgent byte too instead of a dropped handshake
 * (a peer that has no other connection would otherwise blame this rank alone). */
void tcp__conn_settle(tcp_transport_t *t, int wait_ms);
/* Closes the connections still being made (at failure and destroy). */
void tcp__conn_close(tcp_transport_t *t);
/* The transport op release_listener (transport.h). */
void tcp__conn_release_listener(tutti_transport_t *tp);
/* Raises the soft limit on open files to the hard one (a socket per peer and stream). */
void tcp__raise_fd_limit(struct tutti_comm *comm);

#endif
