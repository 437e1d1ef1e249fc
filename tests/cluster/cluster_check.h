/* What cluster_check.c and cluster_colls.c share. */
#ifndef TUTTI_CLUSTER_CHECK_H
#define TUTTI_CLUSTER_CHECK_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "tutti.h"

#define CC_MAX_RANKS 256

/* This rank and the job's size (of the communicator of the moment). */
extern int cc_rank, cc_nranks;

/* Prints "cluster_check rank R: FAIL: ..." and exits 1. */
__attribute__((format(printf, 1, 2), noreturn)) void cc_fail(const char *fmt, ...);
/* Fails unless rc is TUTTI_SUCCESS, with comm's error sentence. */
void cc_ok(tutti_result_t rc, tutti_comm_t comm, const char *what);
/* CLOCK_MONOTONIC in seconds: one clock for every namespace host of the machine. */
double cc_now(void);

/* Every collective at counts small and medium on comm, each result checked on every rank;
 * returns the number of cases (fails the program on the first wrong element). */
long cc_run_colls(tutti_comm_t comm, size_t small, size_t medium);

#endif
