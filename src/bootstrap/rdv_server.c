/*
 * The rendezvous server: a short-lived thread in the process that made the unique id (or in
 * rank 0, for tutti_comm_init_env) that every rank connects to once. It checks that the ranks
 * agree before anyone proceeds, so a wrong world size or a duplicate rank fails on every rank
 * with the same sentence instead of hanging.
 *
 * One poll loop serves every connection at once over non-blocking sockets, each with its own
 * short deadline for its hello: a stranger that sends nothing, garbage or one byte a second
 * costs the members nothing (it used to hold up everyone behind it for 5 s).
 *
 * Every connection is authenticated both ways (core/auth.h): the server opens with a fresh
 * nonce, the rank's hello carries an HMAC of it under the job secret, and the server's answer
 * carries an HMAC of the rank's nonce and the answer, which holds the table's digest.
 *
 * When every rank has joined, each gets only the digest, its parent in the distribution tree
 * and the parent's tree listener (about 500 bytes); the root, rank 0, also gets the table,
 * which the ranks then pass down the tree (tree.c). The server so sends O(n) bytes, not n^2. A stranger, a rank
 * of another job or a replayed hello is logged and dropped without disturbing the job, and a
 * rank never believes a table that does not come from its own job's rendezvous.
 *
 * While ranks are missing it says so at the default log level, at 5, 10, 20, 40 ... s, and on
 * SIGUSR1; at its deadline every waiting rank is told which ranks never came.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rdv_wire.h"
#include "core/auth.h"
#include "core/forensics.h"
#include "core/sock.h"

/* How long a connection may take to send its hello. Connections are served concurrently, so
 * this only bounds what a stranger holds, not how long members wait. */
#define RDV_HELLO_NS 5000000000LL
/* How long a rank may take to read its answer. */
#define RDV_REPLY_NS 10000000000LL
/* Connections still owing a hello; past this the oldest is dropped, so a flood of strangers
 * exhausts neither memory nor descriptors. */
#define RDV_MAX_PENDING 1024
/* The first progress report while ranks are missing (or at half the deadline, if that comes
 * sooner); then at twice the time each time. */
#define RDV_FIRST_REPORT_S 5.0
/* The least time the tree gets after the answers (or TUTTI_INIT_TIMEOUT, if shorter). */
#define RDV_TREE_FLOOR_NS 5000000000LL
/* poll's longest sleep: how soon SIGUSR1 is answered when it lands on another thread. */
#define RDV_SLICE_MS 200

enum { C_HELLO, C_MEMBER, C_REPLY, C_CLOSED };

typedef struct rdv_conn {
  int fd;
  int state;
  int rank;         /* C_MEMBER, C_REPLY: the rank it speaks for, else -1 */
  int local;        /* the rank in this process: answered last (below) */
  int64_t deadline; /* for its hello (C_HELLO) or for taking its answer (C_REPLY) */
  uint8_t na[TUTTI_AUTH_NONCE_BYTES];
  uint8_t nc[TUTTI_AUTH_NONCE_BYTES];
  size_t got; /* hello bytes received */
  rdv_hello_t raw;
  rdv_reply_t reply; /* C_REPLY: the answer, then the table if it is a success, then proof */
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES];
  size_t sent;
} rdv_conn_t;

typedef struct rdv_server {
  int lfd;
  char addr[64];
  uint8_t secret[TUTTI_SECRET_BYTES];
  double timeout_s;
  int64_t start, deadline;
  double next_report_s;
  unsigned signals_seen;
  int nranks;   /* from the first hello; -1 before */
  int arrived;  /* ranks admitted to a slot */
  int hellos;   /* valid hellos received, admitted or not */
  int max_world; /* largest world size any hello claimed */
  int complete;  /* every rank joined and has been answered (or is being) */
  int expired;   /* the deadline passed */
  size_t bytes_sent; /* everything written to every connection: logged at the end (INFO) */
  uint64_t job_id;
  uint8_t *joined; /* per rank */
  tutti_rdv_entry_t *table;
  uint32_t *tree_ip; /* per rank: its tree listener, network order */
  uint16_t *tree_port;
  uint64_t tree_ns; /* once complete: the tree's budget, told to every rank */
  uint8_t table_digest[TUTTI_AUTH_PROOF_BYTES]; /* SHA-256 of table, once it is full */
  tutti_result_t status; /* first disagreement, or success */
  char reason[300];
  char host[TUTTI_HOST_BYTES], boot_id[40]; /* this process's, to tell its own rank */
  rdv_conn_t *conn;
  int nconn, cap;
  struct pollfd *pfd;
} rdv_server_t;

static double elapsed_s(const rdv_server_t *s) {
  return (double)(tutti__now_ns() - s->start) / 1e9;
}

/* "rank 3" or "ranks 3, 5-9, 12" (shortened with "..." past len). */
static void missing_str(const rdv_server_t *s, char *buf, size_t len) {
  size_t used = 0;
  int count = 0;
  for (int r = 0; r < s->nranks; r++) count += !s->joined[r];
  used += (size_t)snprintf(buf, len, "%s", count == 1 ? "rank " : "ranks ");
  int first = 1;
  for (int r = 0; r < s->nranks && used + 24 < len; r++) {
    if (s->joined[r]) continue;
    int e = r;
    while (e + 1 < s->nranks && !s->joined[e + 1]) e++;
    used += (size_t)(e == r ? snprintf(buf + used, len - used, "%s%d", first ? "" : ", ", r)
                            : snprintf(buf + used, len - used, "%s%d-%d", first ? "" : ", ", r,
                                       e));
    first = 0;
    r = e;
    if (used + 24 >= len && r + 1 < s->nranks) snprintf(buf + used, len - used, ", ...");
  }
}

/* Where the job stands, in one sentence, for the progress log and SIGUSR1. */
static void progress(rdv_server_t *s, const char *why) {
  if (s->nranks < 0) {
    WARN("boot", -1, "rendezvous at %s (%s): no rank has joined after %.1f s (it gives up at "
         "%.0f s)", s->addr, why, elapsed_s(s), s->timeout_s);
    return;
  }
  char missing[200];
  missing_str(s, missing, sizeof missing);
  WARN("boot", -1, "rendezvous at %s (%s): %d of %d ranks joined after %.1f s; waiting for %s "
       "(it gives up at %.0f s)", s->addr, why, s->arrived, s->nranks, elapsed_s(s), missing,
       s->timeout_s);
}

static void conn_close(rdv_conn_t *c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
  c->state = C_CLOSED;
}

/* Turns c into a connection that is being sent the server's current verdict: a refusal, or
 * the table's digest and where in the tree the rank gets the table (the root: right here). */
static void answer(rdv_server_t *s, rdv_conn_t *c) {
  rdv_reply_t *r = &c->reply;
  memset(r, 0, sizeof *r);
  r->magic = RDV_MAGIC;
  r->status = s->status;
  r->job_id = s->job_id;
  r->nranks = s->nranks;
  snprintf(r->reason, sizeof r->reason, "%s", s->reason);
  if (s->status == TUTTI_SUCCESS) {
    int p = tutti__tree_parent(c->rank);
    r->parent = p;
    r->tree_ns = s->tree_ns;
    memcpy(r->digest, s->table_digest, sizeof r->digest);
    if (p >= 0) {
      r->parent_entry = s->table[p];
      r->parent_tree_ip = s->tree_ip[p];
      r->parent_tree_port = s->tree_port[p];
    }
  }
  struct iovec part = {r, sizeof *r};
  if (tutti__auth_proof(s->secret, TUTTI_AUTH_ACCEPTOR, c->na, c->nc, &part, 1, c->proof) !=
      TUTTI_SUCCESS) {
    conn_close(c); /* the rank sees the connection close and fails */
    return;
  }
  c->state = C_REPLY;
  c->sent = 0;
  /* The local rank waits for the others to take theirs first. */
  c->deadline = tutti__now_ns() + (c->local ? 2 : 1) * RDV_REPLY_NS;
}

/* Sends what the socket takes of c's answer; closes c when it is all out or the rank is gone. */
static void write_answer(rdv_server_t *s, rdv_conn_t *c) {
  /* Only the tree's root gets the table from here: O(n) bytes in all, not n^2. */
  size_t table_bytes = c->reply.status == TUTTI_SUCCESS && c->reply.parent == -1
                           ? (size_t)s->nranks * sizeof *s->table
                           : 0;
  size_t lens[3] = {sizeof c->reply, table_bytes, sizeof c->proof};
  const void *bases[3] = {&c->reply, s->table, c->proof};
  size_t before = c->sent;
  int r = tutti__sock_send_parts(c->fd, bases, lens, 3, &c->sent);
  s->bytes_sent += c->sent - before;
  if (r == 0) return;
  if (r < 0) INFO("boot", -1, "rendezvous: rank %d left before taking its answer", c->rank);
  conn_close(c);
}

/* Once ranks disagree, everyone connected learns it now, and later arrivals on arrival. */
static void refuse(rdv_server_t *s, tutti_result_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void refuse(rdv_server_t *s, tutti_result_t status, const char *fmt, ...) {
  if (s->status == TUTTI_SUCCESS) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->reason, sizeof s->reason, fmt, ap);
    va_end(ap);
    s->status = status;
    WARN("boot", -1, "rendezvous refused the job: %s", s->reason);
  }
  for (int i = 0; i < s->nconn; i++)
    if (s->conn[i].state == C_MEMBER) answer(s, &s->conn[i]);
}

static int make_slots(rdv_server_t *s, int nranks) {
  s->nranks = nranks;
  s->joined = calloc((size_t)nranks, 1);
  s->table = calloc((size_t)nranks, sizeof *s->table);
  s->tree_ip = calloc((size_t)nranks, sizeof *s->tree_ip);
  s->tree_port = calloc((size_t)nranks, sizeof *s->tree_port);
  return s->joined && s->table && s->tree_ip && s->tree_port;
}

static void admit(rdv_server_t *s, rdv_conn_t *c, const rdv_hello_t *h) {
  memcpy(c->nc, h->nc, sizeof c->nc);
  s->hellos++;
  if (h->f.nranks > s->max_world) s->max_world = h->f.nranks;
  if (s->status != TUTTI_SUCCESS) {
    answer(s, c);
    return;
  }
  if (s->nranks < 0 && !make_slots(s, h->f.nranks)) {
    s->nranks = 0;
    refuse(s, TUTTI_ERR_SYSTEM, "the rendezvous ran out of memory");
  } else if (h->f.nranks != s->nranks || h->f.rank < 0 || h->f.rank >= s->nranks) {
    refuse(s, TUTTI_ERR_INVALID_USAGE, "ranks disagree on the world size: rank %d (pid %d) "
           "says %d ranks, an earlier rank says %d", h->f.rank, h->f.entry.pid, h->f.nranks,
           s->nranks);
  } else if (s->joined[h->f.rank]) {
    refuse(s, TUTTI_ERR_INVALID_USAGE, "rank %d joined twice (pids %d and %d)", h->f.rank,
           s->table[h->f.rank].pid, h->f.entry.pid);
  } else {
    c->state = C_MEMBER;
    c->rank = h->f.rank;
    c->local = h->f.entry.pid == (int32_t)getpid() && !strcmp(h->f.entry.host, s->host) &&
               !strcmp(h->f.entry.boot_id, s->boot_id);
    s->joined[c->rank] = 1;
    s->table[c->rank] = h->f.entry;
    s->tree_ip[c->rank] = h->f.tree_ip;
    s->tree_port[c->rank] = h->f.tree_port;
    s->arrived++;
    return;
  }
  answer(s, c);
}

static void reject(rdv_conn_t *c, const char *why) {
  char who[64];
  WARN("boot", -1, "rendezvous rejected a connection from %s: %s",
       tutti__auth_peer_name(c->fd, who, sizeof who), why);
  conn_close(c);
}

/* Reads what has arrived of c's hello; admits or rejects it once it is whole. */
static void read_hello(rdv_server_t *s, rdv_conn_t *c) {
  ssize_t k = recv(c->fd, (uint8_t *)&c->raw + c->got, sizeof c->raw - c->got, 0);
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (k <= 0) {
    char why[96];
    snprintf(why, sizeof why, "it closed after %zu of the hello's %zu bytes", c->got,
             sizeof c->raw);
    reject(c, why);
    return;
  }
  c->got += (size_t)k;
  if (c->got < sizeof c->raw) return;
  rdv_hello_t h;
  char why[320];
  rdv_hello_t raw = c->raw;
  if (!tutti__rdv_hello_parse(s->secret, c->na, &raw, sizeof raw, &h, why, sizeof why)) {
    reject(c, why);
    return;
  }
  admit(s, c, &h);
}

/* A member says nothing after its hello, so a readable member has gone (or misbehaves). */
static void member_readable(rdv_server_t *s, rdv_conn_t *c) {
  char byte;
  ssize_t k = recv(c->fd, &byte, 1, 0);
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  WARN("boot", -1, "rendezvous: rank %d (pid %d) %s before every rank joined; its place is "
       "free again", c->rank, s->table[c->rank].pid, k > 0 ? "spoke out of turn" : "left");
  s->joined[c->rank] = 0;
  s->arrived--;
  conn_close(c);
}

static rdv_conn_t *new_conn(rdv_server_t *s) {
  if (s->nconn == s->cap) {
    int cap = s->cap ? 2 * s->cap : 64;
    rdv_conn_t *nc = realloc(s->conn, (size_t)cap * sizeof *nc);
    if (!nc) return NULL;
    s->conn = nc;
    struct pollfd *np = realloc(s->pfd, (size_t)(cap + 1) * sizeof *np);
    if (!np) return NULL;
    s->pfd = np;
    s->cap = cap;
  }
  rdv_conn_t *c = &s->conn[s->nconn++];
  memset(c, 0, sizeof *c);
  c->rank = -1;
  return c;
}

/* A flood of strangers pushes out the oldest of them, never a member. */
static void limit_pending(rdv_server_t *s) {
  int pending = 0, oldest = -1;
  for (int i = 0; i < s->nconn; i++)
    if (s->conn[i].state == C_HELLO) {
      pending++;
      if (oldest < 0) oldest = i;
    }
  if (pending >= RDV_MAX_PENDING) reject(&s->conn[oldest], "too many connections owe a hello");
}

static void accept_new(rdv_server_t *s) {
  for (;;) {
    int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        INFO("boot", -1, "rendezvous: accept failed: %s", strerror(errno));
      return;
    }
    limit_pending(s);
    rdv_conn_t *c = new_conn(s);
    if (!c) {
      close(fd);
      return;
    }
    c->fd = fd;
    c->state = C_HELLO;
    c->deadline = tutti__now_ns() + RDV_HELLO_NS;
    rdv_challenge_t ch = {RDV_MAGIC, RDV_VERSION, {0}};
    if (tutti__auth_make_nonce(c->na) != TUTTI_SUCCESS) {
      reject(c, "no nonce could be made");
      continue;
    }
    memcpy(ch.na, c->na, sizeof ch.na);
    /* A fresh socket's send buffer is empty: the 40 bytes go at once or the peer is gone. */
    if (send(fd, &ch, sizeof ch, MSG_NOSIGNAL) != (ssize_t)sizeof ch)
      reject(c, "it did not take the challenge");
    else
      s->bytes_sent += sizeof ch;
  }
}

/* A failed rendezvous still answers hellos this long after its deadline. */
static int64_t lingering_end(const rdv_server_t *s) { return s->deadline + RDV_HELLO_NS; }

/* Every rank has joined: the table is final, and everyone gets it. */
static void complete(rdv_server_t *s) {
  s->complete = 1;
  if (tutti__auth_digest(s->table, (size_t)s->nranks * sizeof *s->table, s->table_digest) !=
      TUTTI_SUCCESS) {
    refuse(s, TUTTI_ERR_INTERNAL, "the rendezvous could not hash the address table");
    return;
  }
  /* The tree has what is left of the init deadline, but never less than a few seconds: a job
   * whose last rank came late is not failed for the few milliseconds the tree takes. */
  int64_t left = s->deadline - tutti__now_ns();
  int64_t floor_ns = (int64_t)(s->timeout_s * 1e9);
  if (floor_ns > RDV_TREE_FLOOR_NS) floor_ns = RDV_TREE_FLOOR_NS;
  s->tree_ns = (uint64_t)(left > floor_ns ? left : floor_ns);
  for (int i = 0; i < s->nconn; i++)
    if (s->conn[i].state == C_MEMBER) answer(s, &s->conn[i]);
  INFO("boot", -1, "rendezvous at %s: all %d ranks joined in %.3f s", s->addr, s->nranks,
       elapsed_s(s));
}

static void expire(rdv_server_t *s) {
  s->expired = 1;
  if (s->status != TUTTI_SUCCESS) return;
  if (s->nranks < 0) {
    refuse(s, TUTTI_ERR_TIMEOUT, "no rank joined within %.1f s", s->timeout_s);
    return;
  }
  char missing[200];
  missing_str(s, missing, sizeof missing);
  refuse(s, TUTTI_ERR_TIMEOUT, "only %d of %d ranks joined the rendezvous within %.1f s; "
         "missing: %s", s->arrived, s->nranks, s->timeout_s, missing);
}

/* Whether the server has said all it will: every answer is out, and no rank can still come
 * that needs one. */
static int finished(const rdv_server_t *s) {
  int pending = 0;
  for (int i = 0; i < s->nconn; i++) {
    if (s->conn[i].state == C_REPLY || s->conn[i].state == C_MEMBER) return 0;
    pending += s->conn[i].state == C_HELLO;
  }
  if (s->complete) return 1;
  if (s->status == TUTTI_SUCCESS && !s->expired) return 0;
  /* After a refusal, keep answering until everyone who could come has been told, or until
   * the deadline. */
  if (!s->expired && s->hellos < s->max_world) return 0;
  /* A connection still owing its hello may be a rank that a loaded machine has slowed: it is
   * told the reason too, rather than seeing the connection close, until its hello deadline. */
  return !pending || tutti__now_ns() >= lingering_end(s);
}

/* Its own rank is answered after every other, so this process cannot exit on its own
 * answer before the others have theirs. */
static int others_replying(const rdv_server_t *s) {
  for (int i = 0; i < s->nconn; i++)
    if (s->conn[i].state == C_REPLY && !s->conn[i].local) return 1;
  return 0;
}

static void drop_closed(rdv_server_t *s) {
  int n = 0;
  for (int i = 0; i < s->nconn; i++)
    if (s->conn[i].state != C_CLOSED) s->conn[n++] = s->conn[i];
  s->nconn = n;
}

/* One round: wait for any socket (or a deadline), then serve every one that is ready. */
static void serve_round(rdv_server_t *s) {
  int64_t now = tutti__now_ns(), wake = now + RDV_SLICE_MS * 1000000LL;
  int accepting = !s->complete && now < lingering_end(s);
  if (!s->complete && !s->expired && s->deadline < wake) wake = s->deadline;
  if (s->expired && lingering_end(s) < wake) wake = lingering_end(s);
  int64_t report = s->start + (int64_t)(s->next_report_s * 1e9);
  if (accepting && s->status == TUTTI_SUCCESS && report < wake) wake = report;
  int hold_local = others_replying(s);
  s->pfd[0] = (struct pollfd){s->lfd, (short)(accepting ? POLLIN : 0), 0};
  for (int i = 0; i < s->nconn; i++) {
    rdv_conn_t *c = &s->conn[i];
    short ev = c->state == C_REPLY ? (c->local && hold_local ? 0 : POLLOUT) : POLLIN;
    s->pfd[i + 1] = (struct pollfd){c->fd, ev, 0};
    if (c->state != C_MEMBER && c->deadline < wake) wake = c->deadline;
  }
  int ms = wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
  int nconn = s->nconn; /* accept_new may grow the array (and move pfd) */
  if (poll(s->pfd, (nfds_t)nconn + 1, ms) < 0 && errno != EINTR) return;
  short lrev = s->pfd[0].revents;
  for (int i = 0; i < nconn; i++) {
    rdv_conn_t *c = &s->conn[i];
    short rev = s->pfd[i + 1].revents;
    if (!rev) continue;
    if (c->state == C_HELLO) read_hello(s, c);
    else if (c->state == C_MEMBER) member_readable(s, c);
    else if (c->state == C_REPLY) write_answer(s, c);
  }
  if (lrev & POLLIN) accept_new(s);
  now = tutti__now_ns();
  for (int i = 0; i < s->nconn; i++) {
    rdv_conn_t *c = &s->conn[i];
    if (c->state == C_HELLO && now >= c->deadline) {
      char why[96];
      snprintf(why, sizeof why, "no complete hello within %.0f s (%zu of %zu bytes)",
               RDV_HELLO_NS / 1e9, c->got, sizeof c->raw);
      reject(c, why);
    } else if (c->state == C_REPLY && now >= c->deadline) {
      INFO("boot", -1, "rendezvous: rank %d did not take its answer in time", c->rank);
      conn_close(c);
    }
  }
  drop_closed(s);
}

static void *serve(void *arg) {
  rdv_server_t *s = arg;
  while (!finished(s)) {
    serve_round(s);
    if (!s->complete && s->status == TUTTI_SUCCESS && s->nranks > 0 &&
        s->arrived == s->nranks)
      complete(s);
    if (!s->complete && !s->expired && tutti__now_ns() >= s->deadline) expire(s);
    int waiting = !s->complete && !s->expired && s->status == TUTTI_SUCCESS;
    if (waiting && elapsed_s(s) >= s->next_report_s) {
      progress(s, "still waiting");
      s->next_report_s *= 2;
    }
    if (tutti__forensics_requested(&s->signals_seen))
      progress(s, waiting ? "SIGUSR1" : "SIGUSR1, answering");
  }
  for (int i = 0; i < s->nconn; i++) conn_close(&s->conn[i]);
  /* The fan-out's cost, which boot_check_fanout checks grows linearly in the ranks. */
  char digest[20];
  for (int i = 0; i < 8; i++) snprintf(digest + 2 * i, 3, "%02x", s->table_digest[i]);
  INFO("boot", -1, "rendezvous at %s: done after %.3f s: %zu bytes sent in all, for %d ranks "
       "(table digest %s)", s->addr, elapsed_s(s), s->bytes_sent, s->nranks,
       s->complete ? digest : "none");
  close(s->lfd);
  tutti__auth_cleanse(s->secret, sizeof s->secret);
  free(s->conn);
  free(s->pfd);
  free(s->joined);
  free(s->table);
  free(s->tree_ip);
  free(s->tree_port);
  free(s);
  tutti__auth_thread_stop();
  return NULL;
}

tutti_result_t tutti__rdv_serve(int lfd, const uint8_t secret[TUTTI_SECRET_BYTES],
                                double timeout_s) {
  /* Before the thread exists: libcrypto's set-up must not race the forks of ranks that often
   * follow tutti_get_unique_id. */
  TRY(tutti__auth_init());
  rdv_server_t *s = calloc(1, sizeof *s);
  if (!s) return TUTTI_ERR_SYSTEM;
  s->pfd = malloc(sizeof *s->pfd);
  struct sockaddr_in sa;
  socklen_t sl = sizeof sa;
  /* Names this job's shared segments and tags its data connections. */
  if (!s->pfd || getrandom(&s->job_id, sizeof s->job_id, 0) != sizeof s->job_id ||
      getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0) {
    free(s->pfd);
    free(s);
    return TUTTI_ERR_SYSTEM;
  }
  tutti__sock_addr_str(sa.sin_addr.s_addr, sa.sin_port, s->addr, sizeof s->addr);
  fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK); /* accept until EAGAIN */
  s->lfd = lfd;
  memcpy(s->secret, secret, TUTTI_SECRET_BYTES);
  s->timeout_s = timeout_s;
  s->start = tutti__now_ns();
  s->deadline = tutti__deadline_after(timeout_s);
  s->next_report_s = timeout_s / 2 < RDV_FIRST_REPORT_S ? timeout_s / 2 : RDV_FIRST_REPORT_S;
  s->signals_seen = tutti__forensics_signals();
  s->nranks = -1;
  tutti__host_identity(s->host, s->boot_id);
  pthread_t th;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&th, &attr, serve, s);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    free(s->pfd);
    free(s);
    return TUTTI_ERR_SYSTEM;
  }
  return TUTTI_SUCCESS;
}
