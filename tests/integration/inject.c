/* The fault driver, the plan and the verified all-reduce data of kill_check and stop_check. */
#include "inject.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

const char *inject_prog = "inject";
int inject_rank = -1;

void inject_fail(const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s rank %d: FAIL: %s\n", inject_prog, inject_rank, msg);
  fflush(NULL);
  exit(1);
}

int64_t inject_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_until(int64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

static int read_full(int fd, void *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, (char *)buf + got, len - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    got += (size_t)n;
  }
  return 0;
}

static void signal_victim(const inject_plan_t *p, int sig, int64_t planned) {
  pid_t pid = (pid_t)p->pids[p->victim];
  int rc = kill(pid, sig);
  int64_t late = inject_now_ns() - planned;
  printf("%s driver: sent %s to rank %lld (pid %d), %.1f ms after the planned instant%s\n",
         inject_prog, sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", (long long)p->victim,
         (int)pid, (double)late / 1e6, rc == 0 ? "" : " (kill failed)");
  fflush(stdout);
}

/* The driver process: waits for the plan, then signals the victim at the planned instants. */
static void driver(int fd) {
  alarm(120); /* a driver that waits forever must not outlive the test */
  inject_plan_t p;
  if (read_full(fd, &p, sizeof p) != 0) _exit(0); /* rank 0 failed before the plan: nothing */
  close(fd);
  sleep_until(p.fault_ns);
  signal_victim(&p, (int)p.sig, p.fault_ns);
  if (p.hold_ns > 0) {
    sleep_until(p.fault_ns + p.hold_ns);
    signal_victim(&p, SIGCONT, p.fault_ns + p.hold_ns);
  }
  _exit(0);
}

int inject_start_driver(void) {
  const char *r = getenv("TUTTI_RANK");
  if (!r || strcmp(r, "0") != 0) return -1;
  int fds[2];
  if (pipe(fds) != 0) inject_fail("pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) inject_fail("fork: %s", strerror(errno));
  if (pid == 0) {
    close(fds[1]);
    driver(fds[0]);
  }
  close(fds[0]);
  return fds[1];
}

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void must(tutti_result_t rc, tutti_comm_t comm, const char *what) {
  if (rc != TUTTI_SUCCESS)
    inject_fail("%s: %s: %s", what, tutti_result_string(rc), tutti_comm_last_error(comm));
}

void inject_make_plan(tutti_comm_t comm, int driver_fd, const char *seed_env, int sig,
                      double min_delay_s, double max_delay_s, double hold_s,
                      inject_plan_t *plan) {
  int nranks;
  must(tutti_comm_size(comm, &nranks), comm, "tutti_comm_size");
  if (nranks > INJECT_MAX_RANKS || nranks < 2) inject_fail("run with 2 to 64 ranks");
  int32_t me = (int32_t)getpid(), pids[INJECT_MAX_RANKS];
  must(tutti_allgather(&me, pids, 1, TUTTI_INT32, comm), comm, "all-gather of the pids");
  memset(plan, 0, sizeof *plan);
  if (inject_rank == 0) {
    const char *s = getenv(seed_env);
    uint64_t seed;
    if (s && *s) {
      seed = strtoull(s, NULL, 0);
    } else if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) {
      inject_fail("getrandom: %s", strerror(errno));
    }
    uint64_t st = seed;
    plan->seed = seed;
    plan->victim = (int64_t)(splitmix64(&st) % (uint64_t)nranks);
    double u = (double)(splitmix64(&st) >> 11) / 9007199254740992.0; /* [0, 1) */
    double delay_s = min_delay_s + u * (max_delay_s - min_delay_s);
    plan->fault_ns = inject_now_ns() + (int64_t)(delay_s * 1e9);
    plan->hold_ns = (int64_t)(hold_s * 1e9);
    plan->sig = sig;
    plan->nranks = nranks;
    for (int i = 0; i < nranks; i++) plan->pids[i] = pids[i];
  }
  must(tutti_broadcast(plan, plan, sizeof *plan, TUTTI_UINT8, 0, comm), comm,
       "broadcast of the plan");
  if (inject_rank == 0) {
    if (write(driver_fd, plan, sizeof *plan) != (ssize_t)sizeof *plan)
      inject_fail("cannot hand the plan to the driver: %s", strerror(errno));
    close(driver_fd);
  }
  if (plan->pids[inject_rank] != me) inject_fail("the broadcast plan has a wrong pid for me");
  printf("%s rank %d: seed %llu (set %s=%llu to repeat): %s rank %lld (pid %lld) %.3f s from "
         "now\n",
         inject_prog, inject_rank, (unsigned long long)plan->seed, seed_env,
         (unsigned long long)plan->seed, sig == SIGKILL ? "SIGKILL" : "SIGSTOP",
         (long long)plan->victim, (long long)plan->pids[plan->victim],
         (double)(plan->fault_ns - inject_now_ns()) / 1e9);
}

void inject_data_init(inject_data_t *d, size_t count, int nranks) {
  d->count = count;
  d->send = malloc(count * sizeof(float));
  d->recv = malloc(count * sizeof(float));
  if (!d->send || !d->recv) inject_fail("out of memory for %zu floats", count);
  /* Rank r's element with residue c = (13 i + iter) mod 17 is (7 r + c) mod 17; the sum over
   * the ranks depends on c alone. */
  for (int c = 0; c < 17; c++) {
    int sum = 0;
    for (int r = 0; r < nranks; r++) sum += (7 * r + c) % 17;
    d->table[c] = (float)sum;
  }
}

/* The residue (13 i + iter) mod 17 is stepped, not divided, so 16M elements stay cheap on an
 * oversubscribed machine. */
void inject_fill(inject_data_t *d, int rank, int iter) {
  float mine[17];
  for (int c = 0; c < 17; c++) mine[c] = (float)((7 * rank + c) % 17);
  int c = iter % 17;
  for (size_t i = 0; i < d->count; i++) {
    d->send[i] = mine[c];
    c += 13;
    if (c >= 17) c -= 17;
  }
}

void inject_verify(const inject_data_t *d, int iter) {
  int c = iter % 17;
  for (size_t i = 0; i < d->count; i++) {
    if (memcmp(&d->recv[i], &d->table[c], sizeof(float)) != 0)
      inject_fail("all-reduce %d: element %zu is %g, want %g (not bit-exact)", iter, i,
                  (double)d->recv[i], (double)d->table[c]);
    c += 13;
    if (c >= 17) c -= 17;
  }
}

int inject_has(const char *text, const char *needle) {
  return text && strstr(text, needle) != NULL;
}

void inject_check_names(const char *err, int victim, long long pid, unsigned seq) {
  char host[256] = "", who[512], seqs[32];
  gethostname(host, sizeof host);
  host[sizeof host - 1] = '\0';
  snprintf(who, sizeof who, "rank %d (pid %lld on host %s)", victim, pid, host);
  snprintf(seqs, sizeof seqs, "#%u", seq);
  if (!inject_has(err, who)) inject_fail("the last error does not name \"%s\": %s", who, err);
  if (!inject_has(err, "allreduce")) inject_fail("the last error names no operation: %s", err);
  if (!inject_has(err, seqs))
    inject_fail("the last error does not give the call's sequence number %s: %s", seqs, err);
}

double inject_check_after_failure(tutti_comm_t comm, double destroy_within_s) {
  int64_t t0 = inject_now_ns();
  int one = 1, sum = 0;
  tutti_result_t rc = tutti_allreduce(&one, &sum, 1, TUTTI_INT32, TUTTI_SUM, comm);
  double dt = (double)(inject_now_ns() - t0) / 1e9;
  if (rc != TUTTI_ERR_INVALID_USAGE)
    inject_fail("a further all-reduce returned %s after %.3f s, want %s", tutti_result_string(rc),
                dt, tutti_result_string(TUTTI_ERR_INVALID_USAGE));
  t0 = inject_now_ns();
  rc = tutti_comm_destroy(comm);
  dt = (double)(inject_now_ns() - t0) / 1e9;
  if (rc != TUTTI_SUCCESS) inject_fail("tutti_comm_destroy returned %s", tutti_result_string(rc));
  if (dt > destroy_within_s)
    inject_fail("tutti_comm_destroy took %.3f s, want < %.1f s", dt, destroy_within_s);
  return dt;
}

tutti_comm_t inject_init(int *nranks) {
  tutti_comm_t comm;
  tutti_result_t rc = tutti_comm_init_env(&comm);
  if (rc != TUTTI_SUCCESS) inject_fail("tutti_comm_init_env: %s", tutti_result_string(rc));
  tutti_comm_rank(comm, &inject_rank);
  tutti_comm_size(comm, nranks);
  return comm;
}
