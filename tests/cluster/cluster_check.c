/*
 * cluster_check: the rank program of tests/cluster/cluster_test.sh, one process per rank on
 * namespace "hosts" (written against include/tutti.h only; references from
 * tests/integration/ref.c, which computes every expected value from the regenerated inputs of
 * all ranks, never from the library).
 *
 *   cluster_check coll [--algos auto,ring,...] [--small N] [--medium N]
 *       For each algorithm in turn: a fresh communicator with TUTTI_ALGO set to it (rendezvous
 *       port = TUTTI_ADDR's port + the algorithm's index, so one job walks the whole list),
 *       then every collective (cluster_colls.c) at a small and a medium count, checked
 *       element for element on every rank. A forced algorithm that does not implement a
 *       collective falls back to auto in the library; the check is the same.
 *   cluster_check kill --victim V
 *       A verified all-reduce loop; rank V SIGKILLs itself before its 6th call. Every other
 *       rank must fail with TUTTI_ERR_REMOTE, and its error must name "rank V (pid P on host
 *       H)" with V's real pid and hostname (all-gathered at the start). The survivors then
 *       call tutti_comm_shrink and check an all-reduce on the result, across the hosts.
 *   cluster_check partition
 *       A verified all-reduce loop (prints "looping" once it runs) until a call fails; the
 *       script cuts one host off meanwhile. The failure must be TUTTI_ERR_TIMEOUT or
 *       TUTTI_ERR_REMOTE, come within TUTTI_TIMEOUT + 10 s of the call's start and name a rank;
 *       a timeout must also name the call ("#N").
 *   cluster_check split
 *       tutti_comm_split by rank parity (each half spans hosts) and tutti_comm_dup, each then
 *       checked with an all-reduce; prints what every step returned.
 * Exit status 0 when every check held; every rank prints "cluster_check rank R: PASS ..." or
 * a FAIL line. A watchdog alarm (CLUSTER_CHECK_WATCHDOG seconds, default 240) turns a hang
 * into a failure.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_check.h"

int cc_rank = -1, cc_nranks;

void cc_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stdout, "cluster_check rank %d: FAIL: ", cc_rank);
  vfprintf(stdout, fmt, ap);
  fputc('\n', stdout);
  va_end(ap);
  exit(1);
}

double cc_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void cc_ok(tutti_result_t rc, tutti_comm_t comm, const char *what) {
  if (rc != TUTTI_SUCCESS)
    cc_fail("%s returned %s: %s", what, tutti_result_string(rc),
            comm ? tutti_comm_last_error(comm) : "(no communicator)");
}

/* Joins the job with TUTTI_ALGO=algo at the rendezvous port offset by index. */
static tutti_comm_t join(const char *algo, int index) {
  static char base[256];
  if (!base[0]) {
    const char *a = getenv("TUTTI_ADDR");
    if (!a || !strchr(a, ':')) cc_fail("TUTTI_ADDR is not host:port");
    snprintf(base, sizeof base, "%s", a);
  }
  char addr[300];
  const char *colon = strrchr(base, ':');
  snprintf(addr, sizeof addr, "%.*s:%d", (int)(colon - base), base, atoi(colon + 1) + index);
  setenv("TUTTI_ADDR", addr, 1);
  setenv("TUTTI_ALGO", algo, 1);
  tutti_comm_t comm = NULL;
  tutti_result_t rc = tutti_comm_init_env(&comm);
  if (rc != TUTTI_SUCCESS)
    cc_fail("tutti_comm_init_env (TUTTI_ALGO=%s, TUTTI_ADDR=%s) returned %s: %s", algo, addr,
            tutti_result_string(rc), tutti_last_init_error());
  cc_ok(tutti_comm_rank(comm, &cc_rank), comm, "tutti_comm_rank");
  cc_ok(tutti_comm_size(comm, &cc_nranks), comm, "tutti_comm_size");
  return comm;
}

static int mode_coll(const char *algos, size_t small, size_t medium) {
  char list[512];
  snprintf(list, sizeof list, "%s", algos);
  int index = 0;
  long total = 0;
  for (char *save = NULL, *a = strtok_r(list, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
    double t0 = cc_now();
    tutti_comm_t comm = join(a, index++);
    long cases = cc_run_colls(comm, small, medium);
    cc_ok(tutti_comm_destroy(comm), NULL, "tutti_comm_destroy");
    if (cc_rank == 0)
      printf("cluster_check: algo %-18s %ld cases on %d ranks, %.2f s\n", a, cases, cc_nranks,
             cc_now() - t0);
    total += cases;
  }
  printf("cluster_check rank %d: PASS: %ld cases, algorithms %s\n", cc_rank, total, algos);
  return 0;
}

/* Every rank's pid and hostname, all-gathered. */
typedef struct {
  long long pid;
  char host[56];
} who_t;

static void gather_who(tutti_comm_t comm, who_t *all) {
  who_t me = {.pid = (long long)getpid()};
  gethostname(me.host, sizeof me.host - 1);
  cc_ok(tutti_allgather(&me, all, sizeof me, TUTTI_UINT8, comm), comm, "all-gather of pids");
}

/* One verified float32 all-reduce of small integers (exact in any order). */
static tutti_result_t verified_allreduce(tutti_comm_t comm, float *send, float *recv,
                                         size_t count, int iter) {
  for (size_t i = 0; i < count; i++) send[i] = (float)((cc_rank * 7 + (int)i + iter) % 13);
  tutti_result_t rc = tutti_allreduce(send, recv, count, TUTTI_FLOAT32, TUTTI_SUM, comm);
  if (rc != TUTTI_SUCCESS) return rc;
  for (size_t i = 0; i < count; i++) {
    int want = 0;
    for (int r = 0; r < cc_nranks; r++) want += (r * 7 + (int)i + iter) % 13;
    if (recv[i] != (float)want)
      cc_fail("all-reduce %d: element %zu is %g, want %d", iter, i, recv[i], want);
  }
  return rc;
}

#define LOOP_COUNT (64 * 1024)

static void check_sub(tutti_comm_t sub, const int *members, int m, const char *what);

static int mode_kill(int victim) {
  tutti_comm_t comm = join("auto", 0);
  if (victim <= 0 || victim >= cc_nranks) cc_fail("--victim %d: want 1..%d", victim, cc_nranks - 1);
  who_t *all = calloc((size_t)cc_nranks, sizeof *all);
  float *send = malloc(LOOP_COUNT * sizeof *send), *recv = malloc(LOOP_COUNT * sizeof *recv);
  if (!all || !send || !recv) cc_fail("out of memory");
  gather_who(comm, all);
  tutti_result_t rc = TUTTI_SUCCESS;
  int iter = 0;
  double t_call = 0;
  for (; iter < 1000; iter++) {
    if (cc_rank == victim && iter == 5) {
      printf("cluster_check rank %d: killing myself (pid %lld on host %s)\n", cc_rank,
             all[victim].pid, all[victim].host);
      fflush(stdout);
      raise(SIGKILL);
    }
    t_call = cc_now();
    rc = verified_allreduce(comm, send, recv, LOOP_COUNT, iter);
    if (rc != TUTTI_SUCCESS) break;
  }
  const char *err = tutti_comm_last_error(comm);
  double dt = cc_now() - t_call;
  printf("cluster_check rank %d (host %s): all-reduce %d returned %s after %.3f s: %s\n",
         cc_rank, all[cc_rank].host, iter, tutti_result_string(rc), dt, err);
  if (iter < 5) cc_fail("the loop failed before rank %d was killed", victim);
  if (rc != TUTTI_ERR_REMOTE) cc_fail("got %s, want a remote failure", tutti_result_string(rc));
  char who[160];
  snprintf(who, sizeof who, "rank %d (pid %lld on host %s)", victim, all[victim].pid,
           all[victim].host);
  if (!strstr(err, who)) cc_fail("the error does not name \"%s\"", who);
  /* The survivors shrink across the hosts (issue 14 item 5: the new communicator's
   * rendezvous must listen where the other hosts reach this rank, with no interface
   * variable) and the result must work: ranks above the victim move down by one. */
  tutti_comm_t shrunk = NULL;
  double t0 = cc_now();
  rc = tutti_comm_shrink(comm, &shrunk);
  printf("cluster_check rank %d: tutti_comm_shrink returned %s after %.2f s%s%s\n", cc_rank,
         tutti_result_string(rc), cc_now() - t0, rc ? ": " : "",
         rc ? tutti_comm_last_error(comm) : "");
  cc_ok(rc, comm, "tutti_comm_shrink");
  int sr = -1, sn = 0, members[CC_MAX_RANKS], m = 0;
  cc_ok(tutti_comm_rank(shrunk, &sr), shrunk, "tutti_comm_rank");
  cc_ok(tutti_comm_size(shrunk, &sn), shrunk, "tutti_comm_size");
  for (int r = 0; r < cc_nranks; r++)
    if (r != victim) members[m++] = r;
  if (sn != m || sr != cc_rank - (cc_rank > victim))
    cc_fail("shrink: rank %d of %d, want %d of %d", sr, sn, cc_rank - (cc_rank > victim), m);
  check_sub(shrunk, members, m, "shrunk");
  cc_ok(tutti_comm_destroy(shrunk), NULL, "tutti_comm_destroy (shrunk)");
  tutti_comm_destroy(comm);
  free(all);
  free(send);
  free(recv);
  printf("cluster_check rank %d: PASS: rank %d's death named, shrunk across hosts\n", cc_rank,
         victim);
  return 0;
}

static int mode_partition(void) {
  tutti_comm_t comm = join("auto", 0);
  const char *tv = getenv("TUTTI_TIMEOUT");
  double timeout_s = tv ? atof(tv) : 600;
  float *send = malloc(LOOP_COUNT * sizeof *send), *recv = malloc(LOOP_COUNT * sizeof *recv);
  if (!send || !recv) cc_fail("out of memory");
  tutti_result_t rc = TUTTI_SUCCESS;
  int iter = 0;
  double t_call = 0, t_start = cc_now();
  for (;; iter++) {
    if (iter == 1) printf("cluster_check rank %d: looping\n", cc_rank);
    if (cc_now() - t_start > 120) cc_fail("no failure after 120 s");
    t_call = cc_now();
    rc = verified_allreduce(comm, send, recv, LOOP_COUNT, iter);
    if (rc != TUTTI_SUCCESS) break;
  }
  char host[64] = "";
  gethostname(host, sizeof host - 1);
  const char *err = tutti_comm_last_error(comm);
  double dt = cc_now() - t_call;
  printf("cluster_check rank %d (host %s): all-reduce %d returned %s after %.3f s: %s\n",
         cc_rank, host, iter, tutti_result_string(rc), dt, err);
  if (rc != TUTTI_ERR_TIMEOUT && rc != TUTTI_ERR_REMOTE)
    cc_fail("got %s, want a timeout or a remote failure", tutti_result_string(rc));
  if (dt > timeout_s + 10) cc_fail("the failure took %.1f s (TUTTI_TIMEOUT %.0f)", dt, timeout_s);
  if (!strstr(err, "rank ")) cc_fail("the error names no rank");
  char seq[32];
  snprintf(seq, sizeof seq, "#%d", iter + 1);
  if (rc == TUTTI_ERR_TIMEOUT && !strstr(err, seq)) cc_fail("the timeout does not name %s", seq);
  tutti_comm_destroy(comm);
  free(send);
  free(recv);
  printf("cluster_check rank %d: PASS: %s named\n", cc_rank, tutti_result_string(rc));
  return 0;
}

/* All-reduce (SUM, int32) of rank-dependent values over sub, against the sum over the parent
 * ranks listed in members. */
static void check_sub(tutti_comm_t sub, const int *members, int m, const char *what) {
  int32_t v[3] = {cc_rank + 1, 2 * cc_rank, -cc_rank}, got[3], want[3] = {0, 0, 0};
  for (int i = 0; i < m; i++) {
    want[0] += members[i] + 1;
    want[1] += 2 * members[i];
    want[2] -= members[i];
  }
  double t0 = cc_now();
  tutti_result_t rc = tutti_allreduce(v, got, 3, TUTTI_INT32, TUTTI_SUM, sub);
  printf("cluster_check rank %d: %s all-reduce returned %s after %.2f s%s%s\n", cc_rank, what,
         tutti_result_string(rc), cc_now() - t0, rc ? ": " : "",
         rc ? tutti_comm_last_error(sub) : "");
  cc_ok(rc, sub, what);
  if (memcmp(got, want, sizeof got) != 0)
    cc_fail("%s all-reduce: {%d,%d,%d}, want {%d,%d,%d}", what, got[0], got[1], got[2], want[0],
            want[1], want[2]);
}

static int mode_split(void) {
  tutti_comm_t comm = join("auto", 0);
  tutti_comm_t half = NULL, dup = NULL;
  int members[CC_MAX_RANKS], m = 0;
  for (int r = cc_rank % 2; r < cc_nranks; r += 2) members[m++] = r;
  double t0 = cc_now();
  tutti_result_t rc = tutti_comm_split(comm, cc_rank % 2, -cc_rank, &half);
  printf("cluster_check rank %d: tutti_comm_split returned %s after %.2f s%s%s\n", cc_rank,
         tutti_result_string(rc), cc_now() - t0, rc ? ": " : "",
         rc ? tutti_comm_last_error(comm) : "");
  cc_ok(rc, comm, "tutti_comm_split");
  int hr = -1, hn = 0;
  cc_ok(tutti_comm_rank(half, &hr), half, "tutti_comm_rank");
  cc_ok(tutti_comm_size(half, &hn), half, "tutti_comm_size");
  /* Keys are -rank: the highest parent rank of each half comes first. */
  int want_r = 0;
  for (int i = 0; i < m; i++) want_r += members[i] > cc_rank;
  if (hn != m || hr != want_r) cc_fail("split: rank %d of %d, want %d of %d", hr, hn, want_r, m);
  check_sub(half, members, m, "split half");
  t0 = cc_now();
  rc = tutti_comm_dup(comm, &dup);
  printf("cluster_check rank %d: tutti_comm_dup returned %s after %.2f s%s%s\n", cc_rank,
         tutti_result_string(rc), cc_now() - t0, rc ? ": " : "",
         rc ? tutti_comm_last_error(comm) : "");
  cc_ok(rc, comm, "tutti_comm_dup");
  int all[CC_MAX_RANKS];
  for (int r = 0; r < cc_nranks; r++) all[r] = r;
  check_sub(dup, all, cc_nranks, "dup");
  cc_ok(tutti_comm_destroy(dup), NULL, "tutti_comm_destroy (dup)");
  cc_ok(tutti_comm_destroy(half), NULL, "tutti_comm_destroy (half)");
  cc_ok(tutti_comm_destroy(comm), NULL, "tutti_comm_destroy");
  printf("cluster_check rank %d: PASS: split and dup across hosts\n", cc_rank);
  return 0;
}

static void usage(void) {
  fprintf(stderr, "usage: cluster_check coll [--algos a,b] [--small N] [--medium N] | kill "
                  "--victim V | partition | split\n");
  exit(2);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *wd = getenv("CLUSTER_CHECK_WATCHDOG");
  alarm(wd ? (unsigned)atoi(wd) : 240);
  if (argc < 2) usage();
  const char *algos = "auto";
  size_t small = 1031, medium = 131075;
  int victim = -1;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--algos") && i + 1 < argc)
      algos = argv[++i];
    else if (!strcmp(argv[i], "--small") && i + 1 < argc)
      small = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--medium") && i + 1 < argc)
      medium = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--victim") && i + 1 < argc)
      victim = atoi(argv[++i]);
    else
      usage();
  }
  if (!strcmp(argv[1], "coll")) return mode_coll(algos, small, medium);
  if (!strcmp(argv[1], "kill")) return mode_kill(victim);
  if (!strcmp(argv[1], "partition")) return mode_partition();
  if (!strcmp(argv[1], "split")) return mode_split();
  usage();
  return 2;
}
