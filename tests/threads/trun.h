/*
 * Thread ranks for tests: makes n communicators with tutti__comm_init_threads_cfg and runs a
 * function on each from its own thread (small stacks, so many ranks fit).
 */
#ifndef TUTTI_TRUN_H
#define TUTTI_TRUN_H

#include <stddef.h>

#include "algo/algo.h"
#include "core/internal.h"

typedef void (*trun_fn)(tutti_comm_t comm, int rank, int nranks, void *arg);

/* Runs fn(comm_r, r, n, arg) on n threads and joins them, then destroys the communicators.
 * cfg NULL: the environment's settings. Fails the test if the communicators cannot be made. */
void trun(int n, const tutti_config_t *cfg, trun_fn fn, void *arg);

/* A configuration for thread tests: defaults, small pipeline chunks and queues (so that
 * pipelining and backpressure happen at small counts) and a timeout that catches hangs. */
void trun_config(tutti_config_t *cfg);

/* Makes comm run algorithm a where a can run coll at count elements of esize bytes, and
 * returns 1; returns 0 (nothing changed) where it cannot (a single-copy algorithm without
 * single-copy reads, a one-shot one without mailboxes, or one that lacks coll). */
int trun_force(tutti_comm_t comm, const tutti_algo_t *a, tutti_coll_t coll, size_t count,
               size_t esize);

#endif
