/*
 * TCP connections, made on first use: a pair is connected when one of its ranks first sends
 * to, receives from or waits on the other, so a ring job opens two connections per rank,
 * not n - 1. Nothing here blocks: every step of every handshake moves on from block()'s poll
 * (the data listener is always polled there) or from the send or recv that needs the pair.
 *
 * Handshake (fixed-size messages, core/auth.h): the connecting rank knocks (8 bytes: the
 * accepting side speaks only to a connection that asks, so a shrink probe that reaches a
 * listener still in use gets no foreign challenge); the accepting rank sends a challenge; the
 * connecting rank answers with a hello proving the job secret over its identity (rank, job,
 * which of the pair's TUTTI_NSOCKS sockets, how many); the accepting rank answers with its own
 * proof over its identity, or closes the connection.
 *
 * Both ranks of a pair may start at once. Exactly one connection per socket survives: the
 * higher rank's. An accepting rank that has its own attempt under way refuses a lower rank's
 * hello (that rank then waits for the higher one's connection) and gives up its own attempt
 * for a higher rank's hello. All of a pair's sockets come from the same side.
 *
 * A peer whose listener refuses the connection has died (or destroyed its communicator): the
 * error names it as a death does.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/auth.h"
#include "core/sock.h"
#include "transport/tcp_int.h"

#define TCP_HELLO_MAGIC 0x74747463u     /* "tttc" */
#define TCP_CHALLENGE_MAGIC 0x74747461u /* "ttta" */
#define TCP_KNOCK_MAGIC 0x7474746bu     /* "tttk" */
/* How long an accepted connection may take to knock and answer the challenge; a silent
 * stranger holds a pending slot this long at most (it never delays the ranks). */
#define TCP_HELLO_NS 5000000000LL

typedef struct tcp_challenge {
  uint32_t magic;
  uint32_t pad;
  uint8_t na[TUTTI_AUTH_NONCE_BYTES];
} tcp_challenge_t;

/* Who a side of the connection is, and which of the pair's sockets this is (of how many);
 * each side's proof covers its own. */
typedef struct tcp_ident {
  uint32_t magic;
  int32_t rank;
  uint64_t job_id;
  int32_t sock;
  int32_t nsocks;
} tcp_ident_t;

typedef struct tcp_hello {
  tcp_ident_t id;
  uint8_t nc[TUTTI_AUTH_NONCE_BYTES];
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES];
} tcp_hello_t;

void tcp__raise_fd_limit(struct tutti_comm *comm) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  rlim_t was = rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
    INFO("net", comm->rank, "raised the open-file limit from %llu to %llu",
         (unsigned long long)was, (unsigned long long)rl.rlim_max);
}


typedef struct tcp_knock {
  uint32_t magic;
  uint32_t pad;
} tcp_knock_t;

static void close_out(tcp_transport_t *t, tcp_peer_t *p) {
  if (p->out_fd >= 0) close(p->out_fd);
  p->out_fd = -1;
  p->out_step = 0;
  p->out_pos = 0;
  (void)t;
}

/* Starts a non-blocking connection for socket s of the pair to peer's data listener. */
static tutti_result_t start_out(tcp_transport_t *t, int peer, int s) {
  struct tutti_comm *comm = t->base.comm;
  tcp_peer_t *p = &t->peer[peer];
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return tutti__error(comm, TUTTI_ERR_SYSTEM, "cannot open a socket for rank %d: %s", peer,
                        strerror(errno));
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = comm->peers[peer].port,
                           .sin_addr.s_addr = comm->peers[peer].ip};
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS) {
    int e = errno;
    close(fd);
    return tcp__peer_error(t, peer, "could not connect to", e);
  }
  p->out_fd = fd;
  p->out_sock = s;
  p->out_step = 0;
  p->out_pos = 0;
  p->conn = TCP_OUT;
  return TUTTI_SUCCESS;
}

/* Reads the rest of a len-byte message on fd into buf (*pos read so far): 1 complete, 0 not
 * yet, -1 closed or failed (errno set; 0 for an orderly close). */
static int read_msg(int fd, unsigned char *buf, size_t len, size_t *pos) {
  while (*pos < len) {
    ssize_t n = recv(fd, buf + *pos, len - *pos, MSG_DONTWAIT);
    if (n > 0) {
      *pos += (size_t)n;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (n == 0) errno = 0;
    return -1;
  }
  return 1;
}

/* Sends a whole small message on a fresh socket, whose send buffer always has room. */
static int send_msg(int fd, const void *buf, size_t len) {
  return send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)len ? 0 : -1;
}

/* Socket s of the pair with peer is up on fd. */
static void socket_up(tcp_transport_t *t, int peer, int s, int fd) {
  tcp_peer_t *p = &t->peer[peer];
  tutti__sock_nodelay_nonblock(fd);
  __atomic_store_n(&p->fd[s], fd, __ATOMIC_RELEASE); /* tcp_fail may read it from another thread */
  int n = 0;
  while (n < t->nsocks && p->fd[n] >= 0) n++;
  if (n == t->nsocks) {
    p->conn = TCP_UP;
    t->nconnecting--;
    TRACE("net", t->base.comm->rank, "connected to rank %d (%d socket%s)", peer, t->nsocks,
          t->nsocks > 1 ? "s" : "");
  }
}

/* Moves this rank's connection attempt to peer on by the steps that are ready. */
static tutti_result_t drive_out(tcp_transport_t *t, int peer) {
  struct tutti_comm *comm = t->base.comm;
  tcp_peer_t *p = &t->peer[peer];
  char who[128];
  int s = p->out_sock;
  if (p->out_step == 0) { /* the TCP connection */
    int e = 0;
    socklen_t el = sizeof e;
    if (getsockopt(p->out_fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0) e = errno;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = comm->peers[peer].port,
                             .sin_addr.s_addr = comm->peers[peer].ip};
    if (!e && connect(p->out_fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EISCONN) {
      if (errno == EALREADY || errno == EINPROGRESS || errno == EINTR) return TUTTI_SUCCESS;
      e = errno;
    }
    if (e) {
      close_out(t, p);
      p->conn = TCP_DOWN;
      t->nconnecting--;
    t->nconnecting--;
      return tcp__peer_error(t, peer, "could not connect to", e);
    }
    tcp_knock_t k = {TCP_KNOCK_MAGIC, 0};
    if (send_msg(p->out_fd, &k, sizeof k) != 0) goto closed;
    p->out_step = 1;
  }
  if (p->out_step == 1) { /* the challenge */
    int rc = read_msg(p->out_fd, p->out_buf, sizeof(tcp_challenge_t), &p->out_pos);
    if (rc < 0) goto closed;
    if (rc == 0) return TUTTI_SUCCESS;
    tcp_challenge_t ch;
    memcpy(&ch, p->out_buf, sizeof ch);
    if (ch.magic != TCP_CHALLENGE_MAGIC) {
      close_out(t, p);
      p->conn = TCP_DOWN;
      t->nconnecting--;
    t->nconnecting--;
      return tutti__error(comm, TUTTI_ERR_REMOTE, "the data listener of %s does not speak the "
                          "tutti handshake", tutti__peer_desc(comm, peer, who, sizeof who));
    }
    tcp_hello_t h = {{TCP_HELLO_MAGIC, comm->rank, comm->job_id, s, t->nsocks}, {0}, {0}};
    struct iovec part = {&h.id, sizeof h.id};
    if (tutti__auth_make_nonce(h.nc) != TUTTI_SUCCESS ||
        tutti__auth_proof(comm->secret, TUTTI_AUTH_CONNECTOR, ch.na, h.nc, &part, 1, h.proof) !=
            TUTTI_SUCCESS)
      return tutti__error(comm, TUTTI_ERR_INTERNAL, "cannot compute the proof of the job secret "
                          "for %s (libcrypto failed)", tutti__peer_desc(comm, peer, who, sizeof who));
    memcpy(p->out_na, ch.na, sizeof p->out_na);
    memcpy(p->out_nc, h.nc, sizeof p->out_nc);
    if (send_msg(p->out_fd, &h, sizeof h) != 0) goto closed;
    p->out_step = 2;
    p->out_pos = 0;
  }
  /* The accepting rank's proof, or a close: it refused this rank's hello. */
  int rc = read_msg(p->out_fd, p->out_buf, TUTTI_AUTH_PROOF_BYTES, &p->out_pos);
  if (rc == 0) return TUTTI_SUCCESS;
  if (rc < 0) {
    if (peer < comm->rank) goto closed;
    /* A higher rank refuses a lower one's hello when it is connecting itself (the tie-break):
     * its connection is on the way. */
    close_out(t, p);
    p->conn = TCP_WAIT_IN;
    return TUTTI_SUCCESS;
  }
  tcp_ident_t id = {TCP_HELLO_MAGIC, peer, comm->job_id, s, t->nsocks};
  struct iovec part = {&id, sizeof id};
  if (!tutti__auth_verify(comm->secret, TUTTI_AUTH_ACCEPTOR, p->out_na, p->out_nc, &part, 1,
                          p->out_buf)) {
    close_out(t, p);
    p->conn = TCP_DOWN;
    t->nconnecting--;
    return tutti__error(comm, TUTTI_ERR_REMOTE, "the data listener of %s did not prove it knows "
                        "the job secret", tutti__peer_desc(comm, peer, who, sizeof who));
  }
  int fd = p->out_fd;
  p->out_fd = -1;
  p->out_step = 0;
  socket_up(t, peer, s, fd);
  if (p->conn != TCP_UP) return start_out(t, peer, s + 1);
  return TUTTI_SUCCESS;
closed:
  close_out(t, p);
  p->conn = TCP_DOWN;
  t->nconnecting--;
  return tcp__peer_error(t, peer, "lost the connection (in its handshake) to", errno);
}

tutti_result_t tcp__ensure(tcp_transport_t *t, int peer) {
  tcp_peer_t *p = &t->peer[peer];
  if (p->conn == TCP_UP) return TUTTI_SUCCESS;
  if (p->conn == TCP_DOWN) {
    t->nconnecting++;
    TRY(start_out(t, peer, 0));
  }
  return tcp__conn_progress(t);
}

/* Reports and drops pending connection i. */
static void drop_pending(tcp_transport_t *t, int i, const char *why, int warn) {
  char who[64];
  if (why && warn)
    WARN("net", t->base.comm->rank, "rejected a data connection from %s: %s",
         tutti__auth_peer_name(t->pend[i].fd, who, sizeof who), why);
  close(t->pend[i].fd);
  t->pend[i] = t->pend[--t->npend];
}

/* A complete hello on pending connection i: admits the socket, or says why not. Returns 1
 * when the connection was handed over or dropped. */
static int admit(tcp_transport_t *t, int i) {
  struct tutti_comm *comm = t->base.comm;
  tcp_pending_t *q = &t->pend[i];
  tcp_hello_t h;
  memcpy(&h, q->buf, sizeof h);
  char why[320];
  struct iovec part = {&h.id, sizeof h.id};
  if (h.id.magic != TCP_HELLO_MAGIC ||
      !tutti__auth_verify(comm->secret, TUTTI_AUTH_CONNECTOR, q->na, h.nc, &part, 1, h.proof)) {
    drop_pending(t, i, "it did not prove it knows the job secret (a stranger, a rank of another "
                 "job, or a replayed handshake)", 1);
    return 1;
  }
  int r = h.id.rank, s = h.id.sock;
  if (h.id.nsocks != t->nsocks) {
    snprintf(why, sizeof why, "rank %d uses TUTTI_NSOCKS=%d where this rank uses %d (set it "
             "the same on every rank)", r, (int)h.id.nsocks, t->nsocks);
    drop_pending(t, i, why, 1);
    return 1;
  }
  if (h.id.job_id != comm->job_id || r < 0 || r == comm->rank || r >= comm->nranks ||
      comm->peers[r].tp != &t->base || s < 0 || s >= t->nsocks) {
    snprintf(why, sizeof why, "it claims to be socket %d of rank %d of job %016llx, which is "
             "not a TCP peer of this communicator", s, r, (unsigned long long)h.id.job_id);
    drop_pending(t, i, why, 1);
    return 1;
  }
  tcp_peer_t *p = &t->peer[r];
  if (s == 0) {
    int mine = p->conn == TCP_OUT && (comm->rank > r || p->fd[0] >= 0);
    if (mine || p->conn == TCP_UP || p->conn == TCP_IN) {
      /* The tie-break (this rank's own connection wins), or a duplicate. */
      drop_pending(t, i, "this rank connects to it itself", 0);
      return 1;
    }
    if (p->conn == TCP_OUT) close_out(t, p); /* the higher rank's connection wins */
    if (p->conn == TCP_DOWN) t->nconnecting++;
    p->conn = TCP_IN;
  } else if (p->conn != TCP_IN || p->fd[s] >= 0) {
    snprintf(why, sizeof why, "socket %d of rank %d is not expected here now", s, r);
    drop_pending(t, i, why, 1);
    return 1;
  }
  tcp_ident_t me = {TCP_HELLO_MAGIC, comm->rank, comm->job_id, s, t->nsocks};
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES];
  part = (struct iovec){&me, sizeof me};
  if (tutti__auth_proof(comm->secret, TUTTI_AUTH_ACCEPTOR, q->na, h.nc, &part, 1, proof) !=
          TUTTI_SUCCESS ||
      send_msg(q->fd, proof, sizeof proof) != 0) {
    snprintf(why, sizeof why, "cannot answer rank %d with this rank's proof", r);
    drop_pending(t, i, why, 1);
    if (s == 0 && p->fd[0] < 0) p->conn = TCP_DOWN, t->nconnecting--;
    return 1;
  }
  int fd = q->fd;
  t->pend[i] = t->pend[--t->npend];
  socket_up(t, r, s, fd);
  return 1;
}

/* Moves pending connection i on; 1 when it left the pending set. */
static int drive_pending(tcp_transport_t *t, int i, int64_t now) {
  tcp_pending_t *q = &t->pend[i];
  if (q->step == 0) {
    int rc = read_msg(q->fd, q->buf, sizeof(tcp_knock_t), &q->pos);
    if (rc < 0) {
      /* A stranger that waited for a challenge first, or a probe of liveness: logged, as
       * every refusal is. */
      drop_pending(t, i, "it closed the connection without knocking (not a tutti rank)", 1);
      return 1;
    }
    if (rc == 1) {
      tcp_knock_t k;
      memcpy(&k, q->buf, sizeof k);
      tcp_challenge_t ch = {TCP_CHALLENGE_MAGIC, 0, {0}};
      if (k.magic == TUTTI_SHRINK_KNOCK) { /* a shrink member: it asks again (auth.h) */
        drop_pending(t, i, NULL, 0);
        return 1;
      }
      if (k.magic != TCP_KNOCK_MAGIC) {
        drop_pending(t, i, "it does not speak the tutti handshake", 1);
        return 1;
      }
      if (tutti__auth_make_nonce(ch.na) != TUTTI_SUCCESS || send_msg(q->fd, &ch, sizeof ch)) {
        drop_pending(t, i, "no challenge could be sent", 1);
        return 1;
      }
      memcpy(q->na, ch.na, sizeof q->na);
      q->step = 1;
      q->pos = 0;
    }
  }
  if (q->step == 1) {
    int rc = read_msg(q->fd, q->buf, sizeof(tcp_hello_t), &q->pos);
    if (rc < 0) {
      /* After a correct knock this is a rank that lost the tie-break of two crossing
       * connections and withdrew (admit()): normal, so logged at INFO, not WARN. */
      char who[64];
      INFO("net", t->base.comm->rank, "a data connection from %s closed before its hello "
           "(a crossing connection withdrawn)",
           tutti__auth_peer_name(q->fd, who, sizeof who));
      drop_pending(t, i, NULL, 0);
      return 1;
    }
    if (rc == 1) return admit(t, i);
  }
  if (now >= q->deadline) {
    drop_pending(t, i, "no complete handshake within 5 s", 1);
    return 1;
  }
  return 0;
}

int tcp__conn_pollfds(tcp_transport_t *t, int at) {
  struct tutti_comm *comm = t->base.comm;
  if (t->listen_fd >= 0) {
    t->pfd[at] = (struct pollfd){.fd = t->listen_fd, .events = POLLIN};
    t->pfd_peer[at++] = -2;
  }
  for (int i = 0; i < t->npend; i++) {
    t->pfd[at] = (struct pollfd){.fd = t->pend[i].fd, .events = POLLIN};
    t->pfd_peer[at++] = -2;
  }
  for (int r = 0; t->nconnecting && r < comm->nranks; r++)
    if (t->peer[r].conn == TCP_OUT && t->peer[r].out_fd >= 0) {
      t->pfd[at] = (struct pollfd){.fd = t->peer[r].out_fd,
                                   .events = (short)(t->peer[r].out_step ? POLLIN : POLLOUT)};
      t->pfd_peer[at++] = -2;
    }
  return at;
}

tutti_result_t tcp__conn_progress(tcp_transport_t *t) {
  struct tutti_comm *comm = t->base.comm;
  for (;;) { /* accept what waits, as far as there are slots */
    int fd = t->npend < TCP_MAX_PENDING && t->listen_fd >= 0
                 ? accept4(t->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)
                 : -1;
    if (fd < 0) break;
    t->pend[t->npend++] = (tcp_pending_t){.fd = fd, .deadline = tutti__now_ns() + TCP_HELLO_NS};
  }
  int64_t now = tutti__now_ns();
  for (int i = 0; i < t->npend;)
    if (!drive_pending(t, i, now)) i++;
  for (int r = 0; t->nconnecting && r < comm->nranks; r++)
    if (t->peer[r].conn == TCP_OUT) TRY(drive_out(t, r));
  return TUTTI_SUCCESS;
}

void tcp__conn_release_listener(tutti_transport_t *tp) {
  tcp_transport_t *t = (tcp_transport_t *)tp;
  int64_t now = tutti__now_ns();
  /* A knock already here settles the connection (a data peer's goes on, a shrink
   * member's closes); the rest have not said who they are yet. */
  for (int i = 0; i < t->npend;)
    if (!drive_pending(t, i, now)) i++;
  for (int i = 0; i < t->npend;)
    if (t->pend[i].step == 0)
      drop_pending(t, i, NULL, 0);
    else
      i++;
}

void tcp__conn_settle(tcp_transport_t *t, int wait_ms) {
  int64_t until = tutti__now_ns() + (int64_t)wait_ms * 1000000;
  for (;;) {
    int64_t now = tutti__now_ns();
    for (int i = 0; i < t->npend;)
      if (!drive_pending(t, i, now)) i++;
    int64_t left = (until - now) / 1000000;
    if (!t->npend || left <= 0) return;
    for (int i = 0; i < t->npend; i++)
      t->pfd[i] = (struct pollfd){.fd = t->pend[i].fd, .events = POLLIN};
    (void)poll(t->pfd, (nfds_t)t->npend, (int)left);
  }
}

void tcp__conn_close(tcp_transport_t *t) {
  while (t->npend) drop_pending(t, 0, NULL, 0);
  for (int r = 0; t->peer && r < t->base.comm->nranks; r++) close_out(t, &t->peer[r]);
}
