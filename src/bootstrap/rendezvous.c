/*
 * A rank's side of the rendezvous (the server is rdv_server.c): connect, prove the job
 * secret, wait for the answer, then take the address table down the tree (tree.c), saying at
 * the default log level what it waits for when that takes more than a few seconds, and on
 * SIGUSR1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rdv_wire.h"
#include "core/auth.h"
#include "core/forensics.h"
#include "core/sock.h"

/* Progress reports while a rank waits: the first after this long (or half the time to its
 * deadline, if sooner), then at twice the wait. */
#define FIRST_REPORT_S 5.0
/* The longest sleep between looks at the clock and at SIGUSR1. */
#define SLICE_NS 250000000LL
/* The server gives up at its own deadline and says why: a rank allows it this much longer. */
#define ANSWER_GRACE_NS 5000000000LL

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

void tutti__boot_waiter_init(tutti_boot_waiter_t *w, int rank, const char *where,
                             int64_t deadline) {
  int64_t now = tutti__now_ns();
  double half = (double)(deadline - now) / 2e9;
  *w = (tutti_boot_waiter_t){rank, where, now, half < FIRST_REPORT_S ? half : FIRST_REPORT_S,
                             tutti__forensics_signals()};
}

/* what: "... the rendezvous at ADDR", completed by how long it has been. */
void tutti__boot_waiter_tick(tutti_boot_waiter_t *w, const char *what) {
  double waited = (double)(tutti__now_ns() - w->start) / 1e9;
  if (waited >= w->next_report_s) {
    WARN("boot", w->rank, "%s %s (%.0f s so far)", what, w->where, waited);
    w->next_report_s *= 2;
  }
  if (tutti__forensics_requested(&w->seen)) {
    tutti__log_enabled(TUTTI_LOG_WARN, "report"); /* sets up the log line's host name */
    tutti__log_write(TUTTI_LOG_WARN, "report", w->rank, "---- wait report (SIGUSR1): in the "
                     "rendezvous: %s %s (%.1f s so far) ----", what, w->where, waited);
  }
}

tutti_result_t tutti__rdv_connect(uint32_t ip, uint16_t port, int rank, int64_t deadline,
                                  int retry, int *fd, uint32_t *local_ip, char *err,
                                  size_t errlen) {
  char where[64];
  tutti_boot_waiter_t w;
  tutti__boot_waiter_init(&w, rank, tutti__sock_addr_str(ip, port, where, sizeof where), deadline);
  for (;;) {
    /* Short steps, so that a rendezvous not up yet is reported while it is awaited. */
    int64_t step = retry ? min64(deadline, tutti__now_ns() + SLICE_NS) : deadline;
    tutti_result_t res = tutti__sock_connect(ip, port, step, retry, fd, err, errlen);
    if (res == TUTTI_SUCCESS) break;
    if (res != TUTTI_ERR_TIMEOUT || !retry || tutti__now_ns() >= deadline) return res;
    tutti__boot_waiter_tick(&w, "waiting for rank 0 to start the rendezvous at");
  }
  struct sockaddr_in sa;
  socklen_t sl = sizeof sa;
  if (getsockname(*fd, (struct sockaddr *)&sa, &sl) != 0) {
    close(*fd);
    snprintf(err, errlen, "getsockname failed");
    return TUTTI_ERR_SYSTEM;
  }
  *local_ip = sa.sin_addr.s_addr;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__boot_await(int fd, tutti_boot_waiter_t *w, const char *what,
                                 int64_t deadline, char *err, size_t errlen) {
  for (;;) {
    int64_t now = tutti__now_ns();
    if (now >= deadline) return TUTTI_ERR_TIMEOUT;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int64_t wake = min64(deadline, now + SLICE_NS);
    int rc = poll(&p, 1, (int)((wake - now + 999999) / 1000000));
    if (rc > 0) return TUTTI_SUCCESS;
    if (rc < 0 && errno != EINTR) {
      snprintf(err, errlen, "poll failed: %s", strerror(errno));
      return TUTTI_ERR_SYSTEM;
    }
    tutti__boot_waiter_tick(w, what);
  }
}

/* Answers the server's challenge with this rank's hello; nc receives this rank's nonce. */
static tutti_result_t send_hello(int fd, const uint8_t secret[TUTTI_SECRET_BYTES], int nranks,
                                 int rank, const tutti_rdv_entry_t *me, uint16_t tree_port,
                                 int64_t deadline,
                                 uint8_t na[TUTTI_AUTH_NONCE_BYTES],
                                 uint8_t nc[TUTTI_AUTH_NONCE_BYTES], char *err, size_t errlen) {
  rdv_challenge_t ch;
  /* The server challenges every connection at once; a slow machine may still delay it. */
  TRY(tutti__sock_recv_all(fd, &ch, sizeof ch, deadline + ANSWER_GRACE_NS, err, errlen));
  TRY(tutti__rdv_challenge_parse(&ch, sizeof ch, na, err, errlen));
  rdv_hello_t h;
  memset(&h, 0, sizeof h);
  h.f = (rdv_hello_fields_t){RDV_MAGIC, RDV_VERSION, nranks, rank, *me, me->ip, tree_port, 0};
  struct iovec part = {&h.f, sizeof h.f};
  if (tutti__auth_make_nonce(nc) != TUTTI_SUCCESS ||
      tutti__auth_proof(secret, TUTTI_AUTH_CONNECTOR, na, nc, &part, 1, h.proof) !=
          TUTTI_SUCCESS) {
    snprintf(err, errlen, "cannot compute the proof of the job secret (libcrypto failed)");
    return TUTTI_ERR_INTERNAL;
  }
  memcpy(h.nc, nc, sizeof h.nc);
  return tutti__sock_send_all(fd, &h, sizeof h, deadline, err, errlen);
}

/* Sends the hello (announcing the tree listener at tree_port) and takes the rendezvous's
 * answer: *r, and the table for the tree's root. */
static tutti_result_t rendezvous(int fd, const uint8_t secret[TUTTI_SECRET_BYTES], int nranks,
                                 int rank, const tutti_rdv_entry_t *me, uint16_t tree_port,
                                 int64_t deadline, rdv_reply_t *r, tutti_rdv_entry_t **table,
                                 char *err, size_t errlen) {
  uint8_t na[TUTTI_AUTH_NONCE_BYTES], nc[TUTTI_AUTH_NONCE_BYTES];
  TRY(send_hello(fd, secret, nranks, rank, me, tree_port, deadline, na, nc, err, errlen));
  char where[64] = "(address unknown: the connection is gone)";
  struct sockaddr_in sa;
  socklen_t sl = sizeof sa;
  if (getpeername(fd, (struct sockaddr *)&sa, &sl) == 0)
    tutti__sock_addr_str(sa.sin_addr.s_addr, sa.sin_port, where, sizeof where);
  tutti_boot_waiter_t w;
  tutti__boot_waiter_init(&w, rank, where, deadline);
  char what[96];
  snprintf(what, sizeof what, "waiting for all %d ranks to join the rendezvous at", nranks);
  int64_t answer_deadline = deadline + ANSWER_GRACE_NS;
  tutti_result_t res = tutti__boot_await(fd, &w, what, answer_deadline, err, errlen);
  if (res == TUTTI_ERR_TIMEOUT) {
    snprintf(err, errlen, "the rendezvous at %s did not answer by this rank's init deadline "
             "(TUTTI_INIT_TIMEOUT and %.0f s more): not every rank joined (its log names the "
             "missing ones)", where, ANSWER_GRACE_NS / 1e9);
    return res;
  }
  rdv_reply_t head;
  if (res == TUTTI_SUCCESS)
    res = tutti__sock_recv_all(fd, &head, sizeof head, answer_deadline, err, errlen);
  if (res == TUTTI_ERR_REMOTE) {
    /* A server that rejects a hello closes without a word: it gives a stranger nothing. */
    snprintf(err, errlen, "the rendezvous closed the connection after this rank's hello: it "
             "did not accept this rank's proof of the job secret (a unique id or TUTTI_SECRET "
             "of another job?), or it exited");
    return res;
  }
  TRY(res);
  /* The rest of the answer is as long as the reply and this rank's own nranks say. */
  size_t len = tutti__rdv_answer_bytes(&head, sizeof head, nranks);
  uint8_t *answer = malloc(len);
  if (!answer) {
    snprintf(err, errlen, "out of memory");
    return TUTTI_ERR_SYSTEM;
  }
  memcpy(answer, &head, sizeof head);
  res = tutti__sock_recv_all(fd, answer + sizeof head, len - sizeof head, answer_deadline, err,
                             errlen);
  if (res == TUTTI_SUCCESS)
    res = tutti__rdv_answer_parse(secret, na, nc, nranks, answer, len, r, table, err, errlen);
  free(answer);
  if (res == TUTTI_SUCCESS && r->parent != tutti__tree_parent(rank)) {
    free(*table);
    *table = NULL;
    snprintf(err, errlen, "the rendezvous named rank %d as this rank's parent in the bootstrap "
             "tree, not rank %d", r->parent, tutti__tree_parent(rank));
    res = TUTTI_ERR_REMOTE;
  }
  return res;
}

/* The longest the tree may take after the answer, whatever the server says. */
#define TREE_BUDGET_MAX_NS 3600000000000LL

tutti_result_t tutti__rdv_exchange(int fd, const uint8_t secret[TUTTI_SECRET_BYTES], int nranks,
                                   int rank, const tutti_rdv_entry_t *me, int64_t deadline,
                                   tutti_rdv_entry_t **table, uint64_t *job_id, char *err,
                                   size_t errlen) {
  int64_t t0 = tutti__now_ns();
  int lfd = -1;
  uint16_t tree_port;
  rdv_reply_t r;
  tutti_rdv_entry_t *t = NULL;
  /* The tree listener exists before the hello announces it, so a child that has its answer
   * can always connect: a refusal means this rank is gone. A rank has at most two children. */
  tutti_result_t res = tutti__sock_listen(me->ip, 0, 16, &lfd, &tree_port, err, errlen);
  if (res != TUTTI_SUCCESS) {
    char why[200];
    snprintf(why, sizeof why, "%s", err);
    snprintf(err, errlen, "cannot open this rank's bootstrap tree listener: %s", why);
    return res;
  }
  res = rendezvous(fd, secret, nranks, rank, me, tree_port, deadline, &r, &t, err, errlen);
  int64_t t_answer = tutti__now_ns();
  if (res == TUTTI_SUCCESS) {
    int64_t budget = r.tree_ns > (uint64_t)TREE_BUDGET_MAX_NS ? TREE_BUDGET_MAX_NS
                                                              : (int64_t)r.tree_ns;
    tutti_tree_job_t job = {secret, r.job_id, nranks, rank, r.digest, r.parent,
                            &r.parent_entry, r.parent_tree_ip, r.parent_tree_port, me, lfd,
                            t_answer + budget};
    res = tutti__tree_run(&job, &t, err, errlen);
  }
  close(lfd);
  if (res != TUTTI_SUCCESS) return res;
  /* What this rank holds, hashed again: boot_check_fanout compares it with the server's. */
  uint8_t d[TUTTI_AUTH_PROOF_BYTES];
  char hex[20] = "?";
  if (tutti__auth_digest(t, (size_t)nranks * sizeof *t, d) == TUTTI_SUCCESS)
    for (int i = 0; i < 8; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
  char from[48] = "the rendezvous";
  if (r.parent >= 0) snprintf(from, sizeof from, "rank %d, its parent in the tree", r.parent);
  INFO("boot", rank, "rank %d has the address table of %d ranks (digest %s) from %s; "
       "rendezvous %.3f s, tree %.3f s", rank, nranks, hex, from, (double)(t_answer - t0) / 1e9,
       (double)(tutti__now_ns() - t_answer) / 1e9);
  *table = t;
  *job_id = r.job_id;
  return TUTTI_SUCCESS;
}

void tutti__host_identity(char host[TUTTI_HOST_BYTES], char boot_id[40]) {
  if (gethostname(host, TUTTI_HOST_BYTES) != 0) strcpy(host, "unknown");
  host[TUTTI_HOST_BYTES - 1] = '\0';
  memset(boot_id, 0, 40);
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(boot_id, 40, f)) boot_id[0] = '\0';
    fclose(f);
    boot_id[strcspn(boot_id, "\n")] = '\0';
  }
}
