/*
 * shm_floor — the latency floor of a small collective between two processes of this machine:
 * the time of one exchange of a cache line through shared memory, which any 8-byte all-reduce
 * or all-gather at n = 2 (tutti's mailboxes, Open MPI's fast boxes) has to pay at least once per
 * call. Two forked processes each write a counter in their own line and spin, without
 * yielding, until they see the other's (a symmetric exchange: the form of an all-reduce), then
 * the same as a ping-pong (one-way is half of it: the form of a broadcast's hand-off). The
 * processes are not pinned: the harnesses are not either, so the floor is the one the
 * scheduler gives them. On a VM the vCPUs' placement on host cores moves this figure several
 * times over within minutes, which is why bench/peers/run.sh runs it in every round, next to
 * the programs it bounds.
 *
 *   shm_floor [ITERS=200000] [REPS=5]
 *
 * Prints one JSON line with the median and the best of REPS repetitions of each, in us per
 * iteration. A repetition that takes more than 10 s (a process that died) ends the run with
 * SIGALRM.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct { /* one cache line each */
  _Alignas(64) _Atomic uint64_t v;
} line_t;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Spins until *p reaches want; the alarm each repetition sets ends a wait for a process that
 * died. */
static void await(_Atomic uint64_t *p, uint64_t want) {
  while (atomic_load_explicit(p, memory_order_acquire) < want) {
  }
}

/* One repetition: the parent's us per iteration. pingpong: rank 1 answers rank 0. */
static double one(line_t *l, long iters, int pingpong) {
  atomic_store(&l[0].v, 0);
  atomic_store(&l[1].v, 0);
  pid_t pid = fork();
  if (pid < 0) {
    perror("shm_floor: fork");
    exit(1);
  }
  int me = pid == 0;
  alarm(10);
  /* Both start together, so neither times the other's fork. */
  atomic_fetch_add(&l[2].v, 1);
  await(&l[2].v, 2);
  double t0 = now_s();
  for (uint64_t i = 1; i <= (uint64_t)iters; i++) {
    if (pingpong && me) {
      await(&l[0].v, i);
      atomic_store_explicit(&l[1].v, i, memory_order_release);
    } else {
      atomic_store_explicit(&l[me].v, i, memory_order_release);
      await(&l[1 - me].v, i);
    }
  }
  double t = now_s() - t0;
  if (me) _exit(0);
  alarm(0);
  int status;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status)) exit(1);
  atomic_store(&l[2].v, 0);
  return t / (double)iters * 1e6;
}

static int cmp(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

int main(int argc, char **argv) {
  long iters = argc > 1 ? strtol(argv[1], NULL, 10) : 200000;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  if (iters < 1 || reps < 1 || reps > 100) {
    fprintf(stderr, "usage: shm_floor [ITERS] [REPS]\n");
    return 2;
  }
  line_t *l = mmap(NULL, 3 * sizeof(line_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
  if (l == MAP_FAILED) {
    perror("shm_floor: mmap");
    return 1;
  }
  double ex[100], pp[100];
  for (int i = 0; i < reps; i++) { /* alternating, as the harnesses are */
    ex[i] = one(l, iters, 0);
    pp[i] = one(l, iters, 1);
  }
  qsort(ex, (size_t)reps, sizeof ex[0], cmp);
  qsort(pp, (size_t)reps, sizeof pp[0], cmp);
  printf("{\"shm_floor\":{\"iters\":%ld,\"reps\":%d,\"exchange_us\":%.4f,\"exchange_best_us\":"
         "%.4f,\"pingpong_us\":%.4f,\"pingpong_best_us\":%.4f}}\n",
         iters, reps, ex[reps / 2], ex[0], pp[reps / 2], pp[0]);
  return 0;
}
