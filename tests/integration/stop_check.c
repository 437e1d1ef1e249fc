/*
 * stop_check: SIGSTOP a random rank during a verified all-reduce loop.
 *
 *   TUTTI_TIMEOUT=3 tutti-run -n 4 stop_check [--mib 4]
 *
 * Every rank loops a float32 all-reduce of --mib MiB (default 4), each result checked bit for
 * bit. Rank 0's driver (inject.c) SIGSTOPs a rank drawn from a seed (STOP_CHECK_SEED, else
 * random; printed) 0.3 to 1.5 s into the loop and SIGCONTs it TUTTI_TIMEOUT + 2 s later.
 * Every other rank must get TUTTI_ERR_TIMEOUT from the call in flight, no later than its
 * deadline (the call's start + TUTTI_TIMEOUT) plus 2 s of slack and never before the stop,
 * with tutti_comm_last_error naming the stopped rank ("rank V (pid P on host H)"), the
 * operation and the call's number; then a further collective fails with
 * TUTTI_ERR_INVALID_USAGE and tutti_comm_destroy returns (within 5 s: a hang bound). The stopped rank,
 * once continued, must fail too (its peers are gone) and clean up the same way. A watchdog
 * alarm turns any hang into a failure.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject.h"

#define WATCHDOG_S 60
#define SLACK_S 2.0
#define DESTROY_WITHIN_S 5.0 /* a hang bound: normally milliseconds */

int main(int argc, char **argv) {
  inject_prog = "stop_check";
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(WATCHDOG_S);
  size_t mib = 4;
  if (argc == 3 && strcmp(argv[1], "--mib") == 0) mib = strtoull(argv[2], NULL, 10);
  const char *tv = getenv("TUTTI_TIMEOUT");
  double timeout_s = tv ? atof(tv) : 0;
  if (timeout_s <= 0 || timeout_s > 20) inject_fail("run with TUTTI_TIMEOUT set to 1..20 s");
  int driver_fd = inject_start_driver();

  int nranks;
  tutti_comm_t comm = inject_init(&nranks);
  tutti_result_t rc;
  int rank = inject_rank;

  inject_data_t d;
  inject_data_init(&d, mib * 1024 * 1024 / sizeof(float), nranks);
  inject_plan_t plan;
  inject_make_plan(comm, driver_fd, "STOP_CHECK_SEED", SIGSTOP, 0.3, 1.5, timeout_s + 2.0,
                   &plan);
  unsigned seq = 2; /* the pid all-gather and the plan broadcast */
  int victim = (int)plan.victim;

  int iter = 0;
  int64_t t_call, t_end;
  for (;; iter++) {
    inject_fill(&d, rank, iter);
    seq++;
    t_call = inject_now_ns();
    rc = tutti_allreduce(d.send, d.recv, d.count, TUTTI_FLOAT32, TUTTI_SUM, comm);
    t_end = inject_now_ns();
    if (rc != TUTTI_SUCCESS) break;
    inject_verify(&d, iter);
    if ((double)(t_end - plan.fault_ns) / 1e9 > timeout_s + 2 * SLACK_S + 2.0)
      inject_fail("all-reduces still succeed long after rank %d was stopped", victim);
  }
  const char *err = tutti_comm_last_error(comm);
  double after_stop = (double)(t_end - plan.fault_ns) / 1e9;
  double in_call = (double)(t_end - t_call) / 1e9;
  printf("stop_check rank %d: all-reduce #%u (iteration %d) returned \"%s\" after %.3f s in the "
         "call, %.3f s after the stop: %s\n",
         rank, seq, iter, tutti_result_string(rc), in_call, after_stop, err);
  if (rank == victim) {
    /* Continued after its peers gave up: any failure will do, a success would be wrong. */
    if (after_stop < timeout_s) inject_fail("the stopped rank failed before it was continued");
  } else {
    if (after_stop < 0) inject_fail("the all-reduce failed %.3f s before the stop", -after_stop);
    if (rc != TUTTI_ERR_TIMEOUT)
      inject_fail("got %s, want %s", tutti_result_string(rc),
                  tutti_result_string(TUTTI_ERR_TIMEOUT));
    if (in_call > timeout_s + SLACK_S)
      inject_fail("the call failed %.3f s after it started, want <= %.1f + %.1f s", in_call,
                  timeout_s, SLACK_S);
    inject_check_names(err, victim, plan.pids[victim], seq);
  }

  double dt = inject_check_after_failure(comm, DESTROY_WITHIN_S);
  printf("stop_check rank %d: PASS: seed %llu, rank %d stopped, %s after %.3f s in the call, "
         "destroy %.1f ms\n",
         rank, (unsigned long long)plan.seed, victim, rank == victim ? "failed" : "timed out",
         in_call, dt * 1e3);
  free(d.send);
  free(d.recv);
  return 0;
}
