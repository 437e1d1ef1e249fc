/*
 * tutti-bench internals: the element access of dtype.c, the collective table of coll.c, the
 * machine bounds of roofline.c and the row printers of report.c, shared with the sweep in
 * tutti-bench.c. Only the public header is used.
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

enum bench_kind { B_ALLREDUCE, B_ALLGATHER, B_REDUCE_SCATTER, B_BROADCAST, B_REDUCE, B_ALLTOALL,
                  B_SENDRECV, B_GATHER, B_SCATTER };

struct bench_coll {
  const char *name;
  enum bench_kind kind;
  int rooted;    /* prints the root; else the root column shows -1 */
  int reduces;   /* prints the op; else "none" */
  int per_rank;  /* the call's count is size/esize/nranks (all-gather, reduce-scatter) */
  int bus_steps; /* busbw = algbw * bus_steps * (n-1)/n; algbw itself when 0 */
  int oop_only;  /* no in-place form is measured (its columns print N/A) */
};

extern const struct bench_coll bench_colls[];
extern const int bench_ncolls;

/* The bus bandwidth factor of collective c on n ranks (nccl-tests' definitions). */
double bench_busbw_factor(const struct bench_coll *c, int n);
/* Runs collective c once with count elements per call (the per-rank count for all-gather and
 * reduce-scatter), in place when b->inplace. */
tutti_result_t bench_call(const struct bench_run *b, const struct bench_coll *c, size_t count);
/* The same call through the non-blocking entry point: starts it and returns its request. */
tutti_result_t bench_icall(const struct bench_run *b, const struct bench_coll *c, size_t count,
                           tutti_request_t *req);
/* Fills the buffers with small integers, runs c once and compares this rank's result with an
 * independently computed expectation. Returns the number of wrong elements through *wrong. */
tutti_result_t bench_check(const struct bench_run *b, const struct bench_coll *c, size_t count,
                           double *wrong);

/* ---- roofline.c ---- */

/* What this machine's memory allows at one size, measured on every rank at once (so ranks that
 * share a core share its bandwidth) and taken from the slowest rank, in GB/s (1e9 B/s):
 * copy_gbs counts bytes copied, reduce_gbs output bytes of a float32 c = a + b pass. */
struct bench_roof {
  size_t size;
  double copy_gbs, reduce_gbs;
};

/* Measures the bounds for size bytes per rank with the three scratch buffers (each >= size
 * bytes); collective over b->comm, so every rank must call it with the same size. */
tutti_result_t bench_roof_measure(const struct bench_run *b, size_t size, char *x, char *y,
                                  char *z, struct bench_roof *out);
/* The busbw collective c could reach at best under roof (see the --roofline help text). */
double bench_roof_bound(const struct bench_coll *c, const struct bench_roof *roof, int nranks,
                        int inplace);

/* ---- allocs.c ---- */

/* malloc-family calls of this process so far, or -1 where they are not counted. */
double bench_allocs_now(void);

/* ---- report.c ---- */

/* One timed variant (out of place or in place) of one size; skipped: not measured (N/A). */
struct bench_result {
  int skipped;
  double us, algbw, busbw;
  double wrong;  /* wrong elements over all ranks; < 0 when not checked */
  double minflt; /* minor page faults per call, the most of any rank */
  double allocs; /* malloc-family calls per call, the most of any rank; < 0: not counted */
  long iters;
};

/* One row: a size of one collective, with up to two variants (NULL when not run). */
struct bench_row {
  const struct bench_coll *coll;
  int nranks, root;
  size_t size, count;
  const char *type, *op, *transport;
  const struct bench_result *oop, *ip;
  const struct bench_roof *roof; /* NULL without --roofline */
};

enum bench_format { FMT_TEXT, FMT_CSV, FMT_JSON };

struct bench_columns {
  enum bench_format format;
  int oop, ip;      /* which variants are printed */
  int faults, roof; /* the optional columns */
};

void bench_print_header(const struct bench_columns *cols, const struct bench_coll *c);
void bench_print_row(const struct bench_columns *cols, const struct bench_row *row);

/* ---- args.c ---- */

struct bench_opts {
  unsigned colls; /* bit i: bench_colls[i] */
  size_t minb, maxb, factor, step; /* sizes: *factor when factor > 1, else +step */
  size_t sizes[64];                /* --sizes: this list instead, increasing */
  int nsizes;
  long warmup, iters;              /* iters 0: calibrated ("auto") */
  int check, blocking;
  int reg;                         /* -R 1: buffers from tutti_mem_alloc */
  int root;
  long cycles;                     /* -N: sweeps of every collective; 0: until stopped */
  double timeout_s;                /* -T: per-call deadline; 0: TUTTI_TIMEOUT's */
  const char *json_file_ignored;   /* -J FILE: nccl-tests' JSON file, not written here */
  tutti_dtype_t dt;
  tutti_op_t op;
  struct bench_columns cols;
};

/* Fills o from the command line; prints the help and exits 0 for -h, complains (rank 0 only)
 * and exits 2 for bad usage. */
void bench_parse_args(int argc, char **argv, struct bench_opts *o);
/* Exits 2 with the complaint, printed once (by rank 0) under any launcher. */
void bench_bad_usage(const char *what, const char *arg) __attribute__((noreturn));
extern const char *const bench_op_names[5];

#endif
