/*
 * The TCP mesh: rank i connects to every lower rank's data listener and accepts every higher
 * one, TUTTI_NSOCKS sockets per pair, so each pair has exactly that many connections. Every
 * connection starts with a mutual HMAC challenge-response over the job secret (core/auth.h):
 * the accepting rank sends a challenge, the connecting rank answers with a hello proving the
 * job secret over its identity, and the accepting rank answers with its own proof over its
 * identity. Every message has a fixed size.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/auth.h"
#include "core/sock.h"
#include "transport/tcp_int.h"

#define TCP_HELLO_MAGIC 0x74747463u     /* "tttc" */
#define TCP_CHALLENGE_MAGIC 0x74747461u /* "ttta" */
/* How long a new connection may take to answer the challenge; a silent stranger holds the
 * mesh set-up up this long at most. */
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

static int is_tcp_peer(const tcp_transport_t *t, int r) {
  const struct tutti_comm *comm = t->base.comm;
  return r != comm->rank && comm->peers[r].tp == &t->base;
}

void tcp__raise_fd_limit(struct tutti_comm *comm) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  rlim_t was = rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
    INFO("net", comm->rank, "raised the open-file limit from %llu to %llu",
         (unsigned long long)was, (unsigned long long)rl.rlim_max);
}

/* Runs the accepting side of the handshake on the new connection fd, within TCP_HELLO_NS and
 * the deadline. Returns the higher rank that proved the job secret (and has been sent this
 * rank's proof) with its socket index in *sock, or -1 after logging why the connection is
 * refused; the caller closes it. */
static int accept_one(tcp_transport_t *t, int fd, int64_t deadline, int *sock) {
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
  int r = h.id.rank, s = h.id.sock;
  if (h.id.nsocks != t->nsocks) {
    snprintf(why, sizeof why, "rank %d uses TUTTI_NSOCKS=%d where this rank uses %d (set it "
             "the same on every rank)", r, (int)h.id.nsocks, t->nsocks);
    goto reject;
  }
  if (h.id.job_id != comm->job_id || r <= comm->rank || r >= comm->nranks ||
      !is_tcp_peer(t, r) || s < 0 || s >= t->nsocks || t->peer[r].fd[s] >= 0) {
    snprintf(why, sizeof why, "it claims to be socket %d of rank %d of job %016llx, which is "
             "not a higher TCP peer's socket still expected here", s, r,
             (unsigned long long)h.id.job_id);
    goto reject;
  }
  tcp_ident_t me = {TCP_HELLO_MAGIC, comm->rank, comm->job_id, s, t->nsocks};
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES];
  part = (struct iovec){&me, sizeof me};
  if (tutti__auth_proof(comm->secret, TUTTI_AUTH_ACCEPTOR, ch.na, h.nc, &part, 1, proof) !=
          TUTTI_SUCCESS ||
      tutti__sock_send_all(fd, proof, sizeof proof, dl, err, sizeof err) != TUTTI_SUCCESS) {
    snprintf(why, sizeof why, "cannot answer rank %d with this rank's proof", r);
    goto reject;
  }
  *sock = s;
  return r;
reject:
  WARN("net", comm->rank, "rejected a data connection from %s: %s",
       tutti__auth_peer_name(fd, who, sizeof who), why);
  return -1;
}

/* Accepts `expected` connections from the higher ranks; strangers, replays and duplicates
 * are dropped (and logged) without failing the mesh. */
static tutti_result_t accept_peers(tcp_transport_t *t, int listen_fd, int expected,
                                   int64_t deadline) {
  struct tutti_comm *comm = t->base.comm;
  char err[256];
  while (expected > 0) {
    int fd, s;
    tutti_result_t r = tutti__sock_accept(listen_fd, deadline, &fd, err, sizeof err);
    if (r != TUTTI_SUCCESS)
      return tutti__error(comm, r, "connecting the TCP mesh: %s (%d connections from higher "
                          "ranks missing)", err, expected);
    int peer = accept_one(t, fd, deadline, &s);
    if (peer < 0) {
      close(fd);
      continue;
    }
    tutti__sock_nodelay_nonblock(fd);
    t->peer[peer].fd[s] = fd;
    expected--;
  }
  return TUTTI_SUCCESS;
}

/* Connects socket s of the pair to lower rank r's data listener and runs the connecting side
 * of the handshake: proves the job secret and checks that the listener proves it too, as
 * rank r of this job. */
static tutti_result_t connect_one(tcp_transport_t *t, int r, int s, int64_t deadline, int *out,
                                  char *err, size_t errlen) {
  struct tutti_comm *comm = t->base.comm;
  int fd;
  TRY(tutti__sock_connect(comm->peers[r].ip, comm->peers[r].port, deadline, 1, &fd, err,
                          errlen));
  tcp_challenge_t ch;
  tcp_hello_t h = {{TCP_HELLO_MAGIC, comm->rank, comm->job_id, s, t->nsocks}, {0}, {0}};
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
             "this rank's proof of the job secret (or TUTTI_NSOCKS differs), or it exited");
  if (res != TUTTI_SUCCESS) goto fail;
  tcp_ident_t peer = {TCP_HELLO_MAGIC, r, comm->job_id, s, t->nsocks};
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

tutti_result_t tcp__connect_mesh(tcp_transport_t *t, int listen_fd, int64_t deadline) {
  struct tutti_comm *comm = t->base.comm;
  char err[256], who[128];
  int higher = 0;
  for (int r = comm->rank + 1; r < comm->nranks; r++) higher += is_tcp_peer(t, r);
  for (int r = 0; r < comm->rank; r++) {
    if (!is_tcp_peer(t, r)) continue;
    for (int s = 0; s < t->nsocks; s++) {
      int fd;
      tutti_result_t c = connect_one(t, r, s, deadline, &fd, err, sizeof err);
      if (c != TUTTI_SUCCESS)
        return tutti__error(comm, c, "cannot connect to %s: %s",
                            tutti__peer_desc(comm, r, who, sizeof who), err);
      tutti__sock_nodelay_nonblock(fd);
      t->peer[r].fd[s] = fd;
    }
  }
  return accept_peers(t, listen_fd, higher * t->nsocks, deadline);
}
