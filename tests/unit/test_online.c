/* Online selection (tune/online.c): the first calls of a size try the model's candidates in
 * turn with correct results, every rank settles on the same one, the slowest rank's time
 * decides, and rank 0's TUTTI_TUNE_ONLINE holds for all. Three ranks are forked per test
 * (harness_run_ranks). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "algo/algo.h"
#include "algo/tuner.h"
#include "core/internal.h"
#include "harness.h"
#include "ranks.h"
#include "tune/online.h"

#define N 3
#define COUNT 8192 /* int64: 64 KiB, above TUTTI_ONLINE_MIN_BYTES */
#define CALLS (2 + TUTTI_ONLINE_MAX_CAND * TUTTI_ONLINE_MAX_REPS + 8)

typedef struct seen {
  int rc, ok;
  int ncand, reps, trial_reps, used;
  unsigned dropped;     /* the candidates the first turns dropped (bits) */
  int settled_at;       /* the call of the first settled select, -1 if none */
  int oneshot_last;     /* settled sizes whose last trial ran one-shot */
  char ran[CALLS][24];  /* the algorithm of each call */
  char cand[TUTTI_ONLINE_MAX_CAND][24];
  char pick[24];        /* the settled pick, "" if none */
  unsigned gap;         /* its calls between re-checks */
  char err[512];        /* the last error, where the body failed on purpose */
  unsigned seq;         /* the call a failure should name */
} seen_t;

typedef void (*body_fn)(tutti_comm_t comm, int r, seen_t *out);

typedef struct {
  const char *const *env;
  body_fn body;
  seen_t *seen;
} job_t;

/* Calls of a size before it settles: the warm-up, every candidate's first turn (two calls
 * where it has more than one trial), then the rest of the trials of those the first turns
 * left (online.h: TUTTI_ONLINE_PRUNE), none where one is left. */
static int active_count(int ncand, unsigned dropped) {
  int k = 0;
  for (int i = 0; i < ncand; i++) k += !(dropped >> i & 1);
  return k;
}
static int trial_calls(int ncand, int trial_reps, unsigned dropped) {
  int tl = tutti__online_turn(trial_reps), left = active_count(ncand, dropped);
  if (trial_reps <= tl) return 1 + ncand * trial_reps;
  return 1 + ncand * tl + (left > 1 ? left * (trial_reps - tl) : 0);
}

/* The candidate of trial call c (c >= 1, before the size settles): turns in the model's
 * order reversed, all candidates first, then those left. */
static int trial_cand(int ncand, int trial_reps, unsigned dropped, int c) {
  int tl = tutti__online_turn(trial_reps), first = 1 + ncand * tl;
  int act[TUTTI_ONLINE_MAX_CAND], k = 0;
  if (c < first || trial_reps <= tl) return ncand - 1 - (c - 1) / tl % ncand;
  for (int i = 0; i < ncand; i++)
    if (!(dropped >> i & 1)) act[k++] = i;
  return act[k - 1 - (c - first) / tl % k];
}

static void rank_main(const tutti_unique_id_t *id, int r, void *arg) {
  const job_t *job = arg;
  seen_t *out = &job->seen[r];
  for (int i = 0; job->env[i]; i += 3)
    if (atoi(job->env[i]) == r || job->env[i][0] == '*')
      setenv(job->env[i + 1], job->env[i + 2], 1);
  tutti_comm_t comm;
  out->rc = tutti_comm_init_rank(&comm, N, id, r);
  if (out->rc != TUTTI_SUCCESS) _exit(0);
  job->body(comm, r, out);
  tutti_online_t *o = &comm->online;
  out->used = o->used;
  for (int i = 0; i < o->used; i++) { /* the last trial is the model's pick's */
    const tutti_online_slot_t *s = &o->slot[i];
    out->oneshot_last += s->pick && s->ncand > 1 && !strcmp(s->cand[0]->name, "oneshot");
  }
  if (o->used) {
    tutti_online_slot_t *s = &o->slot[0];
    out->ncand = s->ncand;
    out->reps = s->reps;
    out->trial_reps = s->trial_reps;
    out->dropped = s->dropped;
    for (int i = 0; i < s->ncand; i++) snprintf(out->cand[i], 24, "%s", s->cand[i]->name);
    if (s->pick) snprintf(out->pick, 24, "%s", s->pick->name);
    out->gap = s->gap;
  }
  tutti_comm_destroy(comm);
  _exit(0);
}

static seen_t *run(const char *const *env, body_fn body) {
  seen_t *s = mmap(NULL, N * sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
                   0);
  ASSERT(s != MAP_FAILED);
  memset(s, 0, N * sizeof *s);
  setenv("TUTTI_TIMEOUT", "60", 1);
  setenv("TUTTI_TUNE_MEASURE", "0", 1); /* fallbacks: the same candidates on every run */
  job_t job = {env, body, s};
  harness_run_ranks(N, rank_main, &job);
  return s;
}

static tutti_coll_args_t allreduce_args(void *buf) {
  return (tutti_coll_args_t){.coll = TUTTI_COLL_ALLREDUCE, .sendbuf = buf, .recvbuf = buf,
                             .count = COUNT, .dtype = TUTTI_INT64, .op = TUTTI_SUM,
                             .esize = sizeof(int64_t)};
}

/* CALLS all-reduces of one size, each checked exactly, noting which algorithm ran. */
static void allreduce_loop(tutti_comm_t comm, int r, seen_t *out) {
  static int64_t x[COUNT];
  out->ok = 1;
  for (int c = 0; c < CALLS; c++) {
    tutti_coll_args_t a = allreduce_args(x);
    snprintf(out->ran[c], 24, "%s", tutti__algo_select(comm, &a)->name);
    for (int i = 0; i < COUNT; i++) x[i] = (int64_t)(r + 1) * (i - 4000) + c;
    if (tutti_allreduce(x, x, COUNT, TUTTI_INT64, TUTTI_SUM, comm) != TUTTI_SUCCESS) {
      out->ok = 0;
      return;
    }
    for (int i = 0; i < COUNT; i++) /* ranks 1..3 times (i - 4000), plus c from each */
      if (x[i] != 6 * (int64_t)(i - 4000) + N * c) out->ok = 0;
  }
}

TEST(trials_in_turn_then_one_pick_everywhere) {
  seen_t *s = run((const char *const[]){NULL}, allreduce_loop);
  for (int r = 0; r < N; r++) {
    ASSERT_EQ(s[r].rc, TUTTI_SUCCESS);
    ASSERT(s[r].ok);
    ASSERT(s[r].ncand >= 2 && s[r].ncand <= TUTTI_ONLINE_MAX_CAND);
    /* 64 KiB: at least 3, more as the fallback model predicts it short */
    ASSERT(s[r].reps >= 3 && s[r].reps <= TUTTI_ONLINE_MAX_REPS);
    ASSERT_EQ(s[r].reps, s[0].reps);
    ASSERT_EQ(s[r].trial_reps, s[r].reps); /* the fallback model knows no CPU count: not crowded */
    ASSERT(s[r].pick[0]);
    ASSERT_STR_EQ(s[r].pick, s[0].pick);
    ASSERT_EQ(s[r].dropped, s[0].dropped);
    int calls = trial_calls(s[r].ncand, s[r].trial_reps, s[r].dropped), known = 0;
    ASSERT(calls + 8 <= CALLS);
    /* A warm-up of the model's pick, then the candidates in turns of two calls (reps >= 3
     * here) in the model's order reversed (its pick last), first one turn each, then the
     * rest of the trials of those left, then the pick for 8 calls (the loop's own selects
     * tick too: its re-check comes after half of TUTTI_ONLINE_RECHECK settled calls). */
    for (int c = 0; c < calls + 8; c++) {
      const char *want = c == 0      ? s[r].cand[0]
                         : c < calls ? s[r].cand[trial_cand(s[r].ncand, s[r].trial_reps,
                                                            s[r].dropped, c)]
                                     : s[r].pick;
      ASSERT_STR_EQ(s[r].ran[c], want);
      ASSERT_STR_EQ(s[r].ran[c], s[0].ran[c]);
    }
    for (int i = 0; i < s[r].ncand; i++) known |= !strcmp(s[r].pick, s[r].cand[i]);
    ASSERT(known);
  }
}

/* Every collective at sizes where the candidates include one-shot, each size through its
 * trials and past its agreement, every result exact: the agreement's exchange must not be
 * taken for a disagreement about a one-shot call (mbox.c), whichever candidate ran last. */
static void many_sizes(tutti_comm_t comm, int r, seen_t *out) {
  static int64_t in[N * COUNT], res[N * COUNT];
  out->ok = 1;
  for (size_t count = 512; count <= COUNT && out->ok; count *= 2)
    for (int call = 0; call < 16 && out->ok; call++) {
      for (size_t i = 0; i < N * count; i++) in[i] = (int64_t)(r + 1) * (int64_t)i + call;
      tutti_result_t rc = tutti_allreduce(in, res, count, TUTTI_INT64, TUTTI_SUM, comm);
      for (size_t i = 0; i < count && rc == TUTTI_SUCCESS; i++)
        out->ok &= res[i] == 6 * (int64_t)i + N * call;
      if (rc == TUTTI_SUCCESS)
        rc = tutti_reduce_scatter(in, res, count / N, TUTTI_INT64, TUTTI_SUM, comm);
      for (size_t i = 0; i < count / N && rc == TUTTI_SUCCESS; i++)
        out->ok &= res[i] == 6 * (int64_t)(r * (count / N) + i) + N * call;
      if (rc == TUTTI_SUCCESS)
        rc = tutti_allgather(in, res, count / N, TUTTI_INT64, comm);
      for (size_t i = 0; i < N * (count / N) && rc == TUTTI_SUCCESS; i++) {
        size_t from = i / (count / N), j = i % (count / N);
        out->ok &= res[i] == (int64_t)(from + 1) * (int64_t)j + call;
      }
      if (rc == TUTTI_SUCCESS) {
        memcpy(res, in, count * sizeof *res);
        rc = tutti_broadcast(res, res, count, TUTTI_INT64, call % N, comm);
      }
      for (size_t i = 0; i < count && rc == TUTTI_SUCCESS; i++)
        out->ok &= res[i] == (int64_t)(call % N + 1) * (int64_t)i + call;
      if (rc != TUTTI_SUCCESS) {
        fprintf(stderr, "rank %d, count %zu, call %d: %s: %s\n", r, count, call,
                tutti_result_string(rc), tutti_comm_last_error(comm));
        out->ok = 0;
      }
    }
}

TEST(many_sizes_settle_with_exact_results) {
  seen_t *s = run((const char *const[]){NULL}, many_sizes);
  for (int r = 0; r < N; r++) {
    ASSERT_EQ(s[r].rc, TUTTI_SUCCESS);
    ASSERT(s[r].ok);
    ASSERT(s[r].used >= 8); /* sizes of 4 KiB and more, several collectives */
  }
}

/* The same, with the size's candidates reordered (alike on every rank) so that its last
 * trial (the model's pick's) runs one-shot: the exchange after it waits on the queues while the peers' mailbox
 * posts of that call are still up. */
static void oneshot_last(tutti_comm_t comm, int r, seen_t *out) {
  static int64_t x[COUNT / 2];
  tutti_coll_args_t a = allreduce_args(x);
  a.count = COUNT / 2; /* 32 KiB: within a one-shot mailbox */
  tutti__algo_select(comm, &a); /* makes the size's slot */
  tutti_online_slot_t *s = &comm->online.slot[0];
  int at = -1;
  for (int i = 0; i < s->ncand; i++)
    if (!strcmp(s->cand[i]->name, "oneshot")) at = i;
  out->ok = comm->online.used == 1 && s->ncand > 1 && at >= 0;
  if (!out->ok) return;
  const tutti_algo_t *first = s->cand[0];
  s->cand[0] = s->cand[at];
  s->cand[at] = first;
  for (int call = 0; call < CALLS && out->ok; call++) {
    for (int i = 0; i < COUNT / 2; i++) x[i] = (int64_t)(r + 1) * i - call;
    tutti_result_t rc = tutti_allreduce(x, x, COUNT / 2, TUTTI_INT64, TUTTI_SUM, comm);
    if (rc != TUTTI_SUCCESS)
      fprintf(stderr, "rank %d, call %d: %s\n", r, call, tutti_comm_last_error(comm));
    out->ok = rc == TUTTI_SUCCESS;
    for (int i = 0; i < COUNT / 2 && out->ok; i++) out->ok = x[i] == 6 * (int64_t)i - N * call;
  }
}

TEST(a_one_shot_last_trial_then_the_exchange) {
  seen_t *s = run((const char *const[]){NULL}, oneshot_last);
  for (int r = 0; r < N; r++) {
    ASSERT_EQ(s[r].rc, TUTTI_SUCCESS);
    ASSERT(s[r].ok);
    ASSERT_EQ(s[r].oneshot_last, 1);
    ASSERT(s[r].pick[0]);
  }
}

/* Made-up trial times: candidate 0 is the fastest on ranks 0 and 1 but slow on rank 2, so
 * only the slowest rank's view makes candidate 1 the pick. */
static double fake_us(int r, int cand) {
  if (cand == 0) return r == 2 ? 500 : 10;
  return 100 + 10 * cand;
}

/* Trials timed by fake_us until the size settles, or (first_turns) until every candidate's
 * first turn is agreed. */
static void fake_loop(tutti_comm_t comm, int r, seen_t *out, int first_turns) {
  static int64_t x[COUNT];
  out->ok = 1;
  for (int c = 0; c < CALLS && out->ok; c++) {
    tutti_coll_args_t a = allreduce_args(x);
    const tutti_algo_t *algo = tutti__algo_select(comm, &a);
    snprintf(out->ran[c], 24, "%s", algo->name);
    tutti_online_t *o = &comm->online;
    if (!o->running) break; /* settled */
    int cand = o->running_cand < 0 ? 0 : o->running_cand;
    tutti__online_timed(comm, (int64_t)(fake_us(r, cand) * 1e3), 0);
    if (tutti__online_agree(comm) != TUTTI_SUCCESS) out->ok = 0;
    if (first_turns && o->slot[0].first_done) break;
  }
}

static void fake_trials(tutti_comm_t comm, int r, seen_t *out) { fake_loop(comm, r, out, 0); }

TEST(the_slowest_rank_decides) {
  seen_t *s = run((const char *const[]){NULL}, fake_trials);
  for (int r = 0; r < N; r++) {
    ASSERT_EQ(s[r].rc, TUTTI_SUCCESS);
    ASSERT(s[r].ok);
    ASSERT(s[r].ncand >= 2);
    ASSERT_STR_EQ(s[r].pick, s[r].cand[1]);
  }
}

/* First use (task.c: comm->first_use_ns): every trial of candidate 1 takes 5000 us on every
 * rank, 4950 us of which rank 0 spent mapping memory in while ranks 1 and 2 waited for it.
 * Without that time candidate 1 takes 50 us, faster than candidate 0's 100, so the largest
 * first use comes off the slowest rank's time (leaving each rank's own out would still leave
 * ranks 1 and 2 at 5000, and candidate 0 would be the pick). */
static void first_use_trials(tutti_comm_t comm, int r, seen_t *out) {
  static int64_t x[COUNT];
  out->ok = 1;
  for (int c = 0; c < CALLS && out->ok; c++) {
    tutti_coll_args_t a = allreduce_args(x);
    (void)tutti__algo_select(comm, &a);
    tutti_online_t *o = &comm->online;
    if (!o->running) break;
    int cand = o->running_cand < 0 ? 0 : o->running_cand;
    double us = cand == 0 ? 100 : cand == 1 ? 5000 : 300, first = cand == 1 && r == 0 ? 4950 : 0;
    tutti__online_timed(comm, (int64_t)(us * 1e3), (int64_t)(first * 1e3));
    if (tutti__online_agree(comm) != TUTTI_SUCCESS) out->ok = 0;
  }
}

TEST(first_use_is_left_out_of_the_trials) {
  seen_t *s = run((const char *const[]){NULL}, first_use_trials);
  for (int r = 0; r < N; r++) {
    ASSERT_EQ(s[r].rc, TUTTI_SUCCESS);
    ASSERT(s[r].ok);
    ASSERT(s[r].ncand >= 2);
    ASSERT_STR_EQ(s[r].pick, s[r].cand[1]);
  }
}

/* The margin (TUTTI_ONLINE_MARGIN): candidate 0, the model's pick, takes 100 us a trial;
 * the last candidate takes `last_us`, every other one 200. Computed from the margin so the
 * test follows it: a challenger just inside it (half the margin faster) leaves the size
 * with the model's pick, one twice the margin faster takes it. */
static double last_us;
static void margin_trials(tutti_comm_t comm, int r, seen_t *out) {
  static int64_t x[COUNT];
  (void)r;
  out->ok = 1;
  for (int c = 0; c < CALLS && out->ok; c++) {
    tutti_coll_args_t a = allreduce_args(x);
    (void)tutti__algo_select(comm, &a);
    tutti_online_t *o = &comm->online;
    if (!o->running) break;
    int cand = o->running_cand < 0 ? 0 : o->running_cand;
    double us = cand == 0 ? 100 : cand == o->slot[0].ncand - 1 ? last_us : 200;
    tutti__online_timed(comm, (int64_t)(us * 1e3), 0);
    if (tutti__online_agree(comm) != TUTTI_SUCCESS) out->ok = 0;
  }
}

TEST(a_challenger_must_beat_the_model_by_the_margin) {
  for (int wide = 0; wide < 2; wide++) {
    last_us = 100 * (1 - (wide ? 2 : 0.5) * TUTTI_ONLINE_MARGIN);
    seen_t *s = run((const char *const[]){NULL}, margin_trials);
    for (int r = 0; r < N; r++) {
      ASSERT_EQ(s[r].rc, TUTTI_SUCCESS);
      ASSERT(s[r].ok);
      ASSERT(s[r].ncand >= 2);
      ASSERT_STR_EQ(s[r].pick, s[r].cand[wide ? s[r].ncand - 1 : 0]);
    }
  }
}

/* TUTTI_ONLINE_PRUNE: candidate 0 takes 100 us a trial; with `two_close`, candidate 1 110
 * us; every other one 3.5x the fastest (more than the factor) on rank 1 only, 100 us on the
 * others (the slowest rank's time decides). The far slower ones run their first turn only;
 * where one candidate is left the size settles right after the first turns. */
static int two_close;
static void prune_trials(tutti_comm_t comm, int r, seen_t *out) {
  static int64_t x[COUNT];
  tutti_online_t *o = &comm->online;
  out->ok = 1;
  out->settled_at = -1;
  for (int c = 0; c < CALLS && out->ok; c++) {
    tutti_coll_args_t a = allreduce_args(x);
    const tutti_algo_t *algo = tutti__algo_select(comm, &a);
    snprintf(out->ran[c], 24, "%s", algo->name);
    if (!o->running) {
      out->settled_at = c;
      break;
    }
    int cand = o->running_cand < 0 ? 0 : o->running_cand;
    double us = cand == 0                ? 100
                : cand == 1 && two_close ? 110
                : r == 1                 ? 3.5 * 100
                                         : 100;
    tutti__online_timed(comm, (int64_t)(us * 1e3), 0);
    if (tutti__online_agree(comm) != TUTTI_SUCCESS) out->ok = 0;
  }
}

TEST(far_slower_candidates_stop_after_their_first_turn) {
  ASSERT(3.5 > TUTTI_ONLINE_PRUNE && 1.1 < TUTTI_ONLINE_PRUNE);
  for (two_close = 0; two_close < 2; two_close++) {
    seen_t *s = run((const char *const[]){NULL}, prune_trials);
    for (int r = 0; r < N; r++) {
      ASSERT_EQ(s[r].rc, TUTTI_SUCCESS);
      ASSERT(s[r].ok);
      ASSERT(s[r].ncand >= 3 && s[r].trial_reps > 2);
      unsigned want = ((1u << s[r].ncand) - 1) & ~(two_close ? 3u : 1u);
      ASSERT_EQ(s[r].dropped, want);
      int calls = 1 + 2 * s[r].ncand + (two_close ? 2 * (s[r].trial_reps - 2) : 0);
      ASSERT_EQ(trial_calls(s[r].ncand, s[r].trial_reps, want), calls);
      ASSERT_EQ(s[r].settled_at, calls);
      for (int c = 1 + 2 * s[r].ncand; c < calls; c++) /* only 0 and 1 after the first turns */
        ASSERT(!strcmp(s[r].ran[c], s[r].cand[0]) || !strcmp(s[r].ran[c], s[r].cand[1]));
      for (int c = 0; c <= calls; c++) ASSERT_STR_EQ(s[r].ran[c], s[0].ran[c]);
      ASSERT_STR_EQ(s[r].pick, s[r].cand[0]);
    }
  }
}

/* Rank 2 dies where the others agree on the trials (its process exits once its timed calls
 * are done): they get TUTTI_ERR_REMOTE, and the error names the dead rank and the call the
 * agreement follows, the call it fails (core/error.c), as a job's fault reports must. */
static void dies_at_agreement(tutti_comm_t comm, int r, seen_t *out) {
  static int64_t x[COUNT];
  int one = 1, sum = 0; /* a real call first (too small for online selection): seq >= 1 */
  out->ok = tutti_allreduce(&one, &sum, 1, TUTTI_INT32, TUTTI_SUM, comm) == TUTTI_SUCCESS;
  tutti_online_t *o = &comm->online;
  for (int c = 0; c < CALLS && out->ok; c++) {
    tutti_coll_args_t a = allreduce_args(x);
    (void)tutti__algo_select(comm, &a);
    if (!o->running) break;
    tutti__online_timed(comm, (int64_t)(fake_us(r, o->running_cand < 0 ? 0 : o->running_cand) *
                                        1e3), 0);
    if (!o->due) continue;
    if (r == 2) _exit(0);
    comm->call_seq = ++comm->seq; /* as task.c runs it: inside the call */
    out->rc = tutti__online_agree(comm);
    out->seq = comm->call_seq;
    comm->call_seq = 0;
    snprintf(out->err, sizeof out->err, "%s", tutti_comm_last_error(comm));
    return;
  }
  out->ok = 0; /* never due */
}

TEST(a_rank_dying_at_the_agreement_fails_the_call_it_follows) {
  seen_t *s = run((const char *const[]){NULL}, dies_at_agreement);
  for (int r = 0; r < 2; r++) {
    ASSERT(s[r].ok);
    ASSERT_EQ(s[r].rc, TUTTI_ERR_REMOTE);
    char want[64];
    snprintf(want, sizeof want, "call #%u ", s[r].seq);
    if (!strstr(s[r].err, want) || !strstr(s[r].err, "rank 2 (pid")) {
      fprintf(stderr, "rank %d: the error does not name \"%s\" and rank 2: %s\n", r, want,
              s[r].err);
      ASSERT(0);
    }
  }
}

/* Re-checks: after the trials (candidate 0 the fastest, 10 us), each settled call counts
 * towards a re-check TUTTI_ONLINE_RECHECK calls on, which alternates candidate 0 and 1, reps
 * calls each; now 0 takes 100 us and 1 50 us, slower than 0's trials but faster than 0 in the
 * same spell (comparing with 0's old trials would not find it faster). A win must be
 * confirmed: the same pair runs again TUTTI_ONLINE_CONFIRM calls on. If 1 wins again
 * (steady) the pick becomes 1, and the next re-check, twice as far on, pits 1 against the
 * next candidate (slower: the pick stays). If 1 takes 200 us in the confirmation (a lucky
 * spell before), 0 stays, and the next re-check, twice as far on, pits 0 against the next
 * challenger. The exact schedule of every call is checked, through the pick cache as the
 * call path uses it. */
#define RECHECK_CALLS 480
static void fake_rechecks(tutti_comm_t comm, int r, seen_t *out, int steady) {
  static int64_t x[COUNT];
  int ran[RECHECK_CALLS]; /* -2: settled on candidate 0, -3: on 1, -4: other; else trial */
  tutti_online_t *o = &comm->online;
  out->ok = 1;
  for (int c = 0; c < RECHECK_CALLS && out->ok; c++) {
    tutti_coll_args_t a = allreduce_args(x);
    const tutti_algo_t *algo = tutti__algo_select(comm, &a);
    tutti_online_slot_t *s = &o->slot[0];
    if (!o->running) {
      ran[c] = algo == s->cand[0] ? -2 : algo == s->cand[1] ? -3 : -4;
      continue;
    }
    int cand = o->running_cand < 0 ? 0 : o->running_cand;
    ran[c] = cand;
    double one = !steady && s->confirm ? 200 : 50;
    double us = !s->pick ? (cand == 0 ? 10 : 100 + 10 * cand) : (cand == 1 ? one : 100 + cand);
    tutti__online_timed(comm, (int64_t)(us * 1e3), 0);
    if (tutti__online_agree(comm) != TUTTI_SUCCESS) out->ok = 0;
  }
  tutti_online_slot_t *s = &o->slot[0];
  out->ncand = s->ncand;
  out->reps = s->reps;
  out->trial_reps = s->trial_reps;
  /* Every candidate but 0 is 10x slower in the trials: dropped after the first turns. */
  if (s->dropped != (1u << s->ncand) - 2) out->ok = 0;
  int k = trial_calls(s->ncand, s->trial_reps, s->dropped), gap = TUTTI_ONLINE_RECHECK;
  int rc = 2 * s->reps;
  int r1 = k + gap - 1, c1 = r1 + rc + TUTTI_ONLINE_CONFIRM - 1, r2 = c1 + rc + 2 * gap - 1;
  int pick = steady ? -3 : -2, pick_i = steady ? 1 : 0;
  /* Turns of two calls of one candidate where it has more than one (online.c). */
  int rl = s->reps >= 2 ? 2 : 1;
  /* The next challenger in the model's order after 1, skipping the pick. */
  int next = s->ncand > 2 ? 2 : steady ? 0 : 1;
  /* Trials, gap - 1 settled calls on candidate 0, the re-check (0, 1, 0, 1, ... in turns of
   * rl calls: challengers in the model's order, skipping the pick), TUTTI_ONLINE_CONFIRM - 1
   * calls on 0, the confirmation (0, 1, ...), then the pick until the next re-check 2 * gap
   * calls later. */
  for (int c = 0; c < RECHECK_CALLS && out->ok; c++) {
    int want;
    if (c < k) /* the warm-up, then turns in the model's order reversed */
      want = c == 0 ? 0 : trial_cand(s->ncand, s->trial_reps, s->dropped, c);
    else if (c < r1) want = -2;
    else if (c < r1 + rc) want = (c - r1) / rl % 2;
    else if (c < c1) want = -2;
    else if (c < c1 + rc) want = (c - c1) / rl % 2;
    else if (c < r2) want = pick;
    else if (c < r2 + rc) want = (c - r2) / rl % 2 ? next : pick_i;
    else want = pick;
    if (ran[c] != want) {
      fprintf(stderr, "rank %d: call %d ran %d, want %d\n", r, c, ran[c], want);
      out->ok = 0;
    }
  }
}

static void steady_rechecks(tutti_comm_t comm, int r, seen_t *out) {
  fake_rechecks(comm, r, out, 1);
}

static void lucky_rechecks(tutti_comm_t comm, int r, seen_t *out) {
  fake_rechecks(comm, r, out, 0);
}

TEST(a_recheck_confirmed_changes_the_pick) {
  seen_t *s = run((const char *const[]){NULL}, steady_rechecks);
  for (int r = 0; r < N; r++) {
    ASSERT_EQ(s[r].rc, TUTTI_SUCCESS);
    ASSERT(s[r].ncand >= 2);
    ASSERT(1 + s[r].ncand * s[r].trial_reps + 3 * TUTTI_ONLINE_RECHECK + TUTTI_ONLINE_CONFIRM +
               6 * s[r].reps < RECHECK_CALLS);
    ASSERT(s[r].ok);
    ASSERT_STR_EQ(s[r].pick, s[r].cand[1]);
  }
}

TEST(a_recheck_won_once_does_not) {
  seen_t *s = run((const char *const[]){NULL}, lucky_rechecks);
  for (int r = 0; r < N; r++) {
    ASSERT_EQ(s[r].rc, TUTTI_SUCCESS);
    ASSERT(s[r].ok);
    ASSERT_STR_EQ(s[r].pick, s[r].cand[0]);
  }
}

/* TUTTI_TUNE_ONLINE differs between the ranks: rank 0's holds everywhere. */
TEST(rank_0_setting_holds) {
  seen_t *s = run((const char *const[]){"0", "TUTTI_TUNE_ONLINE", "0", NULL}, allreduce_loop);
  for (int r = 0; r < N; r++) {
    ASSERT(s[r].ok);
    ASSERT_EQ(s[r].used, 0);
    for (int c = 1; c < CALLS; c++) ASSERT_STR_EQ(s[r].ran[c], s[r].ran[0]);
  }
  s = run((const char *const[]){"1", "TUTTI_TUNE_ONLINE", "0", "2", "TUTTI_TUNE_ONLINE", "0",
                                NULL},
          allreduce_loop);
  for (int r = 0; r < N; r++) {
    ASSERT(s[r].ok);
    ASSERT_EQ(s[r].used, 1);
    ASSERT(s[r].pick[0]);
    ASSERT_STR_EQ(s[r].pick, s[0].pick);
  }
}

/* The trials' count: tutti__online_reps by size, four times that below 16 MiB where the most
 * crowded host has more ranks than the agreed model's CPUs; where the CPUs are not known, or
 * every rank has one, or the call is 16 MiB or more, no more. Re-checks keep reps. Calls
 * predicted short get enough for TUTTI_ONLINE_TRIAL_US (50 us) each, at most 16. */
TEST(short_calls_get_more_trials) {
  tutti_tune_query_t q = {0};
  q.coll = TUTTI_COLL_ALLGATHER;
  q.nranks = q.max_local = 2;
  q.bytes = 65536;
  ASSERT_EQ(TUTTI_ONLINE_TRIAL_US, 50.0);
  ASSERT_EQ(TUTTI_ONLINE_MAX_REPS, 16);
  const double pred_us[] = {0, 1, 3, 3.125, 5, 10, 12.5, 13, 20, 1000};
  const int want[] = {3, 16, 16, 16, 10, 5, 4, 4, 3, 3};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    ASSERT_EQ(tutti__online_check_reps(&q, pred_us[i] * 1e-6), want[i]);
    ASSERT_EQ(tutti__online_trial_reps(&q, pred_us[i] * 1e-6), want[i]);
  }
  q.bytes = 16 << 20; /* a long call keeps the size's count */
  ASSERT_EQ(tutti__online_trial_reps(&q, 2e-3), 1);
  /* crowded: the larger of the two, still at most 16 */
  tutti_model_t md = {0};
  md.have = 1;
  md.cpus = 2;
  q.model = &md;
  q.max_local = 4;
  q.bytes = 65536;
  ASSERT_EQ(tutti__online_trial_reps(&q, 30e-6), TUTTI_ONLINE_CROWDED_REPS * 3);
  ASSERT_EQ(tutti__online_trial_reps(&q, 2e-6), 16);
  ASSERT_EQ(tutti__online_check_reps(&q, 30e-6), 3);
}

TEST(crowded_hosts_try_small_sizes_longer) {
  tutti_model_t md = {0};
  md.have = 1;
  md.cpus = 2;
  tutti_tune_query_t q = {0};
  q.coll = TUTTI_COLL_ALLREDUCE;
  q.nranks = q.max_local = 4;
  q.model = &md;
  size_t sizes[] = {4096, 65536, (1 << 20) - 4, 1 << 20, 16 << 20, 64 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    q.bytes = sizes[i];
    int reps = tutti__online_reps(q.bytes);
    ASSERT_EQ(reps, q.bytes < (1 << 20) ? 3 : q.bytes < (16 << 20) ? 2 : 1);
    ASSERT_EQ(tutti__online_trial_reps(&q, 0),
              q.bytes < (16 << 20) ? TUTTI_ONLINE_CROWDED_REPS * reps : reps);
  }
  q.bytes = 65536;
  q.max_local = 2; /* a CPU each */
  ASSERT_EQ(tutti__online_trial_reps(&q, 0), 3);
  q.max_local = 4;
  md.cpus = 0; /* not known */
  ASSERT_EQ(tutti__online_trial_reps(&q, 0), 3);
  q.model = NULL;
  ASSERT_EQ(tutti__online_trial_reps(&q, 0), 3);
}

/* ---- Remembered picks (tune/remember.c): each test its own cache directory ---------------- */

static void cache_dir(char *dir, size_t len) {
  snprintf(dir, len, "/tmp/tutti-remember-XXXXXX");
  if (!mkdtemp(dir)) dir[0] = '\0';
  setenv("XDG_CACHE_HOME", dir, 1);
}

static void cache_drop(const char *dir) {
  char p[128];
  snprintf(p, sizeof p, "%s/tutti/picks", dir);
  unlink(p);
  snprintf(p, sizeof p, "%s/tutti", dir);
  rmdir(p);
  rmdir(dir);
  unsetenv("XDG_CACHE_HOME");
}

/* The picks file's text ("" if none). */
static void picks_text(const char *dir, char *buf, size_t len) {
  char p[128];
  snprintf(p, sizeof p, "%s/tutti/picks", dir);
  buf[0] = '\0';
  FILE *f = fopen(p, "r");
  if (!f) return;
  size_t n = fread(buf, 1, len - 1, f);
  buf[n] = '\0';
  fclose(f);
}

/* fake_trials until every candidate's first turn is agreed, then the job ends unsettled. */
static void fake_first_turns(tutti_comm_t comm, int r, seen_t *out) {
  fake_loop(comm, r, out, 1);
}

static const char *const remember_on[] = {"*", "TUTTI_TUNE_REMEMBER", "1", NULL};

/* The first CALLS / 2 calls (before the loop's first re-check) all ran want, and every rank
 * ends on one pick. Not necessarily want: allreduce_loop selects twice a call, so the re-check
 * 100 selections in runs real calls, and a real challenger may win it (seen once in 5 runs of
 * the suite: ring over deterministic). */
static void assert_started_on(const seen_t *s, const char *want) {
  for (int r = 0; r < N; r++) {
    ASSERT_EQ(s[r].rc, TUTTI_SUCCESS);
    ASSERT(s[r].ok);
    for (int c = 0; c < CALLS / 2; c++) ASSERT_STR_EQ(s[r].ran[c], want);
    ASSERT_STR_EQ(s[r].pick, s[0].pick);
  }
}

/* A job settles the 64 KiB all-reduce on candidate 1 (the slowest rank's view, not the
 * model's pick); the next job of the same shape runs it from its first call on every rank,
 * exact results; the file names it. */
TEST(a_later_job_starts_on_the_settled_pick) {
  char dir[64], text[4096], want[64];
  cache_dir(dir, sizeof dir);
  ASSERT(dir[0]);
  seen_t *a = run(remember_on, fake_trials);
  for (int r = 0; r < N; r++) ASSERT_STR_EQ(a[r].pick, a[r].cand[1]);
  ASSERT(strcmp(a[0].cand[0], a[0].cand[1]));
  picks_text(dir, text, sizeof text);
  ASSERT(!strncmp(text, "tutti-picks 1\nkey ", 18));
  snprintf(want, sizeof want, " allreduce %d %s %d\n", COUNT * 8, a[0].cand[1],
           TUTTI_ONLINE_RECHECK);
  ASSERT(strstr(text, want) != NULL);
  seen_t *b = run(remember_on, allreduce_loop);
  assert_started_on(b, a[0].cand[1]);
  cache_drop(dir);
}

/* The re-checks go on where the earlier job's doubling left off: a line's gap of 3200 calls
 * is the next job's, so its first CALLS calls hold no re-check (at 100 they would). */
TEST(the_recheck_gap_carries_over) {
  char dir[64], text[4096], path[128];
  cache_dir(dir, sizeof dir);
  ASSERT(dir[0]);
  seen_t *a = run(remember_on, fake_trials);
  picks_text(dir, text, sizeof text);
  char *g = strstr(text, " 100\n");
  ASSERT(g != NULL);
  snprintf(path, sizeof path, "%s/tutti/picks", dir);
  FILE *f = fopen(path, "w");
  ASSERT(f != NULL);
  fprintf(f, "%.*s 3200\n", (int)(g - text), text);
  fclose(f);
  seen_t *b = run(remember_on, allreduce_loop);
  for (int r = 0; r < N; r++) {
    ASSERT_EQ(b[r].gap, 3200);
    for (int c = 0; c < CALLS; c++) ASSERT_STR_EQ(b[r].ran[c], a[0].cand[1]);
  }
  cache_drop(dir);
}

/* A job that ends before its trials do (a benchmark's few calls of a crowded size) leaves the
 * winner of the first turns: candidate 1 again. */
TEST(a_short_job_leaves_its_first_turns) {
  char dir[64];
  cache_dir(dir, sizeof dir);
  ASSERT(dir[0]);
  seen_t *a = run(remember_on, fake_first_turns);
  for (int r = 0; r < N; r++) {
    ASSERT(a[r].ok);
    ASSERT_STR_EQ(a[r].pick, ""); /* not settled */
  }
  seen_t *b = run(remember_on, allreduce_loop);
  assert_started_on(b, a[0].cand[1]);
  cache_drop(dir);
}

/* Another shape (a forced chunk size), rank 0's TUTTI_TUNE_REMEMBER=0, or a file that is not
 * a picks file: the job tries afresh (a warm-up of the model's pick, then the trials); the
 * broken file is replaced by a good one. */
TEST(another_shape_or_remember_off_tries_afresh) {
  char dir[64], text[4096], path[128];
  cache_dir(dir, sizeof dir);
  ASSERT(dir[0]);
  seen_t *a = run(remember_on, fake_trials);
  ASSERT_STR_EQ(a[0].pick, a[0].cand[1]);
  const char *const *envs[] = {
      (const char *const[]){"*", "TUTTI_TUNE_REMEMBER", "1", "*", "TUTTI_CHUNK_SIZE", "65536",
                            NULL},
      (const char *const[]){"*", "TUTTI_TUNE_REMEMBER", "1", "0", "TUTTI_TUNE_REMEMBER", "0",
                            NULL}};
  for (size_t e = 0; e < sizeof envs / sizeof *envs; e++) {
    seen_t *b = run(envs[e], allreduce_loop);
    for (int r = 0; r < N; r++) {
      ASSERT(b[r].ok);
      ASSERT_STR_EQ(b[r].ran[0], b[r].cand[0]);
      ASSERT_STR_EQ(b[r].ran[1], b[r].cand[b[r].ncand - 1]);
    }
  }
  snprintf(path, sizeof path, "%s/tutti/picks", dir);
  FILE *f = fopen(path, "w");
  ASSERT(f != NULL);
  fputs("not a picks file\nn=3 allreduce 65536 ring\n", f);
  fclose(f);
  seen_t *c = run(remember_on, fake_trials);
  for (int r = 0; r < N; r++) {
    ASSERT(c[r].ok);
    ASSERT_STR_EQ(c[r].ran[1], c[r].cand[c[r].ncand - 1]);
    ASSERT_STR_EQ(c[r].pick, c[r].cand[1]);
  }
  picks_text(dir, text, sizeof text);
  ASSERT(!strncmp(text, "tutti-picks 1\nkey ", 18));
  ASSERT(strstr(text, "not a picks") == NULL);
  cache_drop(dir);
}

/* Fake trials of the 64 KiB all-reduce on a registered buffer (tutti_mem_alloc), candidate 2
 * the fastest (0 where there are two). */
static void fake_trials_registered(tutti_comm_t comm, int r, seen_t *out) {
  int64_t *x = NULL;
  (void)r;
  out->ok = tutti_mem_alloc(comm, COUNT * sizeof *x, (void **)&x) == TUTTI_SUCCESS;
  for (int c = 0; c < CALLS && out->ok; c++) {
    tutti_coll_args_t a = allreduce_args(x);
    snprintf(out->ran[c], 24, "%s", tutti__algo_select(comm, &a)->name);
    tutti_online_t *o = &comm->online;
    if (!o->running) break;
    int cand = o->running_cand, win = o->running->ncand > 2 ? 2 : 0;
    tutti__online_timed(comm, (int64_t)((cand == win ? 50 : 100 + cand) * 1e3), 0);
    if (tutti__online_agree(comm) != TUTTI_SUCCESS) out->ok = 0;
  }
  if (x && tutti_mem_free(comm, x) != TUTTI_SUCCESS) out->ok = 0;
}

/* Single-copy algorithms run several times faster on registered buffers: a size whose calls
 * are on them neither starts on a pick remembered from plain ones (its first call runs it,
 * then the trials) nor leaves its own. */
TEST(registered_buffers_neither_take_nor_leave_remembered_picks) {
  char dir[64], text[4096], want[64];
  cache_dir(dir, sizeof dir);
  ASSERT(dir[0]);
  seen_t *a = run(remember_on, fake_trials);
  ASSERT_STR_EQ(a[0].pick, a[0].cand[1]);
  seen_t *b = run(remember_on, fake_trials_registered);
  int win = b[0].ncand > 2 ? 2 : 0;
  for (int r = 0; r < N; r++) {
    ASSERT(b[r].ok);
    ASSERT_STR_EQ(b[r].ran[0], a[0].cand[1]);
    ASSERT_STR_EQ(b[r].ran[1], b[r].cand[b[r].ncand - 1]);
    ASSERT_STR_EQ(b[r].pick, b[r].cand[win]);
  }
  picks_text(dir, text, sizeof text);
  snprintf(want, sizeof want, " allreduce %d %s ", COUNT * 8, a[0].cand[1]);
  ASSERT(strstr(text, want) != NULL);
  snprintf(want, sizeof want, " allreduce %d %s ", COUNT * 8, b[0].cand[win]);
  ASSERT(strstr(text, want) == NULL);
  cache_drop(dir);
}

int main(int argc, char **argv) {
  /* The other tests' jobs try afresh: none starts from an earlier test's picks. */
  setenv("TUTTI_TUNE_REMEMBER", "0", 1);
  return harness_main(argc, argv);
}
