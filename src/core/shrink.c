/*
 * tutti_comm_shrink: the survivors of a failed communicator agree on who is alive and build a
 * new communicator of just them. The old transports may be broken, so the agreement runs over
 * the data listeners every rank keeps open for this (comm->listen_fd):
 *
 *  - A dead process's listener refuses connections. Each rank connects to the ranks below it
 *    in order; the first that accepts is the leader (the lowest live rank). A rank that finds
 *    none below it alive leads.
 *  - The leader serves every connection at once from one poll loop, each with its own short
 *    hello deadline, so strangers and idle connections to its listener delay no member. It
 *    admits members (each proves the job secret, HMAC as in auth.h) and counts a rank out
 *    when its listener refuses a probe; a rank that neither joins nor dies within half the
 *    timeout (stopped, or not calling shrink) is left out.
 *  - The leader starts a fresh rendezvous and answers each member with its new rank and the
 *    rendezvous address, signed; everyone then joins as for tutti_comm_init_rank.
 *
 * No split: a rank that cannot be sure it belongs to the group the leader forms fails rather
 * than lead a competing one. A leader that took this rank's hello and then closed has left it
 * out (TUTTI_ERR_REMOTE); a refused probe of a process of this host that is still alive means
 * that rank left this communicator, perhaps in a shrink this rank missed (TUTTI_ERR_REMOTE);
 * and after a shrink the new communicator keeps the old listener open (unserved), so a rank
 * that calls shrink too late finds a listener that never answers (TUTTI_ERR_TIMEOUT) instead
 * of a refusal it would take for a death. Limit: a process on another host whose listener
 * refuses is taken as dead (no pid to ask), which is wrong only for a rank that calls shrink
 * after every member of the new communicator destroyed it.
 *
 * Members, while they wait, accept and close whatever reaches their own listener, so the
 * leader's probes never fill a backlog. A member knocks first (auth.h), so a leader still in
 * a collective whose tcp path accepts the connection closes it at once and the member asks
 * again, rather than both waiting out the collection window; and a shrink first has the
 * transports close what they accepted but have not heard from yet (a member's connection
 * taken an instant before its knock arrived), so the member asks again there too.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "core/auth.h"
#include "core/comm_create.h"
#include "core/sock.h"
#include "transport/transport.h"

#define SHRINK_CHALLENGE 0x53485231u /* "SHR1" */
#define SHRINK_HELLO 0x53485232u
#define SHRINK_ANSWER 0x53485233u
#define PROBE_MS 100
#define HELLO_NS (2 * 1000000000LL)
#define MAX_PENDING 256 /* connections served at once; more are closed at once */

static const char op_name[] = "tutti_comm_shrink";

typedef struct {
  uint32_t magic;
  uint32_t pad;
  uint8_t na[TUTTI_AUTH_NONCE_BYTES];
} shrink_challenge_t;

typedef struct {
  uint32_t magic;
  int32_t rank; /* in the old communicator */
  uint64_t job_id;
} shrink_ident_t;

typedef struct {
  shrink_ident_t id;
  uint8_t nc[TUTTI_AUTH_NONCE_BYTES];
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES];
} shrink_hello_t;

typedef struct {
  uint32_t magic;
  int32_t rank;    /* the member it is for, in the old communicator */
  uint64_t job_id; /* of the old communicator */
  int32_t newrank;
  int32_t newsize;
  uint32_t ip;     /* the new rendezvous, network order */
  uint16_t port;
  uint16_t pad;
} shrink_answer_t;

typedef struct {
  shrink_answer_t a;
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES];
} shrink_reply_t;

/* Outcome of one connection attempt to a listener. */
enum { PROBE_DEAD, PROBE_ALIVE, PROBE_SILENT };

/* Connects to rank r's listener within ms: PROBE_ALIVE with *fd (blocking), PROBE_DEAD when
 * refused (nobody listens: the process is gone), PROBE_SILENT when there is no answer yet. */
static int probe(const struct tutti_comm *comm, int r, int ms, int *fd) {
  const tutti_peer_t *p = &comm->peers[r];
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return PROBE_SILENT;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = p->port, .sin_addr.s_addr = p->ip};
  int e = connect(s, (struct sockaddr *)&sa, sizeof sa) == 0 ? 0 : errno;
  if (e == EINPROGRESS) {
    struct pollfd pf = {.fd = s, .events = POLLOUT};
    if (poll(&pf, 1, ms) <= 0) {
      close(s);
      return PROBE_SILENT;
    }
    socklen_t el = sizeof e;
    getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &el);
  }
  if (e != 0) {
    close(s);
    return e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH ? PROBE_DEAD
                                                                      : PROBE_SILENT;
  }
  fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK);
  *fd = s;
  return PROBE_ALIVE;
}

/* Accepts and closes everything pending on this rank's listener (probes, strays). */
static void drain(int lfd) {
  for (;;) {
    int s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (s < 0) return;
    close(s);
  }
}

/* Waits until fd has bytes (or EOF), draining lfd meanwhile; TUTTI_ERR_TIMEOUT at deadline. */
static tutti_result_t wait_readable(int fd, int lfd, int64_t deadline) {
  for (;;) {
    struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = lfd, .events = POLLIN}};
    int64_t ms = (deadline - tutti__now_ns()) / 1000000;
    if (ms <= 0) return TUTTI_ERR_TIMEOUT;
    int rc = poll(pf, 2, ms > 100 ? 100 : (int)ms);
    if (rc < 0 && errno != EINTR) return TUTTI_ERR_SYSTEM;
    if (rc > 0 && (pf[1].revents & POLLIN)) drain(lfd);
    if (rc > 0 && pf[0].revents) return TUTTI_SUCCESS;
  }
}

static int fd_flags_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

/* ---- Leader -------------------------------------------------------------------------- */

/* What a member sends, in stream order: its knock (auth.h: sent on connecting, before the
 * challenge has arrived) and its hello. */
typedef struct {
  uint32_t knock;
  uint32_t pad;
  shrink_hello_t h;
} shrink_knock_hello_t;

/* A connection the leader has challenged and whose knock and hello it is reading. */
typedef struct {
  int fd;
  int64_t deadline;
  size_t got;
  uint8_t na[TUTTI_AUTH_NONCE_BYTES];
  shrink_knock_hello_t m;
} pending_t;

typedef struct {
  int *state; /* per old rank: 0 expected, 1 joined (fd open), -1 out */
  int *fd;
  uint8_t (*na)[TUTTI_AUTH_NONCE_BYTES];
  uint8_t (*nc)[TUTTI_AUTH_NONCE_BYTES];
  pending_t pend[MAX_PENDING];
  int npend;
} roster_t;

static void reject(const struct tutti_comm *comm, int fd, const char *why) {
  char who[64];
  WARN("boot", comm->rank, "%s: refused a connection from %s: %s", op_name,
       tutti__auth_peer_name(fd, who, sizeof who), why);
  close(fd);
}

/* Accepts everything waiting on the listener and sends each its challenge. */
static void accept_all(struct tutti_comm *comm, roster_t *ro) {
  for (;;) {
    int fd = accept4(comm->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    if (ro->npend == MAX_PENDING) {
      reject(comm, fd, "too many connections at once");
      continue;
    }
    pending_t *p = &ro->pend[ro->npend];
    shrink_challenge_t ch = {SHRINK_CHALLENGE, 0, {0}};
    /* A fresh socket's send buffer holds 48 bytes: a short send means a broken one. */
    if (tutti__auth_make_nonce(ch.na) != TUTTI_SUCCESS ||
        send(fd, &ch, sizeof ch, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof ch) {
      reject(comm, fd, "the challenge could not be sent");
      continue;
    }
    *p = (pending_t){.fd = fd, .deadline = tutti__now_ns() + HELLO_NS};
    memcpy(p->na, ch.na, sizeof p->na);
    ro->npend++;
  }
}

/* Reads what pending connection i has sent; a complete hello admits its rank or is refused.
 * Returns 1 when the connection left the pending set. */
static int read_hello(struct tutti_comm *comm, roster_t *ro, int i) {
  pending_t *p = &ro->pend[i];
  ssize_t n = recv(p->fd, (char *)&p->m + p->got, sizeof p->m - p->got, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
  if (n <= 0) {
    reject(comm, p->fd, "it closed before its hello");
    return 1;
  }
  p->got += (size_t)n;
  if (p->got < sizeof p->m) return 0;
  shrink_hello_t *h = &p->m.h;
  struct iovec part = {&h->id, sizeof h->id};
  if (p->m.knock != TUTTI_SHRINK_KNOCK || h->id.magic != SHRINK_HELLO || !tutti__auth_verify(comm->secret, TUTTI_AUTH_CONNECTOR,
                                                        p->na, h->nc, &part, 1, h->proof)) {
    reject(comm, p->fd, "it did not prove it knows the job secret");
    return 1;
  }
  int r = h->id.rank;
  if (h->id.job_id != comm->job_id || r <= comm->rank || r >= comm->nranks ||
      ro->state[r] != 0) {
    reject(comm, p->fd, "it is not a rank of this communicator still expected");
    return 1;
  }
  fcntl(p->fd, F_SETFL, fcntl(p->fd, F_GETFL) & ~O_NONBLOCK);
  ro->state[r] = 1;
  ro->fd[r] = p->fd;
  memcpy(ro->na[r], p->na, sizeof p->na);
  memcpy(ro->nc[r], h->nc, sizeof h->nc);
  return 1;
}

static void drop_pending(roster_t *ro, int i) {
  ro->pend[i] = ro->pend[--ro->npend];
}

static int all_settled(const struct tutti_comm *comm, const roster_t *ro) {
  for (int r = comm->rank + 1; r < comm->nranks; r++)
    if (ro->state[r] == 0) return 0;
  return 1;
}

/* Probes the higher ranks still expected: a refusal means the process is gone. */
static void probe_expected(struct tutti_comm *comm, roster_t *ro) {
  for (int r = comm->rank + 1; r < comm->nranks; r++) {
    int fd;
    if (ro->state[r] != 0) continue;
    int p = probe(comm, r, PROBE_MS, &fd);
    if (p == PROBE_ALIVE) close(fd);
    if (p == PROBE_DEAD) {
      char who[128];
      INFO("boot", comm->rank, "%s: %s is gone", op_name,
           tutti__peer_desc(comm, r, who, sizeof who));
      ro->state[r] = -1;
    }
  }
}

/* Collects the members until every higher rank has joined or is known dead, or the window
 * closes (ranks still silent then are left out). Every connection is served at once; one
 * that has not sent its hello by its own deadline is closed. */
static void gather_members(struct tutti_comm *comm, roster_t *ro, int64_t window) {
  int64_t next_probe = 0;
  struct pollfd pf[1 + MAX_PENDING];
  while (!all_settled(comm, ro) && tutti__now_ns() < window) {
    pf[0] = (struct pollfd){.fd = comm->listen_fd, .events = POLLIN};
    for (int i = 0; i < ro->npend; i++)
      pf[1 + i] = (struct pollfd){.fd = ro->pend[i].fd, .events = POLLIN};
    int np = ro->npend;
    if (poll(pf, (nfds_t)(1 + np), 20) > 0) {
      /* From the back, so that removing entry i leaves the unvisited ones in place. */
      for (int i = np - 1; i >= 0; i--)
        if (pf[1 + i].revents && read_hello(comm, ro, i)) drop_pending(ro, i);
      if (pf[0].revents & POLLIN) accept_all(comm, ro);
    }
    int64_t now = tutti__now_ns();
    for (int i = ro->npend - 1; i >= 0; i--)
      if (now >= ro->pend[i].deadline) {
        reject(comm, ro->pend[i].fd, "no complete hello in time");
        drop_pending(ro, i);
      }
    if (now < next_probe) continue;
    next_probe = now + 200 * 1000000LL;
    probe_expected(comm, ro);
  }
  /* Whoever is still half-way is not in the group; closing tells a member so (it was
   * challenged, so it fails rather than look for another leader). */
  while (ro->npend) {
    close(ro->pend[ro->npend - 1].fd);
    ro->npend--;
  }
}

static tutti_result_t lead(struct tutti_comm *comm, int64_t deadline, tutti_comm_t *out) {
  int n = comm->nranks;
  char err[256];
  tutti_result_t res = TUTTI_SUCCESS;
  roster_t *rp = calloc(1, sizeof *rp), ro = {0};
  if (rp) {
    rp->state = calloc((size_t)n, sizeof(int));
    rp->fd = calloc((size_t)n, sizeof(int));
    rp->na = calloc((size_t)n, TUTTI_AUTH_NONCE_BYTES);
    rp->nc = calloc((size_t)n, TUTTI_AUTH_NONCE_BYTES);
    ro = *rp;
  }
  if (!rp || !ro.state || !ro.fd || !ro.na || !ro.nc) {
    res = tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory for %d ranks", n);
    goto out;
  }
  for (int r = 0; r < n; r++) ro.state[r] = r < comm->rank ? -1 : 0;
  ro.state[comm->rank] = 1;
  int64_t now = tutti__now_ns();
  gather_members(comm, rp, now + (deadline - now) / 2);
  ro = *rp;

  int newsize = 0, lfd = -1;
  for (int r = 0; r < n; r++) newsize += ro.state[r] == 1;
  uint16_t port = 0;
  uint32_t ip = comm->peers[comm->rank].ip;
  TRY_GOTO(tutti__sock_listen(ip, 0, newsize + 16, &lfd, &port, err, sizeof err), res, fail_err);
  res = tutti__rdv_serve(lfd, comm->secret, comm->cfg.timeout_s);
  if (res != TUTTI_SUCCESS) {
    close(lfd);
    snprintf(err, sizeof err, "cannot start the rendezvous of the new communicator");
    goto fail_err;
  }
  int newrank = 0;
  for (int r = comm->rank + 1; r < n; r++) {
    if (ro.state[r] != 1) continue;
    shrink_reply_t rep = {{SHRINK_ANSWER, r, comm->job_id, ++newrank, newsize, ip, port, 0}, {0}};
    struct iovec part = {&rep.a, sizeof rep.a};
    /* A member that cannot be told is a member the new rendezvous waits for in vain: its
     * failure shows there, naming the missing rank, so it is only logged here. */
    if (tutti__auth_proof(comm->secret, TUTTI_AUTH_ACCEPTOR, ro.na[r], ro.nc[r], &part, 1,
                          rep.proof) != TUTTI_SUCCESS ||
        tutti__sock_send_all(ro.fd[r], &rep, sizeof rep, deadline, err, sizeof err) !=
            TUTTI_SUCCESS)
      WARN("boot", comm->rank, "%s: cannot answer rank %d: %s", op_name, r, err);
  }
  INFO("boot", comm->rank, "%s: %d of %d ranks continue", op_name, newsize, n);
  res = tutti__comm_create(out, newsize, 0, ip, port, comm->secret, op_name, &comm->cfg, 0);
  goto out;
fail_err:
  res = tutti__error(comm, res, "%s", err);
out:
  if (ro.fd)
    for (int r = 0; r < n; r++)
      if (ro.state && ro.state[r] == 1 && r != comm->rank) close(ro.fd[r]);
  free(ro.state);
  free(ro.fd);
  free(ro.na);
  free(ro.nc);
  free(rp);
  return res;
}

/* ---- Member -------------------------------------------------------------------------- */

/* Joins leader r over fd (connected): proves the secret, waits for the signed answer, and
 * builds the new communicator. */
static tutti_result_t join(struct tutti_comm *comm, int r, int fd, int64_t deadline,
                           tutti_comm_t *out) {
  char err[256], who[128];
  tutti__peer_desc(comm, r, who, sizeof who);
  shrink_challenge_t ch;
  shrink_hello_t h = {{SHRINK_HELLO, comm->rank, comm->job_id}, {0}, {0}};
  shrink_reply_t rep;
  struct iovec part = {&h.id, sizeof h.id};
  const uint32_t knock[2] = {TUTTI_SHRINK_KNOCK, 0};
  tutti_result_t res = tutti__sock_send_all(fd, knock, sizeof knock, deadline, err, sizeof err);
  if (res == TUTTI_SUCCESS) res = wait_readable(fd, comm->listen_fd, deadline);
  if (res == TUTTI_SUCCESS) res = tutti__sock_recv_all(fd, &ch, sizeof ch, deadline, err, sizeof err);
  /* Closed before the challenge: a dying process's listener can still accept for a moment
   * (its other sockets close first), or r was still in a collective and its tcp path took
   * the connection (it closes a shrink knock at once): the caller asks again. */
  if (res == TUTTI_ERR_REMOTE) return TUTTI_IN_PROGRESS;
  if (res != TUTTI_SUCCESS)
    return tutti__error(comm, res, "%s, the lowest live rank, did not take this rank into the "
                        "new communicator (it did not call tutti_comm_shrink in time)", who);
  if (ch.magic != SHRINK_CHALLENGE)
    return tutti__error(comm, TUTTI_ERR_REMOTE, "%s answered with something other than the "
                        "shrink handshake", who);
  if (tutti__auth_make_nonce(h.nc) != TUTTI_SUCCESS ||
      tutti__auth_proof(comm->secret, TUTTI_AUTH_CONNECTOR, ch.na, h.nc, &part, 1, h.proof) !=
          TUTTI_SUCCESS)
    return tutti__error(comm, TUTTI_ERR_INTERNAL, "cannot compute the proof of the job secret");
  res = tutti__sock_send_all(fd, &h, sizeof h, deadline, err, sizeof err);
  if (res == TUTTI_SUCCESS) res = wait_readable(fd, comm->listen_fd, deadline);
  if (res == TUTTI_SUCCESS)
    res = tutti__sock_recv_all(fd, &rep, sizeof rep, deadline, err, sizeof err);
  if (res != TUTTI_SUCCESS)
    return tutti__error(comm, res, "no answer from %s, which leads the shrink", who);
  part = (struct iovec){&rep.a, sizeof rep.a};
  if (rep.a.magic != SHRINK_ANSWER || rep.a.rank != comm->rank ||
      rep.a.job_id != comm->job_id ||
      !tutti__auth_verify(comm->secret, TUTTI_AUTH_ACCEPTOR, ch.na, h.nc, &part, 1, rep.proof))
    return tutti__error(comm, TUTTI_ERR_REMOTE, "the answer of %s is not signed with the job "
                        "secret for this rank", who);
  if (rep.a.newsize < 2 || rep.a.newsize > comm->nranks || rep.a.newrank < 1 ||
      rep.a.newrank >= rep.a.newsize)
    return tutti__error(comm, TUTTI_ERR_REMOTE, "%s assigned rank %d of %d, which is not a "
                        "place in a smaller communicator", who, rep.a.newrank, rep.a.newsize);
  return tutti__comm_create(out, rep.a.newsize, rep.a.newrank, rep.a.ip, rep.a.port,
                            comm->secret, op_name, &comm->cfg, 0);
}

/* Whether old rank r is a process of this host that still runs (not a zombie): then a
 * refused probe means it left this communicator, not that it died. */
static int alive_here(const struct tutti_comm *comm, int r) {
  const tutti_peer_t *p = &comm->peers[r], *me = &comm->peers[comm->rank];
  if (p->pid <= 0 || !p->boot_id[0] || strncmp(p->boot_id, me->boot_id, sizeof p->boot_id))
    return 0;
  if (kill(p->pid, 0) != 0 && errno == ESRCH) return 0;
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)p->pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 1;
  buf[n] = '\0';
  const char *end = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
  return !(end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X'));
}

static tutti_result_t shrink(tutti_comm_t comm, tutti_comm_t *newcomm);

tutti_result_t tutti_comm_shrink(tutti_comm_t comm, tutti_comm_t *newcomm) {
  if (!comm || !newcomm) {
    WARN("boot", comm ? comm->rank : -1, "%s: %s is NULL", op_name, comm ? "newcomm" : "comm");
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  /* The old communicator's first error is kept if the shrink works; if it fails, the user
   * needs to read why the shrink failed instead. */
  char cause[sizeof comm->last_error];
  size_t cause_len = comm->error_first_len;
  memcpy(cause, comm->last_error, sizeof cause);
  comm->last_error[0] = '\0';
  comm->error_first_len = 0;
  tutti_result_t res = shrink(comm, newcomm);
  if (res == TUTTI_SUCCESS || !comm->last_error[0]) {
    memcpy(comm->last_error, cause, sizeof cause);
    comm->error_first_len = cause_len;
  }
  if (res == TUTTI_SUCCESS) {
    /* The old listener stays open, unserved, for the new communicator's life: a rank that
     * calls shrink on comm too late connects and times out, instead of being refused and
     * taking this rank for dead (which would make it lead a group of its own). */
    if ((*newcomm)->retired_fd >= 0) close((*newcomm)->retired_fd);
    (*newcomm)->retired_fd = comm->listen_fd;
    comm->listen_fd = -1;
  }
  return res;
}

/* Finds the leader below this rank and joins it; TUTTI_IN_PROGRESS when every rank below is
 * gone, so this one leads. */
static tutti_result_t find_leader(tutti_comm_t comm, int64_t deadline, tutti_comm_t *newcomm) {
  char who[128];
  for (int r = 0; r < comm->rank; r++) {
    int64_t refused_since = 0;
    for (;;) {
      int fd = -1, p;
      /* A live rank that is slow to answer is still the leader: keep asking it. */
      while ((p = probe(comm, r, PROBE_MS, &fd)) == PROBE_SILENT) {
        drain(comm->listen_fd);
        if (tutti__now_ns() >= deadline)
          return tutti__error(comm, TUTTI_ERR_TIMEOUT, "%s neither answers nor is gone",
                              tutti__peer_desc(comm, r, who, sizeof who));
      }
      if (p == PROBE_DEAD && !alive_here(comm, r)) break;
      if (p == PROBE_DEAD) {
        /* Refused, yet the process runs: it left this communicator (destroyed it, maybe
         * after a shrink this rank was too late for), or it is exiting right now. Leading
         * without it could split the survivors, so after a moment's grace, fail. */
        int64_t now = tutti__now_ns();
        if (!refused_since) refused_since = now;
        if (now - refused_since > 2 * 1000000000LL || now >= deadline)
          return tutti__error(comm, TUTTI_ERR_REMOTE, "%s is alive but no longer takes part "
                              "in this communicator (it destroyed it, perhaps after a shrink "
                              "this rank was too late for); this rank cannot be sure which "
                              "group the survivors formed",
                              tutti__peer_desc(comm, r, who, sizeof who));
      } else {
        tutti_result_t res = join(comm, r, fd, deadline, newcomm);
        close(fd);
        if (res != TUTTI_IN_PROGRESS) return res;
        if (tutti__now_ns() >= deadline)
          return tutti__error(comm, TUTTI_ERR_REMOTE, "%s keeps accepting and closing the "
                              "shrink connection (it is not the leader, or it is exiting)",
                              tutti__peer_desc(comm, r, who, sizeof who));
      }
      drain(comm->listen_fd);
      struct timespec nap = {0, 10 * 1000000};
      nanosleep(&nap, NULL);
    }
  }
  return TUTTI_IN_PROGRESS;
}

static tutti_result_t shrink(tutti_comm_t comm, tutti_comm_t *newcomm) {
  *newcomm = NULL;
  TUTTI_SET_OP(comm, op_name);
  if (comm->listen_fd < 0)
    return tutti__error_soft(comm, TUTTI_ERR_INVALID_USAGE, "this communicator was shrunk "
                             "already (its listener belongs to the new one): shrink that one");
  if (!fd_flags_nonblock(comm->listen_fd))
    return tutti__error(comm, TUTTI_ERR_SYSTEM, "cannot make the listener non-blocking");
  for (int i = 0; i < comm->ntps; i++)
    if (comm->tps[i]->ops->release_listener) comm->tps[i]->ops->release_listener(comm->tps[i]);
  int64_t deadline = tutti__deadline_after(comm->cfg.timeout_s);
  tutti_result_t res = find_leader(comm, deadline, newcomm);
  return res == TUTTI_IN_PROGRESS ? lead(comm, deadline, newcomm) : res;
}
