/*
 * tutti-bench — an nccl-tests-style sweep of tutti's collectives, run as
 *
 *   tutti-run -n N tutti-bench [-c allreduce,allgather,reduce_scatter,broadcast,reduce|all]
 *       [-b 8] [-e 64M] [-f 2] [-d float32] [-o sum] [-r ROOT] [-w WARMUP] [-i ITERS|auto]
 *       [--check] [--inplace] [--csv]
 *
 * For each collective and each size from -b to -e (multiplied by -f), rank 0 prints the time per
 * call (the slowest rank's), algbw = size/time and busbw = algbw times nccl-tests' factor. Size
 * is the total buffer as nccl-tests counts it: the receive buffer of all-gather, the send buffer
 * of reduce-scatter, so their per-rank count is size/esize/nranks. Exit status 1 if a check
 * finds a wrong element or a call fails, 2 for bad usage. Uses only the public API.
 */
#include "bench.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* -i auto: a timed batch aims at TARGET_S; the probe grows until one takes PROBE_S, so that the
 * estimate is not clock noise. MAX_ITERS bounds the batch of the cheapest calls. */
#define TARGET_S 0.03
#define PROBE_S 0.002
#define MAX_ITERS 100000

static struct {
  unsigned colls; /* bit i: bench_colls[i] */
  size_t minb, maxb, factor;
  long warmup, iters; /* iters 0: auto */
  int check, csv;
} opt = {0, 8, 64u << 20, 2, 5, 0, 0, 0};

static const char *const op_names[] = {"sum", "prod", "min", "max", "avg"};

static void usage(FILE *f) {
  fprintf(f, "usage: tutti-run -n N tutti-bench [-c COLL[,COLL...]|all] [-b MINBYTES] "
             "[-e MAXBYTES] [-f FACTOR]\n"
             "         [-d DTYPE] [-o sum|prod|min|max|avg] [-r ROOT] [-w WARMUP] "
             "[-i ITERS|auto] [--check] [--inplace] [--csv]\n"
             "  COLL: allreduce allgather reduce_scatter broadcast reduce; sizes take k, M, G\n");
}

/* Prints the complaint (only once under tutti-run, from rank 0) and exits 2. */
static void bad_usage(const char *what, const char *arg) {
  const char *rank = getenv("TUTTI_RANK");
  if (!rank || atoi(rank) == 0) {
    fprintf(stderr, "tutti-bench: %s: '%s'\n", what, arg ? arg : "(missing)");
    usage(stderr);
  }
  exit(2);
}

/* "64M" -> 67108864; k, M and G are powers of 1024, as in nccl-tests. */
static size_t parse_size(const char *s) {
  char *end;
  unsigned long long v = s ? strtoull(s, &end, 10) : 0;
  if (!s || end == s || *s == '-')
    bad_usage("bad size", s);
  int shift = *end == 'k' || *end == 'K' ? 10 : *end == 'm' || *end == 'M' ? 20
            : *end == 'g' || *end == 'G' ? 30 : 0;
  end += shift != 0;
  end += *end == 'B' || *end == 'b';
  if (*end || v > (SIZE_MAX >> shift))
    bad_usage("bad size", s);
  return (size_t)v << shift;
}

static long parse_count(const char *s, long min) {
  char *end;
  long v = s ? strtol(s, &end, 10) : 0;
  if (!s || end == s || *end || v < min)
    bad_usage("bad number", s);
  return v;
}

static void parse_colls(const char *arg) {
  char list[256]; /* a copy: strtok must not cut argv, which the header echoes */
  snprintf(list, sizeof(list), "%s", arg ? arg : "");
  opt.colls = 0;
  for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
    int i = 0;
    while (i < bench_ncolls && strcmp(tok, bench_colls[i].name) != 0)
      i++;
    if (strcmp(tok, "all") == 0)
      opt.colls = (1u << bench_ncolls) - 1;
    else if (i < bench_ncolls)
      opt.colls |= 1u << i;
    else
      bad_usage("unknown collective", tok);
  }
}

static void parse_args(int argc, char **argv, struct bench_run *b) {
  opt.colls = 1u << B_ALLREDUCE;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = 1; /* most options take the next argument */
    if (!strcmp(a, "--check")) opt.check = 1, takes = 0;
    else if (!strcmp(a, "--inplace")) b->inplace = 1, takes = 0;
    else if (!strcmp(a, "--csv")) opt.csv = 1, takes = 0;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) usage(stdout), exit(0);
    else if (!strcmp(a, "-c")) parse_colls(v);
    else if (!strcmp(a, "-b")) opt.minb = parse_size(v);
    else if (!strcmp(a, "-e")) opt.maxb = parse_size(v);
    else if (!strcmp(a, "-f")) opt.factor = (size_t)parse_count(v, 2);
    else if (!strcmp(a, "-r")) b->root = (int)parse_count(v, 0);
    else if (!strcmp(a, "-w")) opt.warmup = parse_count(v, 0);
    else if (!strcmp(a, "-i")) opt.iters = v && !strcmp(v, "auto") ? 0 : parse_count(v, 1);
    else if (!strcmp(a, "-d")) {
      if (!v || bench_dtype_parse(v, &b->dt)) bad_usage("unknown dtype", v);
    } else if (!strcmp(a, "-o")) {
      int k = 0;
      while (k < 5 && (!v || strcmp(v, op_names[k]))) k++;
      if (k == 5) bad_usage("unknown op", v);
      b->op = (tutti_op_t)k;
    } else bad_usage("unknown option", a);
    i += takes;
  }
  if (!opt.colls || opt.minb > opt.maxb)
    bad_usage(opt.colls ? "-b is larger than -e" : "no collective", "");
}

/* Reports a failed call with the library's own account of it and ends this rank; tutti-run
 * then stops the others. */
static void die(const struct bench_run *b, tutti_result_t r, const char *what, size_t size) {
  const char *why = tutti_comm_last_error(b->comm);
  fprintf(stderr, "tutti-bench: rank %d: %s (size %zu) failed: %s%s%s\n", b->rank, what, size,
          tutti_result_string(r), why && *why ? ": " : "", why ? why : "");
  exit(1);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Seconds for k calls on the slowest rank. The result is identical on every rank (all-reduce
 * results are bit-identical), so decisions taken from it keep the ranks in step. */
static double timed_batch(const struct bench_run *b, const struct bench_coll *c, size_t count,
                          size_t size, long k) {
  tutti_result_t r = tutti_barrier(b->comm);
  if (r != TUTTI_SUCCESS)
    die(b, r, "tutti_barrier", size);
  double t0 = now_s();
  for (long i = 0; i < k; i++)
    if ((r = bench_call(b, c, count)) != TUTTI_SUCCESS)
      die(b, r, c->name, size);
  double t = now_s() - t0;
  if ((r = tutti_allreduce(&t, &t, 1, TUTTI_FLOAT64, TUTTI_MAX, b->comm)) != TUTTI_SUCCESS)
    die(b, r, "tutti_allreduce of the times", size);
  return t;
}

/* The iteration count for -i auto: probe with 1, 10, 100, ... calls until a batch is long
 * enough to measure, then scale to TARGET_S. */
static long calibrate(const struct bench_run *b, const struct bench_coll *c, size_t count,
                      size_t size) {
  long k = 1;
  double t = timed_batch(b, c, count, size, k);
  while (t < PROBE_S && k < MAX_ITERS) {
    k = k * 10 < MAX_ITERS ? k * 10 : MAX_ITERS;
    t = timed_batch(b, c, count, size, k);
  }
  double want = TARGET_S / (t / (double)k) + 0.5;
  return want < 1 ? 1 : want > MAX_ITERS ? MAX_ITERS : (long)want;
}

/* One row of the table: check, warm up, calibrate, time. Returns the wrong elements, all ranks. */
static double bench_size(const struct bench_run *b, const struct bench_coll *c, size_t count,
                         size_t size, double *busbw_sum) {
  tutti_result_t r;
  double wrong = 0;
  if (opt.check) {
    if ((r = bench_check(b, c, count, &wrong)) != TUTTI_SUCCESS)
      die(b, r, c->name, size);
    if ((r = tutti_allreduce(&wrong, &wrong, 1, TUTTI_FLOAT64, TUTTI_SUM, b->comm)))
      die(b, r, "tutti_allreduce of the check", size);
  }
  for (long i = 0; i < opt.warmup; i++)
    if ((r = bench_call(b, c, count)) != TUTTI_SUCCESS)
      die(b, r, c->name, size);
  long iters = opt.iters ? opt.iters : calibrate(b, c, count, size);
  double us = timed_batch(b, c, count, size, iters) / (double)iters * 1e6;
  double algbw = (double)size / us * 1e-3; /* bytes/us / 1e3 = GB/s with 1 GB = 1e9 B */
  double busbw = algbw * bench_busbw_factor(c, b->nranks);
  *busbw_sum += busbw;
  if (b->rank != 0)
    return wrong;
  const char *op = c->reduces ? op_names[b->op] : "none", *type = bench_dtype_name(b->dt);
  int root = c->rooted ? b->root : -1;
  size_t elems = size / bench_esize(b->dt); /* the whole buffer's elements, as nccl-tests */
  if (opt.csv)
    printf("%s,%d,%zu,%zu,%s,%s,%d,%d,%ld,%.3f,%.4f,%.4f,%.0f\n", c->name, b->nranks, size,
           elems, type, op, root, b->inplace, iters, us, algbw, busbw, opt.check ? wrong : -1);
  else
    printf("%12zu %12zu %9s %6s %6d %12.2f %9.3f %9.3f %7.0f\n", size, elems, type, op, root,
           us, algbw, busbw, opt.check ? wrong : -1);
  fflush(stdout);
  return wrong;
}

/* Sweeps the sizes for collective c; returns the wrong elements found, over all ranks. */
static double sweep(const struct bench_run *b, const struct bench_coll *c) {
  size_t es = bench_esize(b->dt), n = (size_t)b->nranks, prev = 0, rows = 0;
  double wrong = 0, busbw_sum = 0;
  if (b->rank == 0 && !opt.csv)
    printf("#\n# %s, %s\n#%11s %12s %9s %6s %6s %12s %9s %9s %7s\n#%11s %12s %44s %9s %9s\n",
           c->name, b->inplace ? "in place" : "out of place", "size", "count", "type", "redop",
           "root", "time", "algbw", "busbw", "#wrong", "(B)", "(elements)", "(us)", "(GB/s)",
           "(GB/s)");
  for (size_t s = opt.minb;; s *= opt.factor) {
    /* Round to whole elements per call, at least one, as nccl-tests rounds its counts. */
    size_t count = s / es / (c->per_rank ? n : 1);
    count = count ? count : 1;
    size_t size = count * es * (c->per_rank ? n : 1);
    if (size != prev) { /* small sizes can round to the same buffer: one row is enough */
      wrong += bench_size(b, c, count, size, &busbw_sum);
      prev = size, rows++;
    }
    if (s == 0 || s > opt.maxb / opt.factor)
      break;
  }
  if (b->rank == 0 && !opt.csv)
    printf("# %s: average busbw %.3f GB/s over %zu sizes\n", c->name,
           busbw_sum / (double)rows, rows);
  return wrong;
}

int main(int argc, char **argv) {
  struct bench_run b = {.dt = TUTTI_FLOAT32, .op = TUTTI_SUM};
  parse_args(argc, argv, &b);
  tutti_result_t r = tutti_comm_init_env(&b.comm);
  if (r != TUTTI_SUCCESS) {
    fprintf(stderr, "tutti-bench: tutti_comm_init_env failed: %s\n", tutti_result_string(r));
    return 1;
  }
  tutti_comm_rank(b.comm, &b.rank);
  tutti_comm_size(b.comm, &b.nranks);
  if (b.root >= b.nranks) {
    char root[16];
    snprintf(root, sizeof(root), "%d", b.root);
    bad_usage("-r: root not below nranks", root);
  }

  /* One pair of buffers for the largest size of the sweep, touched now so that page faults
   * never land in a timed call. All-gather's per-rank rounding may need nranks elements. */
  size_t es = bench_esize(b.dt), bytes = opt.maxb > es * b.nranks ? opt.maxb : es * b.nranks;
  bytes = (bytes + 4095) & ~(size_t)4095;
  b.send = aligned_alloc(4096, bytes);
  b.recv = aligned_alloc(4096, bytes);
  if (!b.send || !b.recv) {
    fprintf(stderr, "tutti-bench: rank %d: out of memory for 2 x %zu bytes\n", b.rank, bytes);
    return 1;
  }
  memset(b.send, 0, bytes);
  memset(b.recv, 0, bytes);

  const char *transport = getenv("TUTTI_TRANSPORT");
  transport = transport && *transport ? transport : "auto";
  if (b.rank == 0 && !opt.csv) {
    printf("# tutti-bench (tutti %s): nranks %d, transport %s, dtype %s, warmup %ld, iters ",
           TUTTI_VERSION_STRING, b.nranks, transport, bench_dtype_name(b.dt), opt.warmup);
    printf(opt.iters ? "%ld\n# command:" : "auto\n# command:", opt.iters);
    for (int i = 0; i < argc; i++)
      printf(" %s", argv[i]);
    printf("\n");
  } else if (b.rank == 0) {
    printf("collective,nranks,size,count,type,op,root,inplace,iters,time_us,algbw_gbs,"
           "busbw_gbs,wrong\n");
  }

  double wrong = 0;
  for (int i = 0; i < bench_ncolls; i++)
    if (opt.colls & (1u << i))
      wrong += sweep(&b, &bench_colls[i]);
  if (b.rank == 0 && opt.check)
    fprintf(opt.csv ? stderr : stdout, "# check: %s (%.0f wrong elements)\n",
            wrong ? "FAILED" : "all results correct", wrong);
  tutti_comm_destroy(b.comm);
  free(b.send);
  free(b.recv);
  return wrong ? 1 : 0;
}
