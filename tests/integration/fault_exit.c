/*
 * fault_exit: a rank that leaves in the middle of a job must not hang the others.
 *
 *   TUTTI_TIMEOUT=10 tutti-run -n 4 fault_exit
 *
 * All ranks run two correct 4 MiB float32 all-reduces. Then rank 2 leaves with _exit(0)
 * (status 0, so tutti-run does not stop the others for it) instead of entering the third.
 * The survivors' third all-reduce must fail with TUTTI_ERR_REMOTE or TUTTI_ERR_TIMEOUT within
 * 8 s, tutti_comm_last_error must name a rank, a further collective must fail too (not
 * succeed, not hang), and tutti_comm_destroy must return within 1 s. A survivor exits 0 only
 * if all of that holds; a watchdog alarm turns any hang into a failure.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tutti.h"

#define VICTIM 2
#define COUNT ((size_t)1 << 20) /* 4 MiB of float32 */
#define FAIL_WITHIN_S 8.0
#define DESTROY_WITHIN_S 5.0 /* a hang bound: destroy normally takes milliseconds */
#define FURTHER_WITHIN_S 15.0 /* TUTTI_TIMEOUT=10 plus slack: slow is allowed, a hang is not */

static int rank = -1;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fault_exit rank %d: FAIL: ", rank);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(90); /* SIGALRM ends a hung rank with a failure status */
  tutti_comm_t comm;
  int nranks = 0;
  tutti_result_t rc = tutti_comm_init_env(&comm);
  if (rc != TUTTI_SUCCESS) die("tutti_comm_init_env: %s", tutti_result_string(rc));
  if (tutti_comm_rank(comm, &rank) != TUTTI_SUCCESS ||
      tutti_comm_size(comm, &nranks) != TUTTI_SUCCESS)
    die("tutti_comm_rank/size failed");
  if (nranks <= VICTIM) die("needs more than %d ranks", VICTIM);

  float *send = malloc(COUNT * sizeof *send), *recv = malloc(COUNT * sizeof *recv);
  if (!send || !recv) die("out of memory");

  for (int iter = 0; iter < 3; iter++) {
    if (iter == 2 && rank == VICTIM) {
      printf("fault_exit rank %d: leaving with _exit(0) before all-reduce %d\n", rank, iter + 1);
      fflush(NULL);
      _exit(0);
    }
    for (size_t i = 0; i < COUNT; i++) send[i] = (float)((rank + (int)i + iter) % 7);
    double t0 = now_s();
    rc = tutti_allreduce(send, recv, COUNT, TUTTI_FLOAT32, TUTTI_SUM, comm);
    double dt = now_s() - t0;
    if (iter < 2) {
      if (rc != TUTTI_SUCCESS)
        die("warm-up all-reduce failed: %s: %s", tutti_result_string(rc),
            tutti_comm_last_error(comm));
      for (size_t i = 0; i < COUNT; i++) {
        int want = 0;
        for (int r = 0; r < nranks; r++) want += (r + (int)i + iter) % 7;
        if (recv[i] != (float)want) die("warm-up all-reduce gave a wrong result");
      }
      continue;
    }
    /* The survivors' third all-reduce, with rank 2 gone. */
    const char *err = tutti_comm_last_error(comm);
    printf("fault_exit rank %d: all-reduce without rank %d returned %s after %.3f s: \"%s\"\n",
           rank, VICTIM, tutti_result_string(rc), dt, err ? err : "(null)");
    if (rc == TUTTI_SUCCESS) die("all-reduce succeeded with a rank gone");
    if (rc != TUTTI_ERR_REMOTE && rc != TUTTI_ERR_TIMEOUT)
      die("expected TUTTI_ERR_REMOTE or TUTTI_ERR_TIMEOUT, got %s", tutti_result_string(rc));
    if (dt > FAIL_WITHIN_S) die("the failure took more than 8 s to report");
    if (!err || !*err) die("tutti_comm_last_error is empty");
    if (!strcasestr(err, "rank")) die("tutti_comm_last_error does not name a rank: %s", err);
  }

  /* A further collective on the broken communicator fails too, and does not hang. */
  double t0 = now_s();
  int one = 1, sum = 0;
  rc = tutti_allreduce(&one, &sum, 1, TUTTI_INT32, TUTTI_SUM, comm);
  double dt = now_s() - t0;
  printf("fault_exit rank %d: further all-reduce returned %s after %.3f s\n", rank,
         tutti_result_string(rc), dt);
  if (rc == TUTTI_SUCCESS) die("a further all-reduce succeeded on a broken communicator");
  if (dt > FURTHER_WITHIN_S) die("the further all-reduce took too long to fail");

  t0 = now_s();
  rc = tutti_comm_destroy(comm);
  dt = now_s() - t0;
  printf("fault_exit rank %d: tutti_comm_destroy returned %s after %.3f s\n", rank,
         tutti_result_string(rc), dt);
  if (dt > DESTROY_WITHIN_S) die("tutti_comm_destroy took more than %.0f s", DESTROY_WITHIN_S);
  free(send);
  free(recv);
  printf("fault_exit rank %d: PASS\n", rank);
  return 0;
}
