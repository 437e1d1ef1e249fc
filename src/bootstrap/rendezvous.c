/*
 * The rendezvous: a short-lived server thread in the process that made the unique id (or in
 * rank 0, for tutti_comm_init_env) that every rank connects to once. It checks that the ranks
 * agree before anyone proceeds, so a wrong world size or a duplicate rank fails on every rank
 * with the same sentence instead of hanging.
 *
 * Every connection is authenticated both ways (core/auth.h): the server opens with a fresh
 * nonce, the rank's hello carries an HMAC of it under the job secret, and the server's answer
 * carries an HMAC of the rank's nonce, the answer and the table's digest. A stranger, a rank
 * of another job or a replayed hello is logged and dropped without disturbing the job, and a
 * rank never believes a table that does not come from its own job's rendezvous.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rdv_wire.h"
#include "core/auth.h"
#include "core/sock.h"

/* How long a connection may take to send its hello; a silent stranger holds the server up
 * this long at most. */
#define RDV_HELLO_NS 5000000000LL

/* One authenticated connection and the nonces its answer must be bound to. */
typedef struct rdv_peer {
  int fd;
  uint8_t na[TUTTI_AUTH_NONCE_BYTES];
  uint8_t nc[TUTTI_AUTH_NONCE_BYTES];
} rdv_peer_t;

typedef struct rdv_server {
  int lfd;
  uint8_t secret[TUTTI_SECRET_BYTES];
  double timeout_s;
  int64_t deadline;
  int nranks;             /* from the first hello; -1 before */
  int arrived;            /* ranks admitted to a slot */
  int hellos;             /* valid hellos received, admitted or not */
  uint64_t job_id;
  int max_world;          /* largest world size any hello claimed */
  rdv_peer_t *peer;       /* per rank, while waiting for the table; fd -1 when empty */
  tutti_rdv_entry_t *table;
  uint8_t table_digest[TUTTI_AUTH_PROOF_BYTES]; /* SHA-256 of table, once it is full */
  tutti_result_t status;  /* first disagreement, or success */
  char reason[300];
} rdv_server_t;

static void send_reply(rdv_server_t *s, const rdv_peer_t *c) {
  rdv_reply_t r = {RDV_MAGIC, s->status, s->job_id, s->nranks, ""};
  snprintf(r.reason, sizeof r.reason, "%s", s->reason);
  int ok = s->status == TUTTI_SUCCESS;
  struct iovec parts[2] = {{&r, sizeof r}, {s->table_digest, sizeof s->table_digest}};
  uint8_t proof[TUTTI_AUTH_PROOF_BYTES];
  if (tutti__auth_proof(s->secret, TUTTI_AUTH_ACCEPTOR, c->na, c->nc, parts, ok ? 2 : 1,
                        proof) != TUTTI_SUCCESS)
    return; /* the rank sees the connection close and fails */
  char err[128];
  int64_t dl = tutti__now_ns() + 2000000000LL;
  if (tutti__sock_send_all(c->fd, &r, sizeof r, dl, err, sizeof err) != TUTTI_SUCCESS) return;
  if (ok && tutti__sock_send_all(c->fd, s->table, (size_t)s->nranks * sizeof *s->table, dl, err,
                                 sizeof err) != TUTTI_SUCCESS)
    return;
  tutti__sock_send_all(c->fd, proof, sizeof proof, dl, err, sizeof err);
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
  for (int i = 0; s->peer && i < s->nranks; i++)
    if (s->peer[i].fd >= 0) {
      send_reply(s, &s->peer[i]);
      close(s->peer[i].fd);
      s->peer[i].fd = -1;
    }
}

static void admit(rdv_server_t *s, const rdv_peer_t *c, const rdv_hello_t *h) {
  if (h->f.nranks > s->max_world) s->max_world = h->f.nranks;
  if (s->status != TUTTI_SUCCESS) {
    send_reply(s, c);
    close(c->fd);
    return;
  }
  if (s->nranks < 0) {
    s->nranks = h->f.nranks;
    s->peer = malloc((size_t)s->nranks * sizeof *s->peer);
    s->table = calloc((size_t)s->nranks, sizeof *s->table);
    if (!s->peer || !s->table) {
      s->nranks = 0;
      refuse(s, TUTTI_ERR_SYSTEM, "the rendezvous ran out of memory");
      send_reply(s, c);
      close(c->fd);
      return;
    }
    for (int i = 0; i < s->nranks; i++) s->peer[i].fd = -1;
  }
  if (h->f.nranks != s->nranks || h->f.rank < 0 || h->f.rank >= s->nranks) {
    refuse(s, TUTTI_ERR_INVALID_USAGE, "ranks disagree on the world size: rank %d (pid %d) "
           "says %d ranks, an earlier rank says %d", h->f.rank, h->f.entry.pid, h->f.nranks,
           s->nranks);
  } else if (s->peer[h->f.rank].fd >= 0) {
    refuse(s, TUTTI_ERR_INVALID_USAGE, "rank %d joined twice (pids %d and %d)", h->f.rank,
           s->table[h->f.rank].pid, h->f.entry.pid);
  } else {
    s->peer[h->f.rank] = *c;
    s->table[h->f.rank] = h->f.entry;
    s->arrived++;
    return;
  }
  send_reply(s, c);
  close(c->fd);
}

static void finish(rdv_server_t *s) {
  if (s->status == TUTTI_SUCCESS && s->arrived < (s->nranks > 0 ? s->nranks : 1)) {
    char missing[200] = "";
    size_t used = 0;
    for (int i = 0; s->peer && i < s->nranks && used < sizeof missing - 16; i++)
      if (s->peer[i].fd < 0) used += (size_t)snprintf(missing + used, sizeof missing - used,
                                                      "%s%d", used ? ", " : "", i);
    refuse(s, TUTTI_ERR_TIMEOUT, "only %d of %d ranks joined within %.1f s; missing: %s",
           s->arrived, s->nranks, s->timeout_s, used ? missing : "all");
  } else if (s->status == TUTTI_SUCCESS) {
    if (tutti__auth_digest(s->table, (size_t)s->nranks * sizeof *s->table, s->table_digest) !=
        TUTTI_SUCCESS) {
      refuse(s, TUTTI_ERR_INTERNAL, "the rendezvous could not hash the address table");
      return;
    }
    for (int i = 0; i < s->nranks; i++) {
      send_reply(s, &s->peer[i]);
      close(s->peer[i].fd);
    }
  }
}

/* Challenges the new connection c->fd and reads its hello into h within RDV_HELLO_NS. Returns
 * 1 when the hello proves the job secret and is well formed (c->nc then holds the rank's
 * nonce); else logs why and returns 0, leaving c->fd for the caller to close. */
static int receive_hello(rdv_server_t *s, rdv_peer_t *c, rdv_hello_t *h) {
  char err[256], why[320], who[64];
  int64_t dl = tutti__now_ns() + RDV_HELLO_NS;
  rdv_challenge_t ch = {RDV_MAGIC, RDV_VERSION, {0}};
  rdv_hello_t raw;
  if (tutti__auth_make_nonce(c->na) != TUTTI_SUCCESS) {
    snprintf(why, sizeof why, "no nonce could be made");
    goto reject;
  }
  memcpy(ch.na, c->na, sizeof ch.na);
  if (tutti__sock_send_all(c->fd, &ch, sizeof ch, dl, err, sizeof err) != TUTTI_SUCCESS ||
      tutti__sock_recv_all(c->fd, &raw, sizeof raw, dl, err, sizeof err) != TUTTI_SUCCESS) {
    snprintf(why, sizeof why, "no complete hello: %s", err);
    goto reject;
  }
  if (!tutti__rdv_hello_parse(s->secret, c->na, &raw, sizeof raw, h, why, sizeof why))
    goto reject;
  memcpy(c->nc, h->nc, sizeof c->nc);
  return 1;
reject:
  WARN("boot", -1, "rendezvous rejected a connection from %s: %s",
       tutti__auth_peer_name(c->fd, who, sizeof who), why);
  return 0;
}

static void *serve(void *arg) {
  rdv_server_t *s = arg;
  char err[256];
  for (;;) {
    if (s->status == TUTTI_SUCCESS && s->nranks > 0 && s->arrived == s->nranks) break;
    /* After a refusal, keep answering until everyone who could come has been told. */
    if (s->status != TUTTI_SUCCESS && s->hellos >= s->max_world) break;
    rdv_peer_t c;
    if (tutti__sock_accept(s->lfd, s->deadline, &c.fd, err, sizeof err) != TUTTI_SUCCESS) break;
    rdv_hello_t h;
    if (!receive_hello(s, &c, &h)) {
      close(c.fd);
      continue;
    }
    s->hellos++;
    admit(s, &c, &h);
  }
  finish(s);
  close(s->lfd);
  tutti__auth_cleanse(s->secret, sizeof s->secret);
  free(s->peer);
  free(s->table);
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
  s->lfd = lfd;
  memcpy(s->secret, secret, TUTTI_SECRET_BYTES);
  s->timeout_s = timeout_s;
  s->deadline = tutti__deadline_after(timeout_s);
  s->nranks = -1;
  /* Names this job's shared segments and tags its data connections. */
  if (getrandom(&s->job_id, sizeof s->job_id, 0) != sizeof s->job_id) {
    free(s);
    return TUTTI_ERR_SYSTEM;
  }
  pthread_t th;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&th, &attr, serve, s);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    free(s);
    return TUTTI_ERR_SYSTEM;
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__rdv_connect(uint32_t ip, uint16_t port, int64_t deadline, int retry,
                                  int *fd, uint32_t *local_ip, char *err, size_t errlen) {
  TRY(tutti__sock_connect(ip, port, deadline, retry, fd, err, errlen));
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

/* Answers the server's challenge with this rank's hello; nc receives this rank's nonce. */
static tutti_result_t send_hello(int fd, const uint8_t secret[TUTTI_SECRET_BYTES], int nranks,
                                 int rank, const tutti_rdv_entry_t *me, int64_t deadline,
                                 uint8_t na[TUTTI_AUTH_NONCE_BYTES],
                                 uint8_t nc[TUTTI_AUTH_NONCE_BYTES], char *err, size_t errlen) {
  rdv_challenge_t ch;
  /* The server serves one connection at a time; allow it until its own deadline and then
   * some to reach this one. */
  TRY(tutti__sock_recv_all(fd, &ch, sizeof ch, deadline + 3000000000LL, err, errlen));
  TRY(tutti__rdv_challenge_parse(&ch, sizeof ch, na, err, errlen));
  rdv_hello_t h;
  memset(&h, 0, sizeof h);
  h.f = (rdv_hello_fields_t){RDV_MAGIC, RDV_VERSION, nranks, rank, *me};
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

tutti_result_t tutti__rdv_exchange(int fd, const uint8_t secret[TUTTI_SECRET_BYTES], int nranks,
                                   int rank, const tutti_rdv_entry_t *me, int64_t deadline,
                                   tutti_rdv_entry_t **table, uint64_t *job_id, char *err,
                                   size_t errlen) {
  uint8_t na[TUTTI_AUTH_NONCE_BYTES], nc[TUTTI_AUTH_NONCE_BYTES];
  TRY(send_hello(fd, secret, nranks, rank, me, deadline, na, nc, err, errlen));
  /* The server gives up at its own deadline and says why; allow it time to say so. */
  int64_t answer_deadline = deadline + 3000000000LL;
  rdv_reply_t r;
  tutti_result_t res = tutti__sock_recv_all(fd, &r, sizeof r, answer_deadline, err, errlen);
  if (res == TUTTI_ERR_REMOTE) {
    /* A server that rejects a hello closes without a word: it gives a stranger nothing. */
    snprintf(err, errlen, "the rendezvous closed the connection after this rank's hello: it "
             "did not accept this rank's proof of the job secret (a unique id or TUTTI_SECRET "
             "of another job?), or it exited");
    return res;
  }
  TRY(res);
  /* The rest of the answer is as long as the reply and this rank's own nranks say. */
  size_t len = tutti__rdv_answer_bytes(&r, sizeof r, nranks);
  uint8_t *answer = malloc(len);
  if (!answer) {
    snprintf(err, errlen, "out of memory");
    return TUTTI_ERR_SYSTEM;
  }
  memcpy(answer, &r, sizeof r);
  res = tutti__sock_recv_all(fd, answer + sizeof r, len - sizeof r, answer_deadline, err,
                             errlen);
  if (res == TUTTI_SUCCESS)
    res = tutti__rdv_answer_parse(secret, na, nc, nranks, answer, len, table, job_id, err,
                                  errlen);
  free(answer);
  return res;
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
