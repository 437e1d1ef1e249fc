/*
 * Ranks running ahead on the small-message (one-shot) path, over shm.
 *
 *   ahead_check ahead
 *
 * A broadcast root and a reduce's leaves wait for no one, so they run calls ahead of slow
 * peers (ranks that sleep now and then): every call carries data of its own (a function of
 * the call's number, the element and the rank), and every receiver must find each call's own
 * data, in order. A root that overwrote a mailbox a peer has not read yet would hand that peer
 * a later call's data.
 *
 *   ahead_check mismatch_repeat
 *
 * Rank 1 names root 1 in a run of small broadcasts, the others root 0: the would-be roots
 * read no one, so they may return success for a while, but every rank must fail with
 * TUTTI_ERR_INVALID_USAGE within MBOX_DEPTH (128) calls, the cells a root may run ahead
 * through (the sampled check usually fails it within 8 or 16: printed, not asserted, as it
 * depends on the peers keeping pace).
 *
 *   ahead_check mismatch_then_queue
 *   ahead_check mismatch_big_then_queue
 *
 * The same disagreement in one small broadcast (big: one of 160 000 bytes, which goes in
 * three one-shot calls, fewer than a root runs ahead unchecked), followed by a 4 MiB
 * all-reduce (through the queues, not one-shot): every rank must fail in one of the two
 * calls.
 *
 *   ahead_check queue_ahead
 *   ahead_check queue_mismatch
 *
 * A broadcast root far ahead through the queues (16 KiB calls, forced onto the ring, whose
 * root only sends: the queue holds all of them): the other ranks sleep before their first
 * call while root 0 runs QCALLS calls. A rooted call not yet started on every local peer must
 * stay checkable, so the root may not run CALL_AHEAD (16) calls past it before every peer has
 * started it. queue_ahead: the same root everywhere; every call's data is checked.
 * queue_mismatch: rank 1 names root 1 in call QBAD: every rank must fail with
 * TUTTI_ERR_INVALID_USAGE naming both roots, at the latest 16 calls after call QBAD (a rank
 * behind may fail earlier, on seeing another's failure), and every call before that must have
 * returned the root's data (a root that lost the pending check returned success for all
 * QCALLS calls).
 *
 *   ahead_check wake
 *
 * Sleeping readers woken by one-shot posts: the root naps WAKE_NAP_US (far past the readers'
 * spin) before each of WAKE_CALLS small broadcasts, so every reader is asleep on its doorbell
 * when the post comes, and the post's ring must wake it (a post that published its flag
 * without a full fence relies on the sleeper's membarrier: mbox.c's mbox_post). A reduce to
 * the root follows each, so the root cannot run ahead of a reader it failed to wake. A missed
 * ring leaves a reader asleep for its whole 100 ms slice: the run (~0.5 s) must end within
 * WAKE_LIMIT_S, which every ring lost would exceed 4-fold. Every call's data is checked.
 *
 * Broadcasts up to 1 MiB and small reduces are forced one-shot (TUTTI_TUNE, unless set).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tutti.h"

enum { CALLS = 400, SLOW_EVERY = 37, MBOX_DEPTH = 128 };

static void nap(long us) {
  struct timespec t = {0, us * 1000};
  nanosleep(&t, NULL);
}

static uint32_t val(uint32_t call, size_t i, int rank) {
  return call * 2654435761u + (uint32_t)i * 40503u + (uint32_t)rank * 977u + 1u;
}

/* Elements of call k in the mixed phase: payloads that fit a mailbox's cell (up to 208 bytes),
 * ones that go to the few big mailboxes, so a big call comes after small ones that ran
 * further ahead than the big mailboxes allow, and broadcasts larger than a mailbox (64 KiB),
 * which go in pieces, one one-shot call each (BIGC: 2 full pieces and a short one). */
enum { BIGC = 40000 };
static size_t mixed_count(uint32_t k) {
  static const size_t cycle[] = {2, 52, 53, 256, 2, 2, BIGC, 2, 1, 256, 256, 2, BIGC, BIGC};
  return cycle[k % (sizeof cycle / sizeof cycle[0])];
}

/* Broadcasts (root 0, then root n-1, 8 B and 1 KiB), reduces (root 0), then broadcasts of
 * mixed sizes (root 0) while the ranks that only receive, or the reduce's root, sleep now
 * and then. */
static int ahead(tutti_comm_t c, int r, int n) {
  enum { MAXC = 256 };
  static uint32_t x[BIGC], y[BIGC];
  int bad = 0;
  for (int phase = 0; phase < 4 && !bad; phase++) {
    int root = phase == 1 ? n - 1 : 0, reduce = phase == 2;
    size_t count = phase == 0 ? 2 : MAXC;
    /* The ranks that wait are slow from the start, so the others fill the ring at once. */
    int slow = reduce ? r == root : r != root;
    if (slow) nap(20000);
    for (uint32_t k = 0; k < CALLS; k++) {
      uint32_t call = (uint32_t)phase * CALLS + k;
      if (phase == 3) count = mixed_count(k);
      for (size_t i = 0; i < count; i++) x[i] = val(call, i, r);
      memset(y, 0, sizeof y);
      tutti_result_t res = reduce ? tutti_reduce(x, y, count, TUTTI_UINT32, TUTTI_SUM, root, c)
                                  : tutti_broadcast(x, y, count, TUTTI_UINT32, root, c);
      if (res != TUTTI_SUCCESS) {
        printf("ahead_check rank %d: phase %d call %u: %s: %s\n", r, phase, k,
               tutti_result_string(res), tutti_comm_last_error(c));
        return 1;
      }
      if (reduce && r != root) continue;
      for (size_t i = 0; i < count; i++) {
        uint32_t want = 0;
        if (reduce)
          for (int q = 0; q < n; q++) want += val(call, i, q);
        else
          want = val(call, i, root);
        if (y[i] != want) {
          printf("ahead_check rank %d: FAIL: phase %d call %u element %zu: %u, want %u\n", r,
                 phase, k, i, y[i], want);
          bad = 1;
          break;
        }
      }
      if (slow && k % SLOW_EVERY == 0) nap(2000);
      if (bad) break;
    }
  }
  return bad;
}

enum { WAKE_CALLS = 200, WAKE_NAP_US = 2000 };
#define WAKE_LIMIT_S 5.0

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int wake(tutti_comm_t c, int r, int n) {
  uint32_t x[2], y[2];
  double t0 = now_s(), worst = 0;
  for (uint32_t k = 0; k < WAKE_CALLS; k++) {
    if (r == 0) nap(WAKE_NAP_US);
    x[0] = val(k, 0, r);
    x[1] = val(k, 1, r);
    y[0] = y[1] = 0;
    double t = now_s();
    tutti_result_t res = tutti_broadcast(x, y, 2, TUTTI_UINT32, 0, c);
    if (now_s() - t > worst) worst = now_s() - t;
    uint32_t sum = 0, want = 0;
    for (int q = 0; q < n; q++) want += val(k, 0, q);
    if (res == TUTTI_SUCCESS) res = tutti_reduce(x, &sum, 1, TUTTI_UINT32, TUTTI_SUM, 0, c);
    if (res != TUTTI_SUCCESS) {
      printf("ahead_check wake rank %d: call %u: %s: %s\n", r, k, tutti_result_string(res),
             tutti_comm_last_error(c));
      return 1;
    }
    if (y[0] != val(k, 0, 0) || y[1] != val(k, 1, 0) || (r == 0 && sum != want)) {
      printf("ahead_check wake rank %d: FAIL: call %u: %u %u (sum %u), want %u %u (%u)\n", r, k,
             y[0], y[1], sum, val(k, 0, 0), val(k, 1, 0), want);
      return 1;
    }
  }
  double total = now_s() - t0;
  printf("ahead_check wake rank %d: %d calls in %.3f s, the longest %.1f ms\n", r, WAKE_CALLS,
         total, worst * 1e3);
  if (total > WAKE_LIMIT_S) {
    printf("ahead_check wake rank %d: FAIL: %.3f s, more than %.1f s: rings were lost\n", r,
           total, WAKE_LIMIT_S);
    return 1;
  }
  return 0;
}

/* Rank 1 names root 1, the others root 0 (in a broadcast of count elements); then (queue) a
 * 4 MiB all-reduce. */
static int mismatch(tutti_comm_t c, int r, int repeat, size_t count) {
  static uint32_t x[BIGC], y[BIGC];
  int root = r == 1 ? 1 : 0, calls = repeat ? MBOX_DEPTH + 20 : 1, failed_at = -1;
  tutti_result_t res = TUTTI_SUCCESS;
  for (int k = 0; k < calls && res == TUTTI_SUCCESS; k++) {
    res = tutti_broadcast(x, y, count, TUTTI_UINT32, root, c);
    if (res != TUTTI_SUCCESS) failed_at = k;
  }
  if (res == TUTTI_SUCCESS && !repeat) {
    size_t fcount = (4u << 20) / sizeof(float);
    float *a = calloc(fcount, sizeof *a);
    if (!a) return 1;
    res = tutti_allreduce(a, a, fcount, TUTTI_FLOAT32, TUTTI_SUM, c);
    free(a);
    if (res != TUTTI_SUCCESS) failed_at = 1;
  }
  printf("ahead_check mismatch rank %d (root %d): %s at call %d: %s\n", r, root,
         tutti_result_string(res), failed_at, tutti_comm_last_error(c));
  if (res != TUTTI_ERR_INVALID_USAGE) {
    printf("ahead_check rank %d: FAIL: expected invalid usage\n", r);
    return 1;
  }
  /* A rank that waits to reuse a cell (call MBOX_DEPTH, counted from 1) compares what it
   * skipped. */
  if (repeat && failed_at > MBOX_DEPTH - 1) {
    printf("ahead_check rank %d: FAIL: the disagreement surfaced only at call %d\n", r,
           failed_at);
    return 1;
  }
  return 0;
}

enum { QCALLS = 40, QBAD = 20, QCOUNT = 4096, CALL_AHEAD = 16 };

/* Root 0 runs ahead through the queues; rank 1 names root 1 in call QBAD when bad. */
static int queue_ahead(tutti_comm_t c, int r, int bad_root) {
  static uint32_t x[QCOUNT], y[QCOUNT];
  /* Long enough for root 0 to run all QCALLS calls on a loaded machine. */
  if (r != 0) nap(300000);
  int failed_at = 0;
  tutti_result_t res = TUTTI_SUCCESS;
  for (uint32_t k = 1; k <= QCALLS; k++) {
    int root = bad_root && r == 1 && k == QBAD ? 1 : 0;
    for (size_t i = 0; i < QCOUNT; i++) x[i] = val(k, i, r);
    memset(y, 0, sizeof y);
    res = tutti_broadcast(x, y, QCOUNT, TUTTI_UINT32, root, c);
    if (res != TUTTI_SUCCESS) {
      failed_at = (int)k;
      break;
    }
    for (size_t i = 0; i < QCOUNT; i++)
      if (y[i] != val(k, i, root)) {
        printf("ahead_check rank %d: FAIL: call %u element %zu: %u, want %u (root %d)\n", r,
               k, i, y[i], val(k, i, root), root);
        return 1;
      }
    /* A receiver that pauses again makes the root wait for it again. */
    if (r != 0 && k == QCALLS / 2 + 5) nap(100000);
  }
  if (res == TUTTI_SUCCESS)
    printf("ahead_check queue rank %d: success in all %d calls\n", r, QCALLS);
  else
    printf("ahead_check queue rank %d: %s at call %d: %s\n", r, tutti_result_string(res),
           failed_at, tutti_comm_last_error(c));
  if (!bad_root) return res != TUTTI_SUCCESS;
  if (res != TUTTI_ERR_INVALID_USAGE) {
    printf("ahead_check rank %d: FAIL: expected invalid usage\n", r);
    return 1;
  }
  const char *why = tutti_comm_last_error(c);
  /* A rank behind the others may see the failure of one that compared the roots before it
   * reaches call QBAD itself: the sentence still names both roots. */
  if (failed_at > QBAD + CALL_AHEAD || !strstr(why, "root 1") || !strstr(why, "root 0")) {
    printf("ahead_check rank %d: FAIL: failed at call %d (after call %d), or with a sentence "
           "without both roots\n", r, failed_at, QBAD + CALL_AHEAD);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  /* The one-shot path is the subject: the cost model may route these sizes elsewhere (at
   * n > 2 it often picks the ring for small broadcasts). */
  /* The queue_ modes go through the queues, where a root may run far ahead (the queue holds
   * every call). */
  int queue = !strncmp(argv[1], "queue_", 6);
  setenv("TUTTI_TUNE",
         queue ? "broadcast:0-1g:ring" : "broadcast:0-1m:oneshot;reduce:0-64k:oneshot", 0);
  tutti_comm_t c;
  int r, n, bad;
  if (tutti_comm_init_env(&c) != TUTTI_SUCCESS) return 1;
  tutti_comm_rank(c, &r);
  tutti_comm_size(c, &n);
  if (!strcmp(argv[1], "ahead"))
    bad = ahead(c, r, n);
  else if (!strcmp(argv[1], "wake"))
    bad = wake(c, r, n);
  else if (!strcmp(argv[1], "mismatch_repeat") || !strcmp(argv[1], "mismatch_then_queue"))
    bad = n < 2 ? 2 : mismatch(c, r, !strcmp(argv[1], "mismatch_repeat"), 2);
  else if (!strcmp(argv[1], "mismatch_big_then_queue"))
    bad = n < 2 ? 2 : mismatch(c, r, 0, BIGC);
  else if (!strcmp(argv[1], "queue_ahead") || !strcmp(argv[1], "queue_mismatch"))
    bad = n < 2 ? 2 : queue_ahead(c, r, !strcmp(argv[1], "queue_mismatch"));
  else
    bad = 2;
  tutti_comm_destroy(c);
  printf("ahead_check %s rank %d of %d: %s\n", argv[1], r, n, bad ? "FAIL" : "PASS");
  return bad;
}
