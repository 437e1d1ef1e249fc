/*
 * tutti-sim: the real algorithms at thousands of ranks, as threads over the in-memory
 * transport (src/transport/mem.c). See tutti-sim.c.
 */
#ifndef TUTTI_SIM_H
#define TUTTI_SIM_H

#include <stddef.h>

#include "algo/algo.h"

/* The collectives the simulator runs, with what it needs to know of each. */
typedef struct sim_coll {
  tutti_coll_t coll;
  const char *name;
} sim_coll_t;

const sim_coll_t *sim_colls(int *count);

/* Runs one call of coll with count elements per rank (float32, SUM for reductions) on
 * comm, then checks this rank's result against a reference computed here from the inputs'
 * formula. Returns the call's result; *wrong is set to the first wrong element (or -1). */
tutti_result_t sim_run(tutti_comm_t comm, int rank, int n, tutti_coll_t coll, size_t count,
                       long *wrong);

#endif
