/*
 * The distribution tree: after the rendezvous, the address table goes from rank 0 (which the
 * server gave it) down a binary tree of the ranks: rank r's children are 2r + 1 and 2r + 2.
 * Each rank connects to its parent's tree listener (announced in its hello, handed to the
 * child by the server), takes the table and hands it to its own children over its own
 * listener. The server so sends O(n) bytes instead of the whole table to every rank, and no
 * rank sends more than two tables.
 *
 * Trust: a child proves the job secret to its parent (a stranger gets nothing) and the parent
 * proves it back over its verdict (a stranger cannot fail a rank); the table is believed only
 * if it hashes to the digest the server signed for the child, so no rank can alter it.
 *
 * Breaks: a parent that is gone refuses the connection or closes it; one that is stopped or
 * hung is given up on at a deadline. The rank just below the break names it and passes the
 * same sentence on to its children, and they to theirs, so every rank below fails naming the
 * rank that broke, and none hangs. Deadlines count from the server's answer plus its budget
 * (what is left of TUTTI_INIT_TIMEOUT, at least 5 s) and grow by TREE_STEP_NS per level, so the
 * rank just below a stalled one gives up first and its sentence reaches the deeper ranks
 * before they would give up themselves. A parent whose child never comes for the table (dead,
 * stopped) fails too, naming the child.
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
#include <sys/uio.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rdv_wire.h"
#include "core/auth.h"
#include "core/sock.h"

#define TREE_FANOUT 2
/* How much longer each level of the tree waits than the one above it. */
#define TREE_STEP_NS 2000000000LL
/* How long a connection to a parent may take to send its hello (strangers' cost). */
#define TREE_HELLO_NS 5000000000LL
/* Connections a parent serves at once; past this the oldest still owing a hello is dropped. */
#define TREE_MAX_CONN 64
/* poll's longest sleep: how soon SIGUSR1 and a dead child are noticed. */
#define TREE_SLICE_MS 250

int tutti__tree_parent(int rank) { return rank <= 0 ? -1 : (rank - 1) / TREE_FANOUT; }

int tutti__tree_depth(int rank) {
  int d = 0;
  for (; rank > 0; rank = tutti__tree_parent(rank)) d++;
  return d;
}

static const char *desc(int rank, const tutti_rdv_entry_t *e, char *buf, size_t len) {
  if (e) snprintf(buf, len, "rank %d (pid %d on %s)", rank, (int)e->pid, e->host);
  else snprintf(buf, len, "rank %d", rank);
  return buf;
}

/* ---- A child's side ------------------------------------------------------------------ */

/* Why a child's exchange with its parent failed, beyond the result: the connection failed or
 * timed out (IO), the parent said something invalid (BAD), or it proved the tree broke above
 * it (RELAYED: its sentence is passed on unchanged). */
enum { F_IO, F_BAD, F_RELAYED };

/* Sends the tree hello on fd after reading the parent's challenge; na and nc get the nonces. */
static tutti_result_t hello_parent(const tutti_tree_job_t *j, int fd, tutti_boot_waiter_t *w,
                                   const char *what, int64_t deadline,
                                   uint8_t na[TUTTI_AUTH_NONCE_BYTES],
                                   uint8_t nc[TUTTI_AUTH_NONCE_BYTES], int *kind, char *err,
                                   size_t errlen) {
  rdv_challenge_t ch;
  TRY(tutti__boot_await(fd, w, what, deadline, err, errlen));
  TRY(tutti__sock_recv_all(fd, &ch, sizeof ch, deadline, err, errlen));
  *kind = F_BAD;
  TRY(tutti__tree_challenge_parse(&ch, sizeof ch, na, err, errlen));
  *kind = F_IO;
  tree_hello_t h;
  memset(&h, 0, sizeof h);
  h.f = (tree_hello_fields_t){TREE_MAGIC, j->rank, j->job_id};
  struct iovec part = {&h.f, sizeof h.f};
  if (tutti__auth_make_nonce(nc) != TUTTI_SUCCESS ||
      tutti__auth_proof(j->secret, TUTTI_AUTH_CONNECTOR, na, nc, &part, 1, h.proof) !=
          TUTTI_SUCCESS) {
    snprintf(err, errlen, "cannot compute the proof of the job secret (libcrypto failed)");
    return TUTTI_ERR_INTERNAL;
  }
  memcpy(h.nc, nc, sizeof h.nc);
  return tutti__sock_send_all(fd, &h, sizeof h, deadline, err, errlen);
}

/* Reads the parent's whole answer on fd; *kind says why it failed (F_RELAYED: the parent's
 * proven word that the tree broke above it, its sentence then in err unchanged). */
static tutti_result_t read_verdict(const tutti_tree_job_t *j, int fd, tutti_boot_waiter_t *w,
                                   const char *what, int64_t deadline,
                                   const uint8_t na[TUTTI_AUTH_NONCE_BYTES],
                                   const uint8_t nc[TUTTI_AUTH_NONCE_BYTES],
                                   tutti_rdv_entry_t **table, int *kind, char *err,
                                   size_t errlen) {
  tree_verdict_t v;
  TRY(tutti__boot_await(fd, w, what, deadline, err, errlen));
  TRY(tutti__sock_recv_all(fd, &v, sizeof v, deadline, err, errlen));
  /* The rest is as long as the verdict and this rank's own nranks say. */
  size_t len = tutti__tree_verdict_bytes(&v, sizeof v, j->nranks);
  uint8_t *buf = malloc(len);
  if (!buf) {
    snprintf(err, errlen, "out of memory for the address table");
    return TUTTI_ERR_SYSTEM;
  }
  memcpy(buf, &v, sizeof v);
  tutti_result_t res =
      tutti__sock_recv_all(fd, buf + sizeof v, len - sizeof v, deadline, err, errlen);
  if (res == TUTTI_SUCCESS) {
    int relayed = 0;
    res = tutti__tree_verdict_parse(j->secret, na, nc, j->job_id, j->nranks, j->digest, buf,
                                    len, table, &relayed, err, errlen);
    *kind = relayed ? F_RELAYED : F_BAD;
  }
  free(buf);
  return res;
}

/* Takes the table from the parent. On failure err names the rank where the tree broke. */
static tutti_result_t fetch(const tutti_tree_job_t *j, tutti_rdv_entry_t **table, char *err,
                            size_t errlen) {
  char who[128], where[64], what[224], why[256];
  desc(j->parent, j->parent_entry, who, sizeof who);
  tutti__sock_addr_str(j->parent_ip, j->parent_port, where, sizeof where);
  int64_t start = tutti__now_ns();
  int64_t deadline = j->base + tutti__tree_depth(j->rank) * TREE_STEP_NS;
  int fd = -1;
  tutti_result_t res = tutti__sock_connect(j->parent_ip, j->parent_port, deadline, 0, &fd, why,
                                           sizeof why);
  if (res != TUTTI_SUCCESS && (res != TUTTI_ERR_TIMEOUT || tutti__now_ns() < deadline)) {
    /* Its listener was open before its hello, and it closes only after its children are
     * served: a refusal means the process is gone. */
    snprintf(err, errlen, "%s, the parent of rank %d in the bootstrap tree, is gone: its tree "
             "listener at %s cannot be reached (%.80s)", who, j->rank, where, why);
    return TUTTI_ERR_REMOTE;
  }
  tutti_boot_waiter_t w;
  tutti__boot_waiter_init(&w, j->rank, where, deadline);
  snprintf(what, sizeof what, "waiting for %s, its parent in the bootstrap tree, to pass on "
           "the address table, at", who);
  uint8_t na[TUTTI_AUTH_NONCE_BYTES], nc[TUTTI_AUTH_NONCE_BYTES];
  int kind = F_IO;
  if (res == TUTTI_SUCCESS)
    res = hello_parent(j, fd, &w, what, deadline, na, nc, &kind, why, sizeof why);
  if (res == TUTTI_SUCCESS)
    res = read_verdict(j, fd, &w, what, deadline, na, nc, table, &kind, why, sizeof why);
  if (fd >= 0) close(fd);
  if (res == TUTTI_SUCCESS || kind == F_RELAYED) {
    snprintf(err, errlen, "%s", why);
    return res;
  }
  if (res == TUTTI_ERR_TIMEOUT)
    snprintf(err, errlen, "%s, the parent of rank %d in the bootstrap tree, did not pass on the "
             "address table within %.1f s: it is stopped or hung", who, j->rank,
             (double)(tutti__now_ns() - start) / 1e9);
  else if (kind == F_IO)
    snprintf(err, errlen, "%s, the parent of rank %d in the bootstrap tree, broke the "
             "connection before passing on the address table (%.60s): it died or failed", who,
             j->rank, why);
  else
    snprintf(err, errlen, "%s, the parent of rank %d in the bootstrap tree, did not pass on a "
             "valid address table: %.120s", who, j->rank, why);
  return res == TUTTI_ERR_TIMEOUT ? res : TUTTI_ERR_REMOTE;
}

/* ---- A parent's side ----------------------------------------------------------------- */

enum { T_HELLO, T_SEND, T_CLOSED };

typedef struct tree_conn {
  int fd, state;
  int child;        /* T_SEND: index among this rank's children */
  int64_t deadline; /* T_HELLO: for its hello */
  uint8_t na[TUTTI_AUTH_NONCE_BYTES];
  size_t got, sent;
  tree_hello_t raw;
  tree_verdict_t v;
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES];
} tree_conn_t;

typedef struct tree_server {
  const tutti_tree_job_t *j;
  const tutti_rdv_entry_t *table; /* NULL when this rank could not get it */
  tutti_result_t verdict;
  const char *reason;
  int first, nkids;          /* children: first .. first + nkids - 1 */
  int done[TREE_FANOUT];     /* 1: served; -1: gone before it had the table */
  int busy[TREE_FANOUT];     /* a connection is being sent the answer */
  tree_conn_t conn[TREE_MAX_CONN];
  int nconn;
  struct pollfd pfd[TREE_MAX_CONN + 1];
} tree_server_t;

static void conn_drop(tree_conn_t *c, int rank, const char *why) {
  if (why) {
    char who[64];
    WARN("boot", rank, "bootstrap tree: rejected a connection from %s: %s",
         tutti__auth_peer_name(c->fd, who, sizeof who), why);
  }
  close(c->fd);
  c->fd = -1;
  c->state = T_CLOSED;
}

static void accept_new(tree_server_t *t) {
  for (;;) {
    int fd = accept4(t->j->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    if (t->nconn == TREE_MAX_CONN) {
      /* A flood of strangers pushes out the oldest of them, never a child being served. */
      int i = 0;
      while (i < t->nconn && t->conn[i].state != T_HELLO) i++;
      if (i == t->nconn) {
        close(fd);
        continue;
      }
      conn_drop(&t->conn[i], t->j->rank, "too many connections owe a hello");
      t->conn[i] = t->conn[--t->nconn];
    }
    tree_conn_t *c = &t->conn[t->nconn++];
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->state = T_HELLO;
    c->deadline = tutti__now_ns() + TREE_HELLO_NS;
    rdv_challenge_t ch = {TREE_MAGIC, RDV_VERSION, {0}};
    if (tutti__auth_make_nonce(c->na) != TUTTI_SUCCESS) {
      conn_drop(c, t->j->rank, "no nonce could be made");
      continue;
    }
    memcpy(ch.na, c->na, sizeof ch.na);
    /* A fresh socket's send buffer is empty: the 40 bytes go at once or the peer is gone. */
    if (send(fd, &ch, sizeof ch, MSG_NOSIGNAL) != (ssize_t)sizeof ch)
      conn_drop(c, t->j->rank, "it did not take the challenge");
  }
}

/* Reads what has arrived of c's hello; once whole, c is a child to answer or is dropped. */
static void read_hello(tree_server_t *t, tree_conn_t *c) {
  ssize_t k = recv(c->fd, (uint8_t *)&c->raw + c->got, sizeof c->raw - c->got, 0);
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (k <= 0) {
    conn_drop(c, t->j->rank, "it closed before its hello");
    return;
  }
  c->got += (size_t)k;
  if (c->got < sizeof c->raw) return;
  tree_hello_t h;
  char why[200];
  if (!tutti__tree_hello_parse(t->j->secret, c->na, t->j->job_id, &c->raw, sizeof c->raw, &h,
                               why, sizeof why)) {
    conn_drop(c, t->j->rank, why);
    return;
  }
  int k2 = h.f.rank - t->first;
  if (k2 < 0 || k2 >= t->nkids || t->done[k2] || t->busy[k2]) {
    snprintf(why, sizeof why, "rank %d is not a child of this rank still owed the table",
             h.f.rank);
    conn_drop(c, t->j->rank, why);
    return;
  }
  c->child = k2;
  t->busy[k2] = 1;
  memset(&c->v, 0, sizeof c->v);
  c->v.magic = TREE_MAGIC;
  c->v.status = t->verdict;
  c->v.job_id = t->j->job_id;
  snprintf(c->v.reason, sizeof c->v.reason, "%s", t->verdict == TUTTI_SUCCESS ? "" : t->reason);
  struct iovec part = {&c->v, sizeof c->v};
  if (tutti__auth_proof(t->j->secret, TUTTI_AUTH_ACCEPTOR, c->na, h.nc, &part, 1, c->proof) !=
      TUTTI_SUCCESS) {
    t->busy[k2] = 0;
    conn_drop(c, t->j->rank, "no proof could be made (libcrypto failed)");
    return;
  }
  c->state = T_SEND;
  c->sent = 0;
}

/* Sends what the socket takes of c's answer: the verdict, the table on success, the proof. */
static void write_answer(tree_server_t *t, tree_conn_t *c) {
  size_t table_bytes = t->verdict == TUTTI_SUCCESS ? (size_t)t->j->nranks * sizeof *t->table : 0;
  size_t lens[3] = {sizeof c->v, table_bytes, sizeof c->proof};
  const void *bases[3] = {&c->v, t->table, c->proof};
  int r = tutti__sock_send_parts(c->fd, bases, lens, 3, &c->sent);
  if (r == 0) return;
  if (r < 0) {
    t->done[c->child] = -1;
    conn_drop(c, t->j->rank, NULL);
    return;
  }
  t->done[c->child] = 1;
  conn_drop(c, t->j->rank, NULL);
}

/* 1 when child k is known to be dead: same host (host name and boot id) and no such pid. */
static int child_dead(const tree_server_t *t, int k) {
  if (!t->table) return 0;
  const tutti_rdv_entry_t *e = &t->table[t->first + k], *me = t->j->me;
  if (strcmp(e->host, me->host) || strcmp(e->boot_id, me->boot_id)) return 0;
  return kill(e->pid, 0) != 0 && errno == ESRCH;
}

/* Whether every child has had its answer (or is beyond having one). */
static int all_done(const tree_server_t *t) {
  for (int k = 0; k < t->nkids; k++)
    if (!t->done[k]) return 0;
  return 1;
}

/* One round: wait for the listener or a connection (or a slice), then serve what is ready. */
static void serve_round(tree_server_t *t, int64_t deadline) {
  int64_t now = tutti__now_ns(), wake = now + TREE_SLICE_MS * 1000000LL;
  if (deadline < wake) wake = deadline;
  t->pfd[0] = (struct pollfd){t->j->lfd, POLLIN, 0};
  for (int i = 0; i < t->nconn; i++) {
    tree_conn_t *c = &t->conn[i];
    t->pfd[i + 1] = (struct pollfd){c->fd, c->state == T_SEND ? POLLOUT : POLLIN, 0};
    if (c->state == T_HELLO && c->deadline < wake) wake = c->deadline;
  }
  int ms = wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
  int nconn = t->nconn;
  if (poll(t->pfd, (nfds_t)nconn + 1, ms) < 0 && errno != EINTR) return;
  for (int i = 0; i < nconn; i++) {
    tree_conn_t *c = &t->conn[i];
    if (!t->pfd[i + 1].revents) continue;
    if (c->state == T_HELLO) read_hello(t, c);
    else if (c->state == T_SEND) write_answer(t, c);
  }
  now = tutti__now_ns();
  for (int i = 0; i < nconn; i++)
    if (t->conn[i].state == T_HELLO && now >= t->conn[i].deadline)
      conn_drop(&t->conn[i], t->j->rank, "no complete hello in time");
  int n = 0;
  for (int i = 0; i < t->nconn; i++)
    if (t->conn[i].state != T_CLOSED) t->conn[n++] = t->conn[i];
  t->nconn = n;
  if (t->pfd[0].revents & POLLIN) accept_new(t);
  for (int k = 0; k < t->nkids; k++)
    if (!t->done[k] && !t->busy[k] && child_dead(t, k)) t->done[k] = -1;
}

/* Hands the verdict (and the table, if it is a success) to every child. Returns the verdict
 * when it is a failure; else a failure naming a child that never took the table. */
static tutti_result_t serve(const tutti_tree_job_t *j, const tutti_rdv_entry_t *table,
                            tutti_result_t verdict, char *err, size_t errlen) {
  tree_server_t *t = calloc(1, sizeof *t);
  if (!t) {
    if (verdict != TUTTI_SUCCESS) return verdict;
    snprintf(err, errlen, "out of memory for the bootstrap tree");
    return TUTTI_ERR_SYSTEM;
  }
  *t = (tree_server_t){.j = j, .table = table, .verdict = verdict, .reason = err};
  long first = (long)TREE_FANOUT * j->rank + 1;
  t->first = first < j->nranks ? (int)first : j->nranks;
  t->nkids = j->nranks - t->first < TREE_FANOUT ? j->nranks - t->first : TREE_FANOUT;
  int64_t deadline = j->base + (tutti__tree_depth(j->rank) + 1) * TREE_STEP_NS;
  char where[64], what[160];
  uint16_t port = 0;
  struct sockaddr_in sa;
  socklen_t sl = sizeof sa;
  if (getsockname(j->lfd, (struct sockaddr *)&sa, &sl) == 0) port = sa.sin_port;
  tutti_boot_waiter_t w;
  tutti__boot_waiter_init(&w, j->rank, tutti__sock_addr_str(j->me->ip, port, where,
                                                            sizeof where), deadline);
  snprintf(what, sizeof what, "waiting for ranks %d-%d, its children in the bootstrap tree, "
           "to take the address table at", t->first, t->first + t->nkids - 1);
  fcntl(j->lfd, F_SETFL, fcntl(j->lfd, F_GETFL) | O_NONBLOCK);
  while (!all_done(t) && tutti__now_ns() < deadline) {
    serve_round(t, deadline);
    tutti__boot_waiter_tick(&w, what);
  }
  for (int i = 0; i < t->nconn; i++) conn_drop(&t->conn[i], j->rank, NULL);
  tutti_result_t res = verdict;
  for (int k = 0; k < t->nkids && res == TUTTI_SUCCESS; k++) {
    if (t->done[k] == 1) continue;
    char who[128];
    desc(t->first + k, table ? &table[t->first + k] : NULL, who, sizeof who);
    if (t->done[k] < 0)
      snprintf(err, errlen, "%s, a child of rank %d in the bootstrap tree, died before taking "
               "the address table", who, j->rank);
    else
      snprintf(err, errlen, "%s, a child of rank %d in the bootstrap tree, did not come for the "
               "address table in time: it is stopped, hung or dead", who, j->rank);
    res = TUTTI_ERR_REMOTE;
  }
  free(t);
  return res;
}

tutti_result_t tutti__tree_run(const tutti_tree_job_t *job, tutti_rdv_entry_t **table,
                               char *err, size_t errlen) {
  tutti_result_t res = TUTTI_SUCCESS;
  if (job->parent >= 0) {
    *table = NULL;
    res = fetch(job, table, err, errlen);
  }
  /* A rank that could not get the table still tells its children why, at once. */
  res = serve(job, res == TUTTI_SUCCESS ? *table : NULL, res, err, errlen);
  if (res != TUTTI_SUCCESS) {
    free(*table);
    *table = NULL;
  }
  return res;
}
