/*
 * kill_check: SIGKILL a random rank at a random moment of a verified all-reduce loop.
 *
 *   tutti-run -n 8 --tolerate-signal 9 kill_check [--mib 64]
 *
 * Every rank loops a float32 all-reduce of --mib MiB (default 64), checking each result bit
 * for bit against an independently computed sum. Rank 0's driver process (inject.c) SIGKILLs
 * a rank drawn from a seed (KILL_CHECK_SEED, else random; printed) at a random instant 0.3 to
 * 2.5 s into the loop. Every survivor must then
 *   - get TUTTI_ERR_REMOTE within 5 s (a hang bound) of the kill, or of its call if it was computing when the kill
 *     came (never a success with a wrong result, never
 *     a failure before the kill),
 *   - find in tutti_comm_last_error the dead rank as "rank V (pid P on host H)", the operation
 *     (allreduce) and the call's sequence number ("#N", N counting this communicator's
 *     collectives from 1),
 *   - get TUTTI_ERR_INVALID_USAGE from a further collective, at once,
 *   - see tutti_comm_destroy return (within 5 s: a hang bound).
 * A watchdog alarm turns any hang into a failure.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject.h"

#define WATCHDOG_S 60
#define DETECT_WITHIN_S 5.0 /* hang bounds: normally ~0.12 s and milliseconds */
#define DESTROY_WITHIN_S 5.0
#define GIVE_UP_AFTER_S 10.0 /* after the kill, a loop still succeeding is a failure */

int main(int argc, char **argv) {
  inject_prog = "kill_check";
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(WATCHDOG_S);
  size_t mib = 64;
  if (argc == 3 && strcmp(argv[1], "--mib") == 0) mib = strtoull(argv[2], NULL, 10);
  int driver_fd = inject_start_driver();

  int nranks;
  tutti_comm_t comm = inject_init(&nranks);
  tutti_result_t rc;
  int rank = inject_rank;

  inject_data_t d;
  inject_data_init(&d, mib * 1024 * 1024 / sizeof(float), nranks);
  /* A first, unkilled all-reduce touches every buffer, so the kill lands in the steady loop
   * and not in first-touch page faults. */
  inject_fill(&d, rank, 99);
  rc = tutti_allreduce(d.send, d.recv, d.count, TUTTI_FLOAT32, TUTTI_SUM, comm);
  if (rc != TUTTI_SUCCESS)
    inject_fail("warm-up all-reduce: %s: %s", tutti_result_string(rc), tutti_comm_last_error(comm));
  inject_verify(&d, 99);
  inject_plan_t plan;
  inject_make_plan(comm, driver_fd, "KILL_CHECK_SEED", SIGKILL, 0.3, 2.5, 0, &plan);
  unsigned seq = 3; /* the warm-up, the pid all-gather and the plan broadcast */
  int victim = (int)plan.victim;

  int iter = 0;
  int64_t t_end, t_call = 0;
  int verbose = getenv("KILL_CHECK_VERBOSE") != NULL;
  for (;; iter++) {
    int64_t t_fill = inject_now_ns();
    inject_fill(&d, rank, iter);
    int64_t t_start = inject_now_ns();
    t_call = t_start;
    seq++;
    rc = tutti_allreduce(d.send, d.recv, d.count, TUTTI_FLOAT32, TUTTI_SUM, comm);
    t_end = inject_now_ns();
    if (verbose)
      printf("kill_check rank %d: iteration %d: fill %.3f s, all-reduce %.3f s, ends %.3f s "
             "after the planned kill\n", rank, iter, (double)(t_start - t_fill) / 1e9,
             (double)(t_end - t_start) / 1e9, (double)(t_end - plan.fault_ns) / 1e9);
    if (rc != TUTTI_SUCCESS) break;
    inject_verify(&d, iter);
    if ((double)(t_end - plan.fault_ns) / 1e9 > GIVE_UP_AFTER_S)
      inject_fail("all-reduces still succeed %.0f s after rank %d was killed", GIVE_UP_AFTER_S,
                  victim);
  }
  const char *err = tutti_comm_last_error(comm);
  double after = (double)(t_end - plan.fault_ns) / 1e9;
  /* A survivor still filling its buffer when the kill came was not in the library: its
   * detection time counts from its call. */
  int64_t t_from = t_call > plan.fault_ns ? t_call : plan.fault_ns;
  double detect = (double)(t_end - t_from) / 1e9;
  printf("kill_check rank %d: all-reduce #%u (iteration %d) returned \"%s\" %.3f s after the "
         "kill, %.3f s after the later of the kill and the call: %s\n",
         rank, seq, iter, tutti_result_string(rc), after, detect, err);
  if (rank == victim) inject_fail("the victim's all-reduce failed before it was killed");
  if (after < 0) inject_fail("the all-reduce failed %.3f s before the kill", -after);
  if (rc != TUTTI_ERR_REMOTE)
    inject_fail("got %s, want %s", tutti_result_string(rc),
                tutti_result_string(TUTTI_ERR_REMOTE));
  if (detect > DETECT_WITHIN_S)
    inject_fail("the failure came %.3f s after the kill (or the call, if later), want < %.1f s",
                detect, DETECT_WITHIN_S);

  inject_check_names(err, victim, plan.pids[victim], seq);

  double dt = inject_check_after_failure(comm, DESTROY_WITHIN_S);
  printf("kill_check rank %d: PASS: seed %llu, rank %d killed, detected in %.3f s, destroy "
         "%.1f ms\n",
         rank, (unsigned long long)plan.seed, victim, detect, dt * 1e3);
  free(d.send);
  free(d.recv);
  return 0;
}
