/*
 * Online selection (online.c): where the cost model picks, the first calls of a (collective,
 * size) try the model's best few candidates in turn (in the model's order reversed: its pick
 * last in each round),
 * the ranks agree on the fastest by the
 * slowest rank's time (if it beats the model's pick by TUTTI_ONLINE_MARGIN), and every later
 * call of that size runs it. The model only has to put
 * the fastest algorithm among its first few; a machine it misjudges costs a dozen calls.
 *
 * A settled size is re-checked now and then: its pick and one other candidate (in turns)
 * alternate for 2 x `reps` timed calls, and the ranks agree on the faster of the two by the
 * slowest rank's fastest call; the first re-check comes TUTTI_ONLINE_RECHECK settled calls
 * after the agreement, each later one twice as many calls after the last (at most
 * TUTTI_ONLINE_RECHECK_MAX). On a noisy machine the first few trials can rank two close
 * candidates wrongly, and a job runs a size thousands of times. A challenger that wins a
 * re-check takes over only if it wins again TUTTI_ONLINE_CONFIRM calls later: one lucky call
 * a side decides a re-check, and where ranks outnumber cores single calls vary several-fold
 * (a 64 KiB broadcast at n = 4 on 2 CPUs switched from one-shot, 8 us, to cma, 100-250 us,
 * after one re-check, until the next one hundreds of calls later). Both sides of a re-check are
 * timed in the same spell: a job's first calls are slower than its later ones (cold caches,
 * ranks still waking), so a challenger timed now against the pick's first trials would win
 * for no reason.
 *
 * Every decision depends only on the sequence of calls, which every rank shares, and on the
 * agreed times, so all ranks run the same algorithm in every call.
 */
#ifndef TUTTI_TUNE_ONLINE_H
#define TUTTI_TUNE_ONLINE_H

#include <stddef.h>
#include <stdint.h>

#include "tutti.h"

struct tutti_algo;
struct tutti_comm;
struct tutti_tune_query;

#define TUTTI_ONLINE_SLOTS 32   /* sizes remembered per communicator (then round-robin) */
#define TUTTI_ONLINE_MAX_CAND 4 /* candidates tried per size */
/* Smaller calls keep the model's pick: their times are a few wake-ups, too noisy to rank on
 * a shared machine in a dozen calls, and the agreement's own all-reduce is one of them. */
#define TUTTI_ONLINE_MIN_BYTES 4096
#define TUTTI_ONLINE_RECHECK 100        /* settled calls before the first re-check */
#define TUTTI_ONLINE_RECHECK_MAX 25600u /* the longest gap between re-checks, in calls */

/* The first re-check gap of a size settled on a remembered pick: the gap its earlier job
 * ended with (0 for a size that job did not settle), kept within the re-checks' range. */
static inline unsigned tutti__online_known_gap(unsigned gap) {
  return gap < TUTTI_ONLINE_RECHECK       ? TUTTI_ONLINE_RECHECK
         : gap > TUTTI_ONLINE_RECHECK_MAX ? TUTTI_ONLINE_RECHECK_MAX
                                          : gap;
}
#define TUTTI_ONLINE_CONFIRM 25         /* settled calls before a winner's second re-check */
/* A challenger takes a size from the model's pick (or, in a re-check, from the pick) only if
 * its time is more than this fraction below the incumbent's: a single trial's spread is
 * larger than most real differences between the leading candidates, and keeping the
 * incumbent costs at most this much where the challenger was really faster. Measured: n = 2,
 * 16 MiB reduce-scatter, 4 fresh jobs: the ring's and the deterministic algorithm's one
 * trials 1774/1833, 1808/1836, 1960/1935, 1922/1995 us, where forced the ring runs 1370-1417
 * us a call and the deterministic one 1814-1876; the third job kept the slower one. */
#define TUTTI_ONLINE_MARGIN_PCT 10 /* config.c's help text prints it */
#define TUTTI_ONLINE_MARGIN (TUTTI_ONLINE_MARGIN_PCT / 100.0)
#define TUTTI_ONLINE_CROWDED_REPS 4     /* more trials where ranks outnumber CPUs (online.c) */
#define TUTTI_ONLINE_CROWDED_MAX ((size_t)16 << 20) /* for sizes below this */
/* Short calls are timed more often: at least this much of the model's predicted time per
 * candidate (and per side of a re-check), at most TUTTI_ONLINE_MAX_REPS calls (online.c). */
#define TUTTI_ONLINE_TRIAL_US 50.0
#define TUTTI_ONLINE_MAX_REPS 16
/* After every candidate's first turn the ranks agree on the times so far, and a candidate
 * whose time is more than this factor above the fastest's runs no more trials (if one is
 * left, the size settles then). Where ranks outnumber CPUs the trials are many and the
 * losers several times slower: n = 8 on 2 CPUs, 1 MiB all-gather, 8 calls each of recursive
 * doubling, the ring and cma at 1100-1700 us a call against one-shot's 250-320, about 30
 * ms of trials where a benchmark times a dozen calls. The factor is the one that keeps a
 * candidate out of the trials by the model's prediction (online.c's CAND_FACTOR): a turn is
 * the faster of two calls, and an unlucky one can be twice as slow as the steady state where
 * ranks take turns on CPUs; dropping a candidate that would have won costs every later call
 * until a re-check finds it, so the factor leaves those alone. */
#define TUTTI_ONLINE_PRUNE 3.0

typedef struct tutti_online_slot {
  int coll;
  size_t bytes;
  int ncand;
  int trial_reps; /* each candidate runs trial_reps timed calls (in turns), after one warm-up */
  int reps;       /* and each side of a re-check reps */
  int done;        /* calls of this size so far (the warm-up, then the trials) */
  int start, sched; /* the running schedule of turns: its first call (a value of done), calls */
  int pruned;       /* 0 while the schedule is the candidates' first turns (online.c) */
  unsigned dropped; /* bit i: cand[i] runs no more trials (re-checks still challenge it) */
  const struct tutti_algo *cand[TUTTI_ONLINE_MAX_CAND]; /* the model's order */
  /* This rank's fastest trial of each (the least time less first use), its time, and the
   * part of it that mapped memory in for the first time (comm->first_use_ns). */
  double best_s[TUTTI_ONLINE_MAX_CAND], best_f[TUTTI_ONLINE_MAX_CAND];
  /* The agreed times (slowest rank's best, first use left out) after every candidate's
   * first turn, once first_done: what a job that ends before the size settles leaves to
   * later jobs (remember.c). */
  double first_t[TUTTI_ONLINE_MAX_CAND];
  int first_done;
  /* The remembered pick's index (remember.c), -1 if none: its first call runs it, and the
   * exchange after that call settles the size there unless a rank's buffers were registered. */
  int known_i;
  uint32_t known_gap; /* and its gap between re-checks (tutti_online_known_t) */
  int reg;      /* this rank ran a call of this size on a registered buffer (tutti_mem_alloc) */
  int reg_seen; /* agreed: some rank did, in the calls the last exchange covered */
  const struct tutti_algo *pick;        /* once agreed; NULL while trying */
  int pick_i;           /* pick's index in cand */
  int recheck_i;        /* the last re-check's challenger (the model's order, skipping pick_i) */
  int checking;         /* timed calls left in the running re-check, 0 if none */
  int confirm;          /* 1: the challenger won the last re-check; the next one repeats it */
  double fresh_s[2], fresh_f[2]; /* the same for the pick and the challenger of a re-check */
  uint32_t gap, until;  /* settled calls between re-checks, and left before the next */
} tutti_online_slot_t;

/* A size settled by an earlier job of this shape on this host (remember.c). */
typedef struct tutti_online_known {
  int coll;
  size_t bytes;
  const struct tutti_algo *algo;
  uint32_t gap; /* that job's calls between re-checks when it ended (0: not settled there) */
} tutti_online_known_t;

typedef struct tutti_online {
  tutti_online_slot_t slot[TUTTI_ONLINE_SLOTS];
  tutti_online_known_t known[TUTTI_ONLINE_SLOTS]; /* rank 0's remembered picks, agreed */
  int nknown;
  int used, evict;
  tutti_online_slot_t *running; /* the slot the running call is a trial of, or NULL */
  int running_cand;             /* its candidate, -1 for the warm-up */
  tutti_online_slot_t *due;     /* every trial of it ran: agree after this call */
} tutti_online_t;

/* Whether online selection revises a pick made for why (a tutti_pick_why_t) of a call of
 * coll and bytes, with TUTTI_TUNE_ONLINE set to online: the model's own picks only (a rule
 * or TUTTI_ALGO is the user's), of at least TUTTI_ONLINE_MIN_BYTES, not the v-variants. */
int tutti__online_applies(int online, int why, int coll, size_t bytes);

/* The candidates tried for q (at most TUTTI_ONLINE_MAX_CAND, into out), the model's cheapest
 * first, model_pick leading; and the timed calls each gets at a size of bytes. */
int tutti__online_candidates(const struct tutti_tune_query *q, const struct tutti_algo *model_pick,
                             const struct tutti_algo **out);
int tutti__online_reps(size_t bytes);
/* The timed calls of each side of a re-check of q, whose model pick is predicted to take
 * pred_s: tutti__online_reps, or more where that is under TUTTI_ONLINE_TRIAL_US of calls. */
int tutti__online_check_reps(const struct tutti_tune_query *q, double pred_s);
/* The trials' timed calls per candidate for q: tutti__online_check_reps, times
 * TUTTI_ONLINE_CROWDED_REPS below 16 MiB where a host has more ranks than CPUs (online.c),
 * never more than TUTTI_ONLINE_MAX_REPS. */
int tutti__online_trial_reps(const struct tutti_tune_query *q, double pred_s);
/* Calls in a row of one candidate, in trials and re-checks of reps calls a candidate. */
int tutti__online_turn(int reps);

/* The algorithm for a call of q that the model picked as model_pick: the agreed one where
 * q's size is settled (*settled set), else the candidate whose trial or re-check this call is
 * (marked as comm's running trial; select again for the next call). Counts the call towards
 * the size's next re-check. registered: a buffer of this rank's call is registered (a
 * single-copy algorithm runs several times faster on it: remembered picks are for plain ones). */
const struct tutti_algo *tutti__online_pick(struct tutti_comm *comm,
                                            const struct tutti_tune_query *q,
                                            const struct tutti_algo *model_pick,
                                            int registered, int *settled);

/* The winner of agreed times t (one per candidate of s): the first candidate still in the
 * trials (the incumbent) unless another one's time is more than TUTTI_ONLINE_MARGIN below
 * its own (then the fastest such). */
int tutti__online_winner(const tutti_online_slot_t *s, const double *t);

/* 1 if sendbuf or recvbuf (either may be NULL) lies in a region of comm's registered
 * buffers (tutti_mem_alloc); one load where there are none. */
int tutti__online_registered(struct tutti_comm *comm, const void *sendbuf, const void *recvbuf);

/* For a call of a settled size: 1 if it is part of a re-check (then tutti__online_pick runs
 * it), else 0 after counting it towards the next. Called once per call that does not start
 * or continue a re-check (algo.c's pick cache, or tutti__online_pick). */
int tutti__online_tick(tutti_online_slot_t *s);

/* ---- remember.c: settled sizes kept for later jobs (TUTTI_TUNE_REMEMBER) ----------------- */

/* What rank 0 sends every rank with the model: the remembered picks of this job's shape. */
typedef struct tutti_remember_wire {
  uint32_t n;
  struct {
    uint64_t bytes;
    uint32_t coll;
    uint32_t gap;
    char algo[28];
  } e[TUTTI_ONLINE_SLOTS];
} tutti_remember_wire_t;

/* A job's shape as the picks file keys it: what query q holds besides the collective and the
 * size, the chunk size as 0 where it is chosen from the caches (chunk_auto). */
void tutti__remember_shape(const struct tutti_tune_query *q, int chunk_auto, char *buf,
                           size_t len);
/* The picks of shape in this host's file (its path in path): 0, or -1 where the file is
 * missing or another host's (w then holds none). A size's newest line wins. */
int tutti__remember_read(const char *shape, tutti_remember_wire_t *w, char *path, size_t plen);
/* Rank 0: the remembered picks of comm's shape from this host's file (none where
 * TUTTI_TUNE_REMEMBER or TUTTI_TUNE_ONLINE is 0, or the file is missing or stale). */
void tutti__remember_load(const struct tutti_comm *comm, tutti_remember_wire_t *w);
/* Every rank: takes rank 0's list as comm's known sizes (names this build lacks skipped). */
void tutti__remember_take(struct tutti_comm *comm, const tutti_remember_wire_t *w);
/* Rank 0 at tutti_comm_destroy: merges comm's settled sizes into the file (best effort). */
void tutti__remember_save(const struct tutti_comm *comm);

/* The slot of coll at bytes, if it is settled (for the pick cache), else NULL. */
tutti_online_slot_t *tutti__online_settled(struct tutti_comm *comm, int coll, size_t bytes);

/* The running trial took ns on this rank (its call succeeded), first_ns of which mapping
 * memory in for its first use. */
void tutti__online_timed(struct tutti_comm *comm, int64_t ns, int64_t first_ns);

/* At the end of a call (its number still current): where it was the last trial of its size,
 * the ranks agree on the fastest candidate (each candidate's time: the maximum of the trial
 * times over the ranks less the maximum of their first-use times, exchanged in the call's
 * name) and settle the size; where it ended every candidate's first turn, they agree on the
 * times so far and drop the candidates TUTTI_ONLINE_PRUNE behind. */
tutti_result_t tutti__online_agree(struct tutti_comm *comm);

#endif
