/*
 * tutti-bench internals: the element access of dtype.c and the collective table of coll.c,
 * shared with the sweep in tutti-bench.c. Only the public header is used.
 */
#ifndef TUTTI_BENCH_H
#define TUTTI_BENCH_H

#include <tutti.h>

#include <stddef.h>

/* ---- dtype.c ---- */

/* Bytes per element, or 0 for an unknown dtype. */
size_t bench_esize(tutti_dtype_t dt);
/* Parses "float32", "int8", ... (and the aliases float, half, bf16, double); 0 on success. */
int bench_dtype_parse(const char *s, tutti_dtype_t *dt);
const char *bench_dtype_name(tutti_dtype_t dt);
int bench_dtype_is_float(tutti_dtype_t dt);
/* Element i of buf as a double (exact for every integer the bench stores). */
double bench_get(const void *buf, size_t i, tutti_dtype_t dt);
/* Stores v, a small integer, as element i of buf (integers wrap as the C casts do). */
void bench_set(void *buf, size_t i, tutti_dtype_t dt, double v);

/* ---- coll.c ---- */

struct bench_run {
  tutti_comm_t comm;
  int rank, nranks, root, inplace;
  tutti_dtype_t dt;
  tutti_op_t op;
  char *send, *recv; /* each at least the largest size of the sweep, pre-faulted */
};

enum bench_kind { B_ALLREDUCE, B_ALLGATHER, B_REDUCE_SCATTER, B_BROADCAST, B_REDUCE };

struct bench_coll {
  const char *name;
  enum bench_kind kind;
  int rooted;    /* prints the root; else the root column shows -1 */
  int reduces;   /* prints the op; else "none" */
  int per_rank;  /* the call's count is size/esize/nranks (all-gather, reduce-scatter) */
  int bus_steps; /* busbw = algbw * bus_steps * (n-1)/n; algbw itself when 0 */
};

extern const struct bench_coll bench_colls[];
extern const int bench_ncolls;

/* The bus bandwidth factor of collective c on n ranks (nccl-tests' definitions). */
double bench_busbw_factor(const struct bench_coll *c, int n);
/* Runs collective c once with count elements per call (the per-rank count for all-gather and
 * reduce-scatter), in place when b->inplace. */
tutti_result_t bench_call(const struct bench_run *b, const struct bench_coll *c, size_t count);
/* Fills the buffers with small integers, runs c once and compares this rank's result with an
 * independently computed expectation. Returns the number of wrong elements through *wrong. */
tutti_result_t bench_check(const struct bench_run *b, const struct bench_coll *c, size_t count,
                           double *wrong);

#endif
