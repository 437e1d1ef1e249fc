/*
 * net_check: the rank program of net_faults.sh (and of garbage_check.sh): a verified float32
 * all-reduce loop over whatever network the script has made.
 *
 *   net_check [--mib M] [--iters N] [--seconds S] [--expect-fail]
 *
 * Without --expect-fail, N all-reduces of M MiB (defaults 8 and 10), or as many as fit in S
 * seconds (at least one), must all succeed and be bit-exact; it exits 0 then. With
 * --expect-fail (a partition longer than TUTTI_TIMEOUT), the loop runs until a call fails:
 * the failure must be TUTTI_ERR_TIMEOUT or TUTTI_ERR_REMOTE, come no later than
 * TUTTI_TIMEOUT + 5 s after the call started, and name a peer ("rank "); a further all-reduce
 * must fail and tutti_comm_destroy must return (within 5 s: a hang bound). Either way it prints
 * "net_check rank R: PASS ..." and exits 0 only if all of that held. A watchdog alarm
 * (NET_CHECK_WATCHDOG seconds, default 120) turns a hang into a failure.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject.h"

int main(int argc, char **argv) {
  inject_prog = "net_check";
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *wd = getenv("NET_CHECK_WATCHDOG");
  alarm(wd ? (unsigned)atoi(wd) : 120);
  size_t mib = 8;
  int iters = 10, expect_fail = 0;
  double seconds = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
      mib = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
      iters = atoi(argv[++i]);
    else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (strcmp(argv[i], "--expect-fail") == 0)
      expect_fail = 1;
    else
      inject_fail("usage: net_check [--mib M] [--iters N] [--seconds S] [--expect-fail]");
  }
  const char *tv = getenv("TUTTI_TIMEOUT");
  double timeout_s = tv ? atof(tv) : 600;

  int nranks;
  tutti_comm_t comm = inject_init(&nranks);
  tutti_result_t rc;
  int rank = inject_rank;
  inject_data_t d;
  inject_data_init(&d, mib * 1024 * 1024 / sizeof(float), nranks);

  int64_t t_start = inject_now_ns();
  int iter = 0;
  for (;; iter++) {
    if (!expect_fail && seconds <= 0 && iter >= iters) break;
    if (!expect_fail && seconds > 0 && iter > 0) {
      /* The ranks' clocks differ a little: rank 0's decides, for all, when to stop. */
      int stop = (double)(inject_now_ns() - t_start) / 1e9 >= seconds;
      rc = tutti_broadcast(&stop, &stop, 1, TUTTI_INT32, 0, comm);
      if (rc != TUTTI_SUCCESS)
        inject_fail("broadcast of the stop flag: %s", tutti_comm_last_error(comm));
      if (stop) break;
    }
    inject_fill(&d, rank, iter);
    int64_t t0 = inject_now_ns();
    rc = tutti_allreduce(d.send, d.recv, d.count, TUTTI_FLOAT32, TUTTI_SUM, comm);
    double dt = (double)(inject_now_ns() - t0) / 1e9;
    if (rc == TUTTI_SUCCESS) {
      inject_verify(&d, iter);
      if (expect_fail && (double)(inject_now_ns() - t_start) / 1e9 > 120)
        inject_fail("no failure after 120 s of all-reduces");
      continue;
    }
    const char *err = tutti_comm_last_error(comm);
    printf("net_check rank %d: all-reduce %d returned \"%s\" after %.3f s: %s\n", rank, iter,
           tutti_result_string(rc), dt, err);
    if (!expect_fail) inject_fail("all-reduce %d failed: %s", iter, err);
    if (rc != TUTTI_ERR_TIMEOUT && rc != TUTTI_ERR_REMOTE)
      inject_fail("got %s, want a timeout or a remote failure", tutti_result_string(rc));
    if (dt > timeout_s + 5.0)
      inject_fail("the failure took %.3f s, want <= TUTTI_TIMEOUT %.1f + 5 s", dt, timeout_s);
    if (!inject_has(err, "rank ")) inject_fail("the error names no peer: %s", err);
    int one = 1, sum = 0;
    if (tutti_allreduce(&one, &sum, 1, TUTTI_INT32, TUTTI_SUM, comm) == TUTTI_SUCCESS)
      inject_fail("an all-reduce succeeded after the failure");
    int64_t td = inject_now_ns();
    if (tutti_comm_destroy(comm) != TUTTI_SUCCESS) inject_fail("tutti_comm_destroy failed");
    double dd = (double)(inject_now_ns() - td) / 1e9;
    if (dd > 5.0) inject_fail("tutti_comm_destroy took %.3f s", dd);
    printf("net_check rank %d: PASS: failed as expected after %.3f s in the call\n", rank, dt);
    free(d.send);
    free(d.recv);
    return 0;
  }
  double total = (double)(inject_now_ns() - t_start) / 1e9;
  rc = tutti_comm_destroy(comm);
  if (rc != TUTTI_SUCCESS) inject_fail("tutti_comm_destroy: %s", tutti_result_string(rc));
  printf("net_check rank %d: PASS: %d all-reduces of %zu MiB bit-exact in %.2f s\n", rank,
         iter, mib, total);
  free(d.send);
  free(d.recv);
  return 0;
}
