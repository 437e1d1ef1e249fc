/*
 * split_check: tutti_comm_split and tutti_comm_dup under tutti-run, any number of ranks.
 *
 *   1. split into evens and odds with reversed keys: new size and rank as MPI_Comm_split says
 *   2. the halves at the same time run different collectives, interleaved with collectives on
 *      the parent: evens all-reduce (SUM, int32), odds all-gather, both checked against values
 *      computed here from the parent ranks alone
 *   3. equal keys order by parent rank (color rank % 3, key 0)
 *   4. dup: same rank and size, works next to the parent
 *   5. TUTTI_SPLIT_NOCOLOR on rank 0 gives it NULL; the others form a communicator without it
 *   6. color -5 on the last rank: every rank fails at once (the offender with
 *      TUTTI_ERR_INVALID_ARGUMENT, the others with TUTTI_ERR_INVALID_USAGE), and the parent
 *      still works afterwards
 *   7. NULL comm or newcomm: TUTTI_ERR_INVALID_ARGUMENT without communicating
 * and everything is destroyed at the end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tutti.h"

static int rank = -1, size = 0;

#define CHECK(cond, ...)                                                                    \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      fprintf(stderr, "split_check rank %d: FAIL (line %d): ", rank, __LINE__);             \
      fprintf(stderr, __VA_ARGS__);                                                         \
      fputc('\n', stderr);                                                                  \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

/* A call that must succeed; on failure, the communicator's sentence says why. */
#define OK(call, comm)                                                                      \
  do {                                                                                      \
    tutti_result_t ok_r_ = (call);                                                          \
    CHECK(ok_r_ == TUTTI_SUCCESS, "%s returned %s: %s", #call, tutti_result_string(ok_r_),  \
          (comm) ? tutti_comm_last_error(comm) : "(no communicator)");                      \
  } while (0)

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* What parent rank r contributes to the evens' all-reduce, element i of iteration it. */
static int32_t even_value(int r, size_t i, int it) {
  return (int32_t)(((size_t)r * 131 + i * 7 + (size_t)it * 3) % 1009) - 500;
}

/* What parent rank r contributes to the odds' all-gather. */
static int32_t odd_value(int r, size_t i, int it) {
  return (int32_t)((size_t)r * 1000003 + i * 5 + (size_t)it);
}

/* Parent ranks of one parity, in the order of the new communicator (keys size - rank, so
 * descending). */
static int half_members(int parity, int *out) {
  int n = 0;
  for (int r = size - 1; r >= 0; r--)
    if (r % 2 == parity) out[n++] = r;
  return n;
}

static void check_rank_size(tutti_comm_t c, int want_rank, int want_size, const char *what) {
  int r = -1, s = -1;
  OK(tutti_comm_rank(c, &r), c);
  OK(tutti_comm_size(c, &s), c);
  CHECK(r == want_rank && s == want_size, "%s: rank %d of %d, expected %d of %d", what, r, s,
        want_rank, want_size);
}

/* All-reduce of the parent rank on c: the sum over the members says who they are. */
static void check_members_sum(tutti_comm_t c, int32_t want, const char *what) {
  int32_t v = rank, sum = -1;
  OK(tutti_allreduce(&v, &sum, 1, TUTTI_INT32, TUTTI_SUM, c), c);
  CHECK(sum == want, "%s: members' parent ranks sum to %d, expected %d", what, (int)sum,
        (int)want);
}

static void parent_check(tutti_comm_t world, int it) {
  int32_t v[3] = {rank, 1, it}, s[3];
  OK(tutti_allreduce(v, s, 3, TUTTI_INT32, TUTTI_SUM, world), world);
  CHECK(s[0] == size * (size - 1) / 2 && s[1] == size && s[2] == it * size,
        "parent all-reduce at iteration %d gave %d %d %d", it, (int)s[0], (int)s[1], (int)s[2]);
}

/* Step 2: the halves run different collectives at once, with parent collectives between. */
static void run_halves(tutti_comm_t world, tutti_comm_t half, const int *members, int n) {
  const int iters = 8;
  const size_t count_max = 50021 + 13 * iters;
  int32_t *send = malloc(count_max * sizeof *send);
  int32_t *recv = malloc(count_max * (size_t)n * sizeof *recv);
  CHECK(send && recv, "out of memory");
  for (int it = 0; it < iters; it++) {
    size_t count = 50021 + 13 * (size_t)it;
    if (rank % 2 == 0) {
      for (size_t i = 0; i < count; i++) send[i] = even_value(rank, i, it);
      OK(tutti_allreduce(send, recv, count, TUTTI_INT32, TUTTI_SUM, half), half);
      for (size_t i = 0; i < count; i++) {
        int32_t want = 0;
        for (int m = 0; m < n; m++) want += even_value(members[m], i, it);
        CHECK(recv[i] == want, "evens' all-reduce #%d: [%zu] = %d, expected %d", it, i,
              (int)recv[i], (int)want);
      }
    } else {
      for (size_t i = 0; i < count; i++) send[i] = odd_value(rank, i, it);
      OK(tutti_allgather(send, recv, count, TUTTI_INT32, half), half);
      for (int m = 0; m < n; m++)
        for (size_t i = 0; i < count; i++)
          CHECK(recv[(size_t)m * count + i] == odd_value(members[m], i, it),
                "odds' all-gather #%d: block %d [%zu] = %d, expected %d", it, m, i,
                (int)recv[(size_t)m * count + i], (int)odd_value(members[m], i, it));
    }
    if (it % 3 == 2) parent_check(world, it);
  }
  free(send);
  free(recv);
}

static void check_bad_color(tutti_comm_t world) {
  int bad_rank = size - 1;
  tutti_comm_t c = (tutti_comm_t)&c; /* must come back NULL */
  double t0 = now_s();
  tutti_result_t r = tutti_comm_split(world, rank == bad_rank ? -5 : 0, 0, &c);
  double dt = now_s() - t0;
  const char *err = tutti_comm_last_error(world);
  printf("split_check rank %d: color -5 on rank %d: %s after %.3f s: %s\n", rank, bad_rank,
         tutti_result_string(r), dt, err);
  tutti_result_t want = rank == bad_rank ? TUTTI_ERR_INVALID_ARGUMENT : TUTTI_ERR_INVALID_USAGE;
  CHECK(r == want, "expected %s", tutti_result_string(want));
  CHECK(c == NULL, "newcomm is not NULL after a failed split");
  CHECK(dt < 5.0, "failing took %.3f s", dt);
  CHECK(strstr(err, "tutti_comm_split") && strstr(err, "-5"), "last error \"%s\" does not name "
        "the call and the color", err);
}

static void check_null_args(tutti_comm_t world) {
  tutti_comm_t c = NULL;
  CHECK(tutti_comm_split(NULL, 0, 0, &c) == TUTTI_ERR_INVALID_ARGUMENT, "split of NULL");
  CHECK(tutti_comm_split(world, 0, 0, NULL) == TUTTI_ERR_INVALID_ARGUMENT, "split to NULL");
  CHECK(tutti_comm_dup(NULL, &c) == TUTTI_ERR_INVALID_ARGUMENT, "dup of NULL");
  CHECK(tutti_comm_dup(world, NULL) == TUTTI_ERR_INVALID_ARGUMENT, "dup to NULL");
}

int main(void) {
  tutti_comm_t world = NULL;
  tutti_result_t r = tutti_comm_init_env(&world);
  CHECK(r == TUTTI_SUCCESS, "tutti_comm_init_env: %s", tutti_result_string(r));
  OK(tutti_comm_rank(world, &rank), world);
  OK(tutti_comm_size(world, &size), world);
  int *members = malloc((size_t)size * sizeof *members);
  CHECK(members, "out of memory");

  /* 1: evens and odds, keys reversed. */
  tutti_comm_t half = NULL;
  OK(tutti_comm_split(world, rank % 2, size - rank, &half), world);
  CHECK(half != NULL, "split gave NULL for color %d", rank % 2);
  int n = half_members(rank % 2, members), me = -1;
  for (int m = 0; m < n; m++)
    if (members[m] == rank) me = m;
  check_rank_size(half, me, n, "even/odd split");

  /* 2: different collectives on the halves at once, parent collectives in between. */
  run_halves(world, half, members, n);
  parent_check(world, 100);

  /* 3: equal keys keep the parent order. */
  tutti_comm_t third = NULL;
  OK(tutti_comm_split(world, rank % 3, 0, &third), world);
  int32_t sum3 = 0, before = 0, n3 = 0;
  for (int q = rank % 3; q < size; q += 3, n3++) {
    sum3 += q;
    if (q < rank) before++;
  }
  check_rank_size(third, before, n3, "split by rank % 3");
  check_members_sum(third, sum3, "split by rank % 3");

  /* 4: dup. */
  tutti_comm_t dup = NULL;
  OK(tutti_comm_dup(world, &dup), world);
  check_rank_size(dup, rank, size, "dup");
  check_members_sum(dup, size * (size - 1) / 2, "dup");
  parent_check(world, 101);

  /* 5: TUTTI_SPLIT_NOCOLOR on rank 0. */
  tutti_comm_t rest = (tutti_comm_t)&rest; /* must come back NULL on rank 0 */
  OK(tutti_comm_split(world, rank == 0 ? TUTTI_SPLIT_NOCOLOR : 7, rank, &rest), world);
  if (rank == 0) {
    CHECK(rest == NULL, "TUTTI_SPLIT_NOCOLOR gave a communicator");
  } else {
    check_rank_size(rest, rank - 1, size - 1, "split without rank 0");
    check_members_sum(rest, size * (size - 1) / 2, "split without rank 0");
  }

  /* 6: a bad color fails everywhere, and the parent survives it. */
  check_bad_color(world);
  parent_check(world, 102);

  /* 7: local argument checks. */
  check_null_args(world);

  /* The halves again, after all that, then everything goes. */
  int32_t half_sum = 0;
  for (int m = 0; m < n; m++) half_sum += members[m];
  check_members_sum(half, half_sum, "halves, last");
  OK(tutti_comm_destroy(half), NULL);
  OK(tutti_comm_destroy(third), NULL);
  OK(tutti_comm_destroy(dup), NULL);
  if (rest) OK(tutti_comm_destroy(rest), NULL);
  parent_check(world, 103);
  OK(tutti_comm_destroy(world), NULL);
  free(members);
  printf("split_check rank %d: PASS\n", rank);
  return 0;
}
