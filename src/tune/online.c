/*
 * Online selection (online.h). A size's first call runs the model's pick untimed (it faults in
 * the buffers every candidate then shares), then the candidates take turns, `trial_reps`
 * timed calls each; the call that ends the last trial ends with an exchange of every rank's
 * fastest time per candidate (the maximum over the ranks), and the smallest maximum wins if
 * it is more than TUTTI_ONLINE_MARGIN below the model's pick's (else the model's pick stays).
 * Where a candidate has more than one turn, the same exchange after every candidate's first
 * turn drops those TUTTI_ONLINE_PRUNE behind the fastest.
 * Fewer timed calls at large sizes: a 16 MiB call is long enough that one time ranks the
 * candidates, and a benchmark or a training loop warms up with only a handful of calls.
 * Re-checks (online.h) run the pick and one other candidate in alternation, timed alike.
 */
#include <stdio.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/tuner.h"
#include "core/colls.h"
#include "core/internal.h"
#include "core/memreg.h"
#include "tune/online.h"

/* Candidates predicted slower than this factor times the best are not tried: a model that
 * misjudges by more is wrong about more than the order (measured misses: 1.1x to 2.6x). */
#define CAND_FACTOR 3.0

int tutti__online_applies(int online, int why, int coll, size_t bytes) {
  const tutti_coll_info_t *info = tutti__coll_info(coll);
  return online && why == TUTTI_PICK_MODEL && bytes >= TUTTI_ONLINE_MIN_BYTES && info &&
         !info->variable;
}

int tutti__online_reps(size_t bytes) {
  return bytes < ((size_t)1 << 20) ? 3 : bytes < ((size_t)16 << 20) ? 2 : 1;
}

/* A call of a few us is ranked by its fastest of three no better than the run-to-run spread
 * of such calls: n = 2, 64 KiB all-gather, 4 fresh jobs, 3 trials each settled on one-shot,
 * one-shot after a re-check, recursive doubling then one-shot, recursive doubling then the
 * ring (trials 3.2-4.8 us a call; one-shot runs 2.9-3.2 in steady state). Such trials cost
 * nothing a job can see, so they run for TUTTI_ONLINE_TRIAL_US of predicted time each. */
int tutti__online_check_reps(const tutti_tune_query_t *q, double pred_s) {
  int reps = tutti__online_reps(q->bytes);
  if (pred_s > 0) {
    double want = TUTTI_ONLINE_TRIAL_US * 1e-6 / pred_s;
    int k = want >= TUTTI_ONLINE_MAX_REPS ? TUTTI_ONLINE_MAX_REPS : (int)want + (want > (int)want);
    if (k > reps) reps = k;
  }
  return reps;
}

/* Where ranks outnumber CPUs, a call below 1 MiB lasts a few wake-ups, and its time depends
 * more on which ranks the scheduler ran when than on the algorithm: at n = 4 on 2 CPUs, 64
 * KiB all-reduce trials took 230-1600 us where the same algorithms run 37-150 us back to
 * back, and three trials each settled on cma (150 us a call) in 3 jobs of 3 where one-shot
 * runs 37 us; six each in 3 of 3 too; twelve each took one-shot in 3 of 3. Such trials cost
 * a few ms once per size, a wrong pick the job's every call. Most of those slow trials were
 * page traps (a PVM guest: core/prefault.c); with them gone, 3 fresh jobs each settled all
 * four 64 KiB collectives on one-shot at both 1x and 4x the trials but one (1x: all-reduce
 * on recursive doubling until a re-check; 4x: broadcast on the ring), the 4x trials costing
 * no visible time in the benchmark. Up to 16 MiB since (a 1 MiB call there lasts a few
 * scheduler turns too): n = 4, 1 MiB broadcast, fresh jobs after the smaller sizes, 2 trials
 * each settled on the tree in 6 of 8 (215-293 us a call; forced, the tree runs 303-318 in
 * steady state and the ring 213-217), 8 each on the ring in 4 of 4 (201-249 us). Both inputs
 * are agreed (the model, the topology), so every rank runs the same schedule. */
int tutti__online_trial_reps(const tutti_tune_query_t *q, double pred_s) {
  int reps = tutti__online_check_reps(q, pred_s);
  int crowded = q->model && q->model->cpus && (size_t)q->max_local > q->model->cpus;
  if (crowded && q->bytes < TUTTI_ONLINE_CROWDED_MAX) {
    int base = TUTTI_ONLINE_CROWDED_REPS * tutti__online_reps(q->bytes);
    if (base > reps) reps = base;
  }
  return reps < TUTTI_ONLINE_MAX_REPS ? reps : TUTTI_ONLINE_MAX_REPS;
}

int tutti__online_candidates(const tutti_tune_query_t *q, const tutti_algo_t *model_pick,
                             const tutti_algo_t **out) {
  int n, k = 1;
  const tutti_algo_t *t = tutti__algo_table(&n);
  double best = tutti__tune_predict(model_pick, q), pred[TUTTI_ONLINE_MAX_CAND + 1];
  out[0] = model_pick;
  pred[0] = best;
  if (best < 0) return 1;
  for (int i = 0; i < n; i++) {
    double p = tutti__tune_predict(&t[i], q);
    if (&t[i] == model_pick || p < 0 || p > CAND_FACTOR * best) continue;
    /* Insertion into the sorted list (ties keep the table's order), one past its end. */
    const tutti_algo_t *sorted[TUTTI_ONLINE_MAX_CAND + 1];
    memcpy(sorted, out, (size_t)k * sizeof *out);
    int at = k;
    while (at > 1 && pred[at - 1] > p) {
      sorted[at] = sorted[at - 1];
      pred[at] = pred[at - 1];
      at--;
    }
    sorted[at] = &t[i];
    pred[at] = p;
    if (k < TUTTI_ONLINE_MAX_CAND) k++;
    memcpy(out, sorted, (size_t)k * sizeof *out);
  }
  return k;
}

/* The slot of coll at bytes, or NULL if that size has none (yet, or any more). */
static tutti_online_slot_t *slot_find(tutti_online_t *o, int coll, size_t bytes) {
  for (int i = 0; i < o->used; i++)
    if (o->slot[i].coll == coll && o->slot[i].bytes == bytes) return &o->slot[i];
  return NULL;
}

static tutti_online_slot_t *slot_for(tutti_online_t *o, const tutti_tune_query_t *q,
                                     const tutti_algo_t *model_pick) {
  tutti_online_slot_t *s = slot_find(o, (int)q->coll, q->bytes);
  if (s) return s;
  if (o->used < TUTTI_ONLINE_SLOTS) {
    s = &o->slot[o->used++];
  } else { /* the same slot on every rank: the calls decide it */
    s = &o->slot[o->evict];
    o->evict = (o->evict + 1) % TUTTI_ONLINE_SLOTS;
  }
  memset(s, 0, sizeof *s);
  s->coll = (int)q->coll;
  s->bytes = q->bytes;
  double pred = tutti__tune_predict(model_pick, q);
  s->reps = tutti__online_check_reps(q, pred);
  s->trial_reps = tutti__online_trial_reps(q, pred);
  s->ncand = tutti__online_candidates(q, model_pick, s->cand);
  if (s->ncand < 2) s->pick = model_pick;
  s->known_i = -1;
  for (int k = 0; k < o->nknown && !s->pick && s->known_i < 0; k++) {
    if (o->known[k].coll != s->coll || o->known[k].bytes != s->bytes) continue;
    /* Remembered from an earlier job of this shape (remember.c), if the model still counts
     * it among the candidates: its first call here decides (tutti__online_agree). */
    for (int i = 0; i < s->ncand && s->known_i < 0; i++)
      if (s->cand[i] == o->known[k].algo) {
        s->known_i = i;
        s->known_gap = o->known[k].gap;
      }
  }
  /* The trials in two schedules where the first turns leave trials to drop (online.h:
   * TUTTI_ONLINE_PRUNE), else in one; the warm-up call comes first. */
  int turn = tutti__online_turn(s->trial_reps);
  s->start = 1;
  s->pruned = s->trial_reps <= turn;
  s->sched = s->ncand * (s->pruned ? s->trial_reps : turn);
  return s;
}

/* Trial calls come in turns of two calls of one candidate where it has more than one: a call
 * just after another algorithm's carries that one's tail. A broadcast root returns from a
 * chain while its readers still copy, so a one-shot call after it waited for them: n = 4 on 2
 * CPUs, 1 MiB, slowest rank a call, one-shot after the chain 336-524 us, after itself 188-271,
 * the chain 165-408 either way; in turns of one call each, the chain won the trials in fresh
 * jobs where one-shot runs 1.3-1.5x faster. */
int tutti__online_turn(int reps) { return reps >= 2 ? 2 : 1; }

/* In a re-check: 0 if the current call is the pick's, 1 if the challenger's. */
static int recheck_side(const tutti_online_slot_t *s) {
  return (2 * s->reps - s->checking) / tutti__online_turn(s->reps) % 2;
}

int tutti__online_tick(tutti_online_slot_t *s) {
  if (s->checking) return 1; /* a re-check runs 2 x reps calls */
  if (s->ncand < 2 || --s->until) return 0;
  if (!s->confirm) {
    s->recheck_i = (s->recheck_i + 1) % s->ncand;
    if (s->recheck_i == s->pick_i) s->recheck_i = (s->recheck_i + 1) % s->ncand;
  }
  s->checking = 2 * s->reps;
  s->fresh_s[0] = s->fresh_s[1] = s->fresh_f[0] = s->fresh_f[1] = 0;
  return 1;
}

tutti_online_slot_t *tutti__online_settled(struct tutti_comm *comm, int coll, size_t bytes) {
  tutti_online_slot_t *s = slot_find(&comm->online, coll, bytes);
  return s && s->pick ? s : NULL;
}

/* The candidates still in the trials, in the model's order (into act); their number. */
static int active(const tutti_online_slot_t *s, int *act) {
  int k = 0;
  for (int i = 0; i < s->ncand; i++)
    if (!(s->dropped >> i & 1)) act[k++] = i;
  return k;
}

const tutti_algo_t *tutti__online_pick(struct tutti_comm *comm, const tutti_tune_query_t *q,
                                       const tutti_algo_t *model_pick, int registered,
                                       int *settled) {
  tutti_online_t *o = &comm->online;
  tutti_online_slot_t *s = slot_for(o, q, model_pick);
  /* A settled size whose re-check is not due (a tick the pick cache made already found the
   * re-check running, and this one does not count the call again). */
  *settled = s->pick && !tutti__online_tick(s);
  if (*settled) return s->pick;
  o->running = s;
  s->reg |= registered;
  if (s->checking) { /* the pick first, then the challenger, in turns */
    o->running_cand = recheck_side(s) ? s->recheck_i : s->pick_i;
    return s->cand[o->running_cand];
  }
  /* Round robin: a slow spell (the first calls after a pause wake CPUs and ranks slowly)
   * then costs every candidate a trial rather than one candidate all of its trials. Each
   * round runs the candidates in the model's order reversed, its pick last: the calls just
   * after the warm-up are the slowest of a size, and a call after one that mapped much
   * memory in runs slow too, so those places go to the candidates least likely to win.
   * Measured (n = 4 on 2 CPUs, 16 MiB reduce-scatter forced): the second call 8.6-13.3 ms,
   * the third 6.1-9.2, later ones 5.0-6.5 (deterministic) or 6.2-7.7 (ring); in the model's
   * order the pick (deterministic) ran first and lost its one trial to the slower ring in 2
   * of 3 jobs. n = 2, 16 MiB all-reduce: the ring's first call after cma's first took
   * 3.7-3.9 ms, after Rabenseifner's (37 ms of scratch growth) 2.4-2.5, else 2.2-2.4. */
  int turn = (s->done - s->start) / tutti__online_turn(s->trial_reps), act[TUTTI_ONLINE_MAX_CAND];
  int nact = active(s, act);
  o->running_cand = s->done == 0 ? -1 : act[nact - 1 - turn % nact];
  return o->running_cand >= 0 ? s->cand[o->running_cand]
         : s->known_i >= 0    ? s->cand[s->known_i]
                              : s->cand[0];
}

void tutti__online_timed(struct tutti_comm *comm, int64_t ns, int64_t first_ns) {
  tutti_online_t *o = &comm->online;
  tutti_online_slot_t *s = o->running;
  o->running = NULL;
  if (!s) return;
  int c = o->running_cand;
  double t = (double)ns * 1e-9, f = (double)first_ns * 1e-9, *best = NULL, *best_f = NULL;
  if (s->checking) {
    int side = recheck_side(s);
    best = &s->fresh_s[side];
    best_f = &s->fresh_f[side];
  } else if (c >= 0) {
    best = &s->best_s[c];
    best_f = &s->best_f[c];
  }
  TRACE("tune", comm->rank, "online trial of %s (%zu bytes): %.1f us, %.1f us of it first use",
        s->cand[c < 0 ? 0 : c]->name, s->bytes, t * 1e6, f * 1e6);
  if (best && (*best == 0 || t - f < *best - *best_f)) {
    *best = t;
    *best_f = f;
  }
  if (s->checking) {
    if (--s->checking == 0) o->due = s;
    return;
  }
  if (++s->done - s->start == s->sched || (s->known_i >= 0 && s->done == 1)) o->due = s;
}

/* The element-wise maximum of every rank's v (k doubles) on every rank: a binomial tree up
 * to rank 0 and down again, in messages tagged as the call just finished (its fingerprint
 * too), so they need no call number of their own and cannot be taken for another call's:
 * each peer's queue is in order, and every rank sends these before its next call's. */
static tutti_result_t agree_max(struct tutti_comm *comm, double *v, int k) {
  int n = comm->nranks, r = comm->rank;
  uint32_t tag = comm->seq;
  size_t len = (size_t)k * sizeof *v;
  int64_t deadline = tutti__deadline_after(comm->cfg.timeout_s);
  double got[2 * TUTTI_ONLINE_MAX_CAND + 1];
  tutti_result_t res = TUTTI_SUCCESS;
  tutti_xfer_t x;
  for (int mask = 1; mask < n && res == TUTTI_SUCCESS; mask <<= 1) {
    if (r & mask) { /* up to the parent, then this rank waits for the answer */
      res = tutti__isend_tag(comm, &x, r - mask, v, len, tag);
      if (res == TUTTI_SUCCESS) res = tutti__wait(comm, &x, deadline);
      break;
    }
    if (r + mask < n) {
      res = tutti__irecv_tag(comm, &x, r + mask, got, len, tag);
      if (res == TUTTI_SUCCESS) res = tutti__wait(comm, &x, deadline);
      for (int i = 0; i < k && res == TUTTI_SUCCESS; i++)
        if (got[i] > v[i]) v[i] = got[i];
    }
  }
  for (int mask = 1; mask < n && res == TUTTI_SUCCESS; mask <<= 1) {
    if (r < mask && r + mask < n) {
      res = tutti__isend_tag(comm, &x, r + mask, v, len, tag);
      if (res == TUTTI_SUCCESS) res = tutti__wait(comm, &x, deadline);
    } else if (r >= mask && r < 2 * mask) {
      res = tutti__irecv_tag(comm, &x, r - mask, v, len, tag);
      if (res == TUTTI_SUCCESS) res = tutti__wait(comm, &x, deadline);
    }
  }
  return res;
}

int tutti__online_registered(struct tutti_comm *comm, const void *sendbuf, const void *recvbuf) {
  tutti_regbuf_t b;
  if (!atomic_load_explicit(&comm->memreg, memory_order_acquire)) return 0;
  const void *p[2] = {sendbuf, recvbuf};
  for (int i = 0; i < 2; i++) {
    if (!p[i]) continue;
    tutti__memreg_describe(comm, p[i], 1, &b);
    if (b.reg_len) return 1;
  }
  return 0;
}

int tutti__online_winner(const tutti_online_slot_t *s, const double *t) {
  int act[TUTTI_ONLINE_MAX_CAND] = {0}, nact = active(s, act), best = act[0];
  for (int j = 1; j < nact; j++)
    if (t[act[j]] < (1.0 - TUTTI_ONLINE_MARGIN) * t[act[0]] && t[act[j]] < t[best])
      best = act[j];
  return best;
}

tutti_result_t tutti__online_agree(struct tutti_comm *comm) {
  tutti_online_t *o = &comm->online;
  tutti_online_slot_t *s = o->due;
  if (!s) return TUTTI_SUCCESS;
  o->due = NULL;
  /* The trials' times of every candidate, or a re-check's of the pick and the challenger,
   * then the first-use parts of them. The slowest rank's time less the largest first use
   * is the call's time without it: a rank that waited for a peer mapping memory in waited
   * about that long (at n = 2, 64 MiB on registered buffers: 120 ms of page traps in cma's
   * first call against 8 ms a call after, which its one trial would otherwise carry). */
  int recheck = s->pick != NULL, known = !recheck && s->known_i >= 0;
  int k = known ? 0 : recheck ? 2 : s->ncand;
  double t[2 * TUTTI_ONLINE_MAX_CAND + 1];
  memcpy(t, recheck ? s->fresh_s : s->best_s, (size_t)k * sizeof *t);
  memcpy(t + k, recheck ? s->fresh_f : s->best_f, (size_t)k * sizeof *t);
  t[2 * k] = s->reg; /* and whether any rank's calls so far had a registered buffer */
  /* Outside the call as far as the transports know: a peer's mailbox post of the call (a
   * one-shot trial) is not a disagreement about how to run this exchange (mbox.c). A peer
   * dying meanwhile still fails this call, and the error names it (core/error.c). */
  uint32_t call_seq = comm->call_seq;
  comm->agree_seq = call_seq;
  comm->call_seq = 0;
  tutti_result_t res = agree_max(comm, t, 2 * k + 1);
  comm->call_seq = call_seq;
  comm->agree_seq = 0;
  if (res != TUTTI_SUCCESS) return res;
  s->reg_seen = t[2 * k] > 0;
  const char *name = tutti__coll_name((tutti_coll_t)s->coll);
  if (known) { /* the remembered pick's first call ran: settle there, or try afresh */
    int i = s->known_i;
    s->known_i = -1;
    if (s->reg_seen) {
      INFO("tune", comm->rank, "online selection: %s of %zu bytes is tried afresh, not run "
           "on the pick remembered for plain buffers (%s): a rank's buffers are registered",
           name, s->bytes, s->cand[i]->name);
      return TUTTI_SUCCESS;
    }
    s->pick = s->cand[i];
    s->pick_i = i;
    /* The re-checks go on where the earlier job's doubling left off: each job's first
     * re-check would otherwise run a challenger for the first time in that job, mapping its
     * scratch and queues in among the job's steady calls (session 27's bench-peers: n = 8, 64
     * KiB reduce-scatter, 1.5-1.8 minor faults a call and 110-205 us against 72). */
    s->gap = tutti__online_known_gap(s->known_gap);
    s->until = s->gap;
    s->recheck_i = -1;
    comm->pick_cache[s->coll].algo = NULL;
    INFO("tune", comm->rank, "online selection: %s of %zu bytes runs %s (remembered from an "
         "earlier job of this shape; the model's pick: %s)", name, s->bytes, s->pick->name,
         s->cand[0]->name);
    return TUTTI_SUCCESS;
  }
  for (int i = 0; i < k; i++) t[i] -= t[k + i];
  /* The incumbent (the model's pick in the trials, the pick in a re-check) is beaten only by
   * a time more than TUTTI_ONLINE_MARGIN below its own. */
  const double beat = 1.0 - TUTTI_ONLINE_MARGIN;
  int best = 0, act[TUTTI_ONLINE_MAX_CAND] = {0}, nact = 0;
  if (!recheck && !s->pruned) { /* every candidate's first turn: drop the far slower */
    double fastest = 0;
    for (int i = 0; i < k; i++)
      if (t[i] > 0 && (fastest == 0 || t[i] < fastest)) fastest = t[i];
    for (int i = 0; i < k && fastest > 0; i++)
      if (t[i] > TUTTI_ONLINE_PRUNE * fastest) s->dropped |= 1u << i;
    s->pruned = 1;
    memcpy(s->first_t, t, (size_t)k * sizeof *t);
    s->first_done = 1;
    nact = active(s, act);
    if (nact > 1) {
      s->start = s->done;
      s->sched = nact * (s->trial_reps - tutti__online_turn(s->trial_reps));
      for (int i = 0; i < k; i++)
        if (s->dropped >> i & 1)
          INFO("tune", comm->rank, "online selection: %s of %zu bytes tries %s no more "
                "(slowest rank's best call %.1f us, the fastest candidate's %.1f us)",
                tutti__coll_name((tutti_coll_t)s->coll), s->bytes, s->cand[i]->name,
                t[i] * 1e6, fastest * 1e6);
      return TUTTI_SUCCESS;
    }
  }
  if (recheck) {
    int won = t[1] < beat * t[0];
    if (won && !s->confirm) { /* once is not enough: the same pair again, soon */
      s->confirm = 1;
      s->until = TUTTI_ONLINE_CONFIRM;
      return TUTTI_SUCCESS;
    }
    s->confirm = 0;
    best = won ? s->recheck_i : s->pick_i;
  } else {
    best = tutti__online_winner(s, t);
  }
  /* The next re-check twice as far off as the last (the first: TUTTI_ONLINE_RECHECK). */
  s->gap = !recheck ? TUTTI_ONLINE_RECHECK
           : s->gap < TUTTI_ONLINE_RECHECK_MAX / 2 ? 2 * s->gap : TUTTI_ONLINE_RECHECK_MAX;
  s->until = s->gap;
  if (!recheck) s->recheck_i = -1; /* challengers in the model's order, from its pick */
  int changed = recheck && s->pick != s->cand[best];
  s->pick = s->cand[best];
  s->pick_i = best;
  /* The pick cache may hold this size's previous pick. */
  comm->pick_cache[s->coll].algo = NULL;
  if (recheck) {
    if (changed)
      INFO("tune", comm->rank, "online selection: %s of %zu bytes runs %s after a re-check "
           "(slowest rank's best call: %.1f us, against %.1f us of the previous pick)", name,
           s->bytes, s->pick->name, t[1] * 1e6, t[0] * 1e6);
    return TUTTI_SUCCESS;
  }
  char line[256];
  int len = 0;
  for (int i = 0; i < s->ncand && len >= 0 && (size_t)len < sizeof line; i++)
    len += snprintf(line + len, sizeof line - (size_t)len, "%s%s %.1f us%s", i ? ", " : "",
                    s->cand[i]->name, t[i] * 1e6, s->dropped >> i & 1 ? " (one turn)" : "");
  INFO("tune", comm->rank, "online selection: %s of %zu bytes runs %s (the model's pick: %s; "
       "slowest rank's best trial: %s)", name, s->bytes, s->pick->name, s->cand[0]->name, line);
  return TUTTI_SUCCESS;
}
