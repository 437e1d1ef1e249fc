/*
 * shrink_check: kill ranks one after another and continue on the survivors, down to one.
 *
 *   TUTTI_TIMEOUT=10 tutti-run -n 5 shrink_check
 *
 * Each round, on the current communicator: every rank learns every rank's pid and world rank
 * (all-gather), runs verified float32 all-reduces, and one victim, chosen so that the rounds
 * take the lowest (the shrink leader), the highest and a middle rank, leaves with _exit(0)
 * while the others are inside an all-reduce (status 0, so tutti-run lets the others go on).
 * Every survivor must then see, within 5 s of its last good call: the all-reduce fail with
 * TUTTI_ERR_REMOTE and a last_error naming the victim's pid; a further all-reduce refused
 * with TUTTI_ERR_INVALID_USAGE; tutti_comm_shrink give a communicator of one rank fewer, in
 * which this rank's place is its place among the survivors; its all-reduce and all-gather
 * correct (the survivors' world ranks, in order); and destroying the old communicator take
 * under 5 s (hang bounds, not speed targets). A watchdog alarm turns any hang into a failure.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tutti.h"

#define COUNT ((size_t)1 << 18) /* 1 MiB of float32 */
#define DETECT_WITHIN_S 5.0 /* hang bounds: normally ~0.1 s and milliseconds */
#define DESTROY_WITHIN_S 5.0

static int world_rank = -1;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "shrink_check world rank %d: FAIL: ", world_rank);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

/* Rank r of the current communicator contributes (r + 1) * (i % 7 + 1) to element i, so the
 * sum over the n ranks is n (n + 1) / 2 * (i % 7 + 1): exact in float32 at these sizes. */
static void fill(float *x, int r) {
  for (size_t i = 0; i < COUNT; i++) x[i] = (float)((r + 1) * (int)(i % 7 + 1));
}

static int check_sum(const float *x, int n) {
  for (size_t i = 0; i < COUNT; i++)
    if (x[i] != (float)(n * (n + 1) / 2 * (int)(i % 7 + 1))) return 0;
  return 1;
}

/* The victim of round k among n ranks: the leader, the last rank, then a middle one. */
static int victim_of(int round, int n) {
  switch (round % 3) {
  case 0: return 0;
  case 1: return n - 1;
  default: return n / 2;
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(150);
  tutti_comm_t comm;
  tutti_result_t rc = tutti_comm_init_env(&comm);
  if (rc != TUTTI_SUCCESS) die("tutti_comm_init_env: %s", tutti_result_string(rc));
  int rank, n;
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &n);
  world_rank = rank;
  float *send = malloc(COUNT * sizeof *send), *recv = malloc(COUNT * sizeof *recv);
  int32_t *who = malloc((size_t)n * 2 * sizeof *who);
  if (!send || !recv || !who) die("out of memory");

  for (int round = 0; n > 1; round++) {
    int32_t me[2] = {(int32_t)getpid(), world_rank};
    rc = tutti_allgather(me, who, 2, TUTTI_INT32, comm);
    if (rc != TUTTI_SUCCESS) die("round %d: all-gather of pids: %s", round, tutti_comm_last_error(comm));
    int victim = victim_of(round, n);
    int32_t victim_pid = who[2 * victim];
    fill(send, rank);
    for (int it = 0; it < 3; it++) {
      rc = tutti_allreduce(send, recv, COUNT, TUTTI_FLOAT32, TUTTI_SUM, comm);
      if (rc != TUTTI_SUCCESS || !check_sum(recv, n))
        die("round %d: good all-reduce %d: %s", round, it, tutti_comm_last_error(comm));
    }
    if (rank == victim) {
      /* Give the others time to enter the next all-reduce, then leave in the middle of it. */
      usleep(20000);
      printf("world rank %d (pid %d) leaves in round %d\n", world_rank, (int)getpid(), round);
      _exit(0);
    }
    double t0 = now_s();
    rc = tutti_allreduce(send, recv, COUNT, TUTTI_FLOAT32, TUTTI_SUM, comm);
    double took = now_s() - t0;
    if (rc != TUTTI_ERR_REMOTE)
      die("round %d: all-reduce after the victim left returned %s, not REMOTE (%s)", round,
          tutti_result_string(rc), tutti_comm_last_error(comm));
    if (took > DETECT_WITHIN_S) die("round %d: the failure took %.2f s to show", round, took);
    char pid_text[32];
    snprintf(pid_text, sizeof pid_text, "pid %d ", (int)victim_pid);
    if (!strstr(tutti_comm_last_error(comm), pid_text))
      die("round %d: last_error does not name the victim (%s): %s", round, pid_text,
          tutti_comm_last_error(comm));
    if (!strstr(tutti_comm_last_error(comm), "call #"))
      die("round %d: last_error does not give the call number: %s", round,
          tutti_comm_last_error(comm));
    rc = tutti_allreduce(send, recv, COUNT, TUTTI_FLOAT32, TUTTI_SUM, comm);
    if (rc != TUTTI_ERR_INVALID_USAGE)
      die("round %d: a call on the failed communicator returned %s, not INVALID_USAGE", round,
          tutti_result_string(rc));

    tutti_comm_t next;
    t0 = now_s();
    rc = tutti_comm_shrink(comm, &next);
    if (rc != TUTTI_SUCCESS) die("round %d: tutti_comm_shrink: %s", round, tutti_comm_last_error(comm));
    double shrink_s = now_s() - t0;
    int nrank, nn;
    tutti_comm_rank(next, &nrank);
    tutti_comm_size(next, &nn);
    int expect_rank = rank > victim ? rank - 1 : rank;
    if (nn != n - 1 || nrank != expect_rank)
      die("round %d: shrink gave rank %d of %d, expected %d of %d", round, nrank, nn,
          expect_rank, n - 1);
    t0 = now_s();
    tutti_comm_destroy(comm);
    double destroy_s = now_s() - t0;
    if (destroy_s > DESTROY_WITHIN_S)
      die("round %d: destroying the failed communicator took %.3f s", round, destroy_s);
    comm = next;
    rank = nrank;
    int32_t *ranks = malloc((size_t)nn * sizeof *ranks);
    if (!ranks) die("out of memory");
    int32_t mine = world_rank;
    rc = tutti_allgather(&mine, ranks, 1, TUTTI_INT32, comm);
    if (rc != TUTTI_SUCCESS) die("round %d: all-gather on the shrunk communicator: %s", round,
                                 tutti_comm_last_error(comm));
    for (int i = 0, j = 0; i < n; i++) {
      if (i == victim) continue;
      if (ranks[j] != who[2 * i + 1])
        die("round %d: new rank %d is world rank %d, expected %d", round, j, ranks[j],
            who[2 * i + 1]);
      j++;
    }
    free(ranks);
    fill(send, rank);
    rc = tutti_allreduce(send, recv, COUNT, TUTTI_FLOAT32, TUTTI_SUM, comm);
    if (rc != TUTTI_SUCCESS || !check_sum(recv, nn))
      die("round %d: all-reduce on the shrunk communicator: %s", round, tutti_comm_last_error(comm));
    if (rank == 0)
      printf("round %d: world rank %d left; detected in %.3f s; shrink to %d ranks took %.3f "
             "s; destroy %.4f s\n", round, (int)who[2 * victim + 1], took, nn, shrink_s,
             destroy_s);
    n = nn;
  }
  printf("world rank %d: PASS (last rank standing)\n", world_rank);
  tutti_comm_destroy(comm);
  free(send);
  free(recv);
  free(who);
  return 0;
}
