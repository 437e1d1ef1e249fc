/*
 * inject: what kill_check and stop_check share. Rank 0 forks a driver process before the
 * library starts (so no library thread is duplicated); after init, the ranks agree on a plan
 * (seed, victim, the CLOCK_MONOTONIC instant of the fault) and rank 0 hands it, with every
 * rank's pid, to the driver, which signals the victim at that instant. Every rank runs a
 * verified float32 all-reduce loop until it fails; the survivors check how it failed.
 *
 * CLOCK_MONOTONIC is one clock for every process of the host, so the planned instant is a
 * lower bound of the real fault time for every rank: latencies measured from it can only be
 * overstated, so a pass is never a false pass.
 */
#ifndef TUTTI_TEST_INJECT_H
#define TUTTI_TEST_INJECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tutti.h"

#define INJECT_MAX_RANKS 64

typedef struct inject_plan {
  uint64_t seed;
  int64_t victim;
  int64_t fault_ns;   /* CLOCK_MONOTONIC instant of the first signal */
  int64_t hold_ns;    /* stop_check: SIGCONT this long after SIGSTOP; 0: none */
  int64_t sig;        /* SIGKILL or SIGSTOP */
  int64_t nranks;
  int64_t pids[INJECT_MAX_RANKS];
} inject_plan_t;

/* The program's name and this rank, for every line printed; exits 1 after a FAIL line. */
extern const char *inject_prog;
extern int inject_rank;
__attribute__((format(printf, 1, 2), noreturn)) void inject_fail(const char *fmt, ...);

int64_t inject_now_ns(void);

/* Before tutti init, on the rank whose TUTTI_RANK is 0: forks the driver, which waits for the
 * plan on a pipe. Returns the pipe's write end, or -1 on other ranks. */
int inject_start_driver(void);

/* After init: exchanges pids, and rank 0 draws the plan (seed from the env var seed_env if set,
 * else random; the fault falls min_delay_s..max_delay_s from now), broadcasts it and sends it
 * to the driver. Every rank prints the plan. Uses 2 collectives (pid all-gather, broadcast). */
void inject_make_plan(tutti_comm_t comm, int driver_fd, const char *seed_env, int sig,
                      double min_delay_s, double max_delay_s, double hold_s,
                      inject_plan_t *plan);

/* The verified all-reduce loop's data: count float32 elements per rank. */
typedef struct inject_data {
  size_t count;
  float *send, *recv;
  float table[17]; /* the expected sum for each residue; see inject_fill */
} inject_data_t;

void inject_data_init(inject_data_t *d, size_t count, int nranks);
/* Fills send for iteration iter: small integers, so every summation order is exact. */
void inject_fill(inject_data_t *d, int rank, int iter);
/* Compares recv bit for bit with the independently computed sum; fails the program if not. */
void inject_verify(const inject_data_t *d, int iter);

/* Joins the job from the environment (tutti_comm_init_env), sets inject_rank and *nranks;
 * fails the program if it cannot. */
tutti_comm_t inject_init(int *nranks);

/* 1 if text contains needle. */
int inject_has(const char *text, const char *needle);
/* Fails unless err names rank victim with its pid and this host, the all-reduce, and #seq. */
void inject_check_names(const char *err, int victim, long long pid, unsigned seq);
/* After a failure: a further all-reduce must be refused with TUTTI_ERR_INVALID_USAGE and
 * destroying comm must take under destroy_within_s. Returns the destroy time in seconds. */
double inject_check_after_failure(tutti_comm_t comm, double destroy_within_s);

#endif
