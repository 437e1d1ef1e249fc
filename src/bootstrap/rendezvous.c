/*
 * The rendezvous: a short-lived server thread in the process that made the unique id (or in
 * rank 0, for tutti_comm_init_env) that every rank connects to once. It checks that the ranks
 * agree before anyone proceeds, so a wrong world size or a duplicate rank fails on every rank
 * with the same sentence instead of hanging.
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
#include "core/sock.h"

#define RDV_MAGIC 0x74747472u /* "tttr" */
#define RDV_VERSION 1u

typedef struct rdv_hello {
  uint32_t magic;
  uint32_t version;
  int32_t nranks;
  int32_t rank;
  uint8_t secret[TUTTI_SECRET_BYTES];
  tutti_rdv_entry_t entry;
} rdv_hello_t;

typedef struct rdv_reply {
  uint32_t magic;
  int32_t status; /* a tutti_result_t */
  uint64_t job_id;
  int32_t nranks;
  char reason[300];
} rdv_reply_t;

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
  int *fd;                /* per rank, while waiting for the table */
  tutti_rdv_entry_t *table;
  tutti_result_t status;  /* first disagreement, or success */
  char reason[300];
} rdv_server_t;

static void send_reply(rdv_server_t *s, int fd) {
  rdv_reply_t r = {RDV_MAGIC, s->status, s->job_id, s->nranks, ""};
  snprintf(r.reason, sizeof r.reason, "%s", s->reason);
  char err[128];
  int64_t dl = tutti__now_ns() + 2000000000LL;
  if (tutti__sock_send_all(fd, &r, sizeof r, dl, err, sizeof err) != TUTTI_SUCCESS) return;
  if (s->status == TUTTI_SUCCESS)
    tutti__sock_send_all(fd, s->table, (size_t)s->nranks * sizeof *s->table, dl, err, sizeof err);
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
  for (int i = 0; s->fd && i < s->nranks; i++)
    if (s->fd[i] >= 0) {
      send_reply(s, s->fd[i]);
      close(s->fd[i]);
      s->fd[i] = -1;
    }
}

static void admit(rdv_server_t *s, int fd, const rdv_hello_t *h) {
  if (h->nranks > s->max_world) s->max_world = h->nranks;
  if (s->status != TUTTI_SUCCESS) {
    send_reply(s, fd);
    close(fd);
    return;
  }
  if (s->nranks < 0) {
    s->nranks = h->nranks;
    s->fd = malloc((size_t)s->nranks * sizeof *s->fd);
    s->table = calloc((size_t)s->nranks, sizeof *s->table);
    if (!s->fd || !s->table) {
      s->nranks = 0;
      refuse(s, TUTTI_ERR_SYSTEM, "the rendezvous ran out of memory");
      send_reply(s, fd);
      close(fd);
      return;
    }
    for (int i = 0; i < s->nranks; i++) s->fd[i] = -1;
  }
  if (h->nranks != s->nranks || h->rank < 0 || h->rank >= s->nranks) {
    refuse(s, TUTTI_ERR_INVALID_USAGE, "ranks disagree on the world size: rank %d (pid %d) "
           "says %d ranks, an earlier rank says %d", h->rank, h->entry.pid, h->nranks,
           s->nranks);
  } else if (s->fd[h->rank] >= 0) {
    refuse(s, TUTTI_ERR_INVALID_USAGE, "rank %d joined twice (pids %d and %d)", h->rank,
           s->table[h->rank].pid, h->entry.pid);
  } else {
    s->fd[h->rank] = fd;
    s->table[h->rank] = h->entry;
    s->arrived++;
    return;
  }
  send_reply(s, fd);
  close(fd);
}

static void finish(rdv_server_t *s) {
  if (s->status == TUTTI_SUCCESS && s->arrived < (s->nranks > 0 ? s->nranks : 1)) {
    char missing[200] = "";
    size_t used = 0;
    for (int i = 0; s->fd && i < s->nranks && used < sizeof missing - 16; i++)
      if (s->fd[i] < 0) used += (size_t)snprintf(missing + used, sizeof missing - used, "%s%d",
                                                 used ? ", " : "", i);
    refuse(s, TUTTI_ERR_TIMEOUT, "only %d of %d ranks joined within %.1f s; missing: %s",
           s->arrived, s->nranks, s->timeout_s, used ? missing : "all");
  } else if (s->status == TUTTI_SUCCESS) {
    for (int i = 0; i < s->nranks; i++) {
      send_reply(s, s->fd[i]);
      close(s->fd[i]);
    }
  }
}

static void *serve(void *arg) {
  rdv_server_t *s = arg;
  char err[256];
  for (;;) {
    if (s->status == TUTTI_SUCCESS && s->nranks > 0 && s->arrived == s->nranks) break;
    /* After a refusal, keep answering until everyone who could come has been told. */
    if (s->status != TUTTI_SUCCESS && s->hellos >= s->max_world) break;
    int fd;
    if (tutti__sock_accept(s->lfd, s->deadline, &fd, err, sizeof err) != TUTTI_SUCCESS) break;
    rdv_hello_t h;
    int64_t dl = tutti__now_ns() + 5000000000LL;
    if (tutti__sock_recv_all(fd, &h, sizeof h, dl, err, sizeof err) != TUTTI_SUCCESS ||
        h.magic != RDV_MAGIC || h.version != RDV_VERSION ||
        memcmp(h.secret, s->secret, TUTTI_SECRET_BYTES) != 0 || h.nranks < 1 ||
        h.nranks > TUTTI_MAX_RANKS) {
      WARN("boot", -1, "rendezvous dropped a connection that is not a rank of this job");
      close(fd);
      continue;
    }
    s->hellos++;
    admit(s, fd, &h);
  }
  finish(s);
  close(s->lfd);
  free(s->fd);
  free(s->table);
  free(s);
  return NULL;
}

tutti_result_t tutti__rdv_serve(int lfd, const uint8_t secret[TUTTI_SECRET_BYTES],
                                double timeout_s) {
  rdv_server_t *s = calloc(1, sizeof *s);
  if (!s) return TUTTI_ERR_SYSTEM;
  s->lfd = lfd;
  memcpy(s->secret, secret, TUTTI_SECRET_BYTES);
  s->timeout_s = timeout_s;
  s->deadline = tutti__deadline_after(timeout_s);
  s->nranks = -1;
  /* Names this job's shared segments and authenticates its data connections. */
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

tutti_result_t tutti__rdv_connect(uint32_t ip, uint16_t port, int64_t deadline, int *fd,
                                  uint32_t *local_ip, char *err, size_t errlen) {
  TRY(tutti__sock_connect(ip, port, deadline, 1, fd, err, errlen));
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

tutti_result_t tutti__rdv_exchange(int fd, const uint8_t secret[TUTTI_SECRET_BYTES], int nranks,
                                   int rank, const tutti_rdv_entry_t *me, int64_t deadline,
                                   tutti_rdv_entry_t **table, uint64_t *job_id, char *err,
                                   size_t errlen) {
  rdv_hello_t h = {RDV_MAGIC, RDV_VERSION, nranks, rank, {0}, *me};
  memcpy(h.secret, secret, TUTTI_SECRET_BYTES);
  TRY(tutti__sock_send_all(fd, &h, sizeof h, deadline, err, errlen));
  /* The server gives up at its own deadline and says why; allow it time to say so. */
  rdv_reply_t r;
  TRY(tutti__sock_recv_all(fd, &r, sizeof r, deadline + 3000000000LL, err, errlen));
  r.reason[sizeof r.reason - 1] = '\0';
  if (r.magic != RDV_MAGIC) {
    snprintf(err, errlen, "the rendezvous answered with garbage");
    return TUTTI_ERR_REMOTE;
  }
  if (r.status != TUTTI_SUCCESS) {
    snprintf(err, errlen, "%s", r.reason);
    return r.status > 0 && r.status <= TUTTI_ERR_INTERNAL ? (tutti_result_t)r.status
                                                          : TUTTI_ERR_REMOTE;
  }
  if (r.nranks != nranks) {
    snprintf(err, errlen, "the rendezvous answered for %d ranks, not %d", r.nranks, nranks);
    return TUTTI_ERR_INVALID_USAGE;
  }
  tutti_rdv_entry_t *t = malloc((size_t)nranks * sizeof *t);
  if (!t) {
    snprintf(err, errlen, "out of memory");
    return TUTTI_ERR_SYSTEM;
  }
  tutti_result_t res = tutti__sock_recv_all(fd, t, (size_t)nranks * sizeof *t,
                                            deadline + 3000000000LL, err, errlen);
  if (res != TUTTI_SUCCESS) {
    free(t);
    return res;
  }
  for (int i = 0; i < nranks; i++) {
    t[i].host[TUTTI_HOST_BYTES - 1] = '\0';
    t[i].boot_id[sizeof t[i].boot_id - 1] = '\0';
  }
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
