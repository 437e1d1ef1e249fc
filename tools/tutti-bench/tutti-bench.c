/*
 * tutti-bench — an nccl-tests-compatible sweep of tutti's collectives, run as
 *
 *   tutti-run -n N tutti-bench [allreduce,allgather,reduce_scatter,broadcast,reduce|all]
 *       [-b 8] [-e 64M] [-f 2] [-n ITERS|auto] [-w WARMUP] [-d float32] [-o sum] [-r ROOT]
 *       [-c 0|1] [-z 0|1] [--inplace|--outofplace] [--roofline] [--faults] [--json|--csv]
 *
 * (tutti-bench --help, in args.c, says what each flag and column means.) For each collective
 * and size, every variant (out of place, in place) is checked once, warmed up, and timed:
 * a barrier, then ITERS back-to-back calls; the time per call is the slowest rank's. The peer
 * harnesses in bench/peers/ time the same way, so their numbers compare. Uses only the public
 * API.
 */
#include "bench.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* -n auto: a timed batch aims at TARGET_S; the probe grows until one takes PROBE_S, so that the
 * estimate is not clock noise. MAX_ITERS bounds the batch of the cheapest calls. */
#define TARGET_S 0.03
#define PROBE_S 0.002
#define MAX_ITERS 100000
/* -z 0: calls in flight at once. Enough to overlap one call's tail with the next one's start;
 * more only queues behind the progress thread, which runs them in order anyway. */
#define WINDOW 8

static struct bench_opts opt;

/* Reports a failed call with the library's own account of it and ends this rank; the launcher
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

static double minflt_now(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru); /* every thread of the process: the progress thread too */
  return (double)ru.ru_minflt;
}

/* k calls, blocking or through the non-blocking entry points with WINDOW in flight. */
static void run_calls(const struct bench_run *b, const struct bench_coll *c, size_t count,
                      size_t size, long k) {
  tutti_result_t r;
  if (opt.blocking || c->kind == B_SENDRECV) {
    for (long i = 0; i < k; i++)
      if ((r = bench_call(b, c, count)) != TUTTI_SUCCESS)
        die(b, r, c->name, size);
    return;
  }
  tutti_request_t win[WINDOW];
  long issued = 0, done = 0;
  while (done < k) {
    if (issued < k && issued - done < WINDOW) {
      if ((r = bench_icall(b, c, count, &win[issued % WINDOW])) != TUTTI_SUCCESS)
        die(b, r, c->name, size);
      issued++;
    } else { /* the window is full, or all are issued: the oldest must end */
      r = tutti_wait(win[done % WINDOW]);
      tutti_request_free(win[done % WINDOW]);
      if (r != TUTTI_SUCCESS)
        die(b, r, c->name, size);
      done++;
    }
  }
}

/* Seconds for k calls on the slowest rank, and (through minflt[0] and [1]) the most minor
 * faults and allocations any rank made per call. The results are identical on every rank (all-reduce results are
 * bit-identical), so decisions taken from them keep the ranks in step. */
static double timed_batch(const struct bench_run *b, const struct bench_coll *c, size_t count,
                          size_t size, long k, double minflt[2]) {
  tutti_result_t r = tutti_barrier(b->comm);
  if (r != TUTTI_SUCCESS)
    die(b, r, "tutti_barrier", size);
  double a0 = bench_allocs_now(), f0 = minflt_now(), t0 = now_s();
  run_calls(b, c, count, size, k);
  double t1 = now_s(), f1 = minflt_now(), a1 = bench_allocs_now();
  double m[3] = {t1 - t0, (f1 - f0) / (double)k, a0 < 0 ? -1 : (a1 - a0) / (double)k};
  if ((r = tutti_allreduce(m, m, 3, TUTTI_FLOAT64, TUTTI_MAX, b->comm)) != TUTTI_SUCCESS)
    die(b, r, "tutti_allreduce of the times", size);
  if (minflt)
    minflt[0] = m[1], minflt[1] = m[2];
  return m[0];
}

/* A probe of k calls: the faster of two batches, so that one slow call (a rank the scheduler
 * left out, an algorithm's first use in a tuner's trials) does not end the probe early:
 * n = 4 on 2 CPUs, 64 KiB all-reduce, the single call after the warm-up took 4-5 ms where
 * the calls run 40-150 us, so 8 calls were timed, all inside the online trials. */
static double probe(const struct bench_run *b, const struct bench_coll *c, size_t count,
                    size_t size, long k) {
  double t = timed_batch(b, c, count, size, k, NULL), u = timed_batch(b, c, count, size, k, NULL);
  return u < t ? u : t;
}

/* The iteration count for -n auto: probe with 1, 10, 100, ... calls until a batch is long
 * enough to measure, then scale to TARGET_S. */
static long calibrate(const struct bench_run *b, const struct bench_coll *c, size_t count,
                      size_t size) {
  long k = 1;
  double t = probe(b, c, count, size, k);
  while (t < PROBE_S && k < MAX_ITERS) {
    k = k * 10 < MAX_ITERS ? k * 10 : MAX_ITERS;
    t = probe(b, c, count, size, k);
  }
  double want = TARGET_S / (t / (double)k) + 0.5;
  return want < 1 ? 1 : want > MAX_ITERS ? MAX_ITERS : (long)want;
}

/* One variant of one size: check, warm up, calibrate, time. */
static void bench_variant(const struct bench_run *b, const struct bench_coll *c, size_t count,
                          size_t size, struct bench_result *out) {
  tutti_result_t r;
  out->wrong = -1;
  if (opt.check) {
    if ((r = bench_check(b, c, count, &out->wrong)) != TUTTI_SUCCESS)
      die(b, r, c->name, size);
    if ((r = tutti_allreduce(&out->wrong, &out->wrong, 1, TUTTI_FLOAT64, TUTTI_SUM, b->comm)))
      die(b, r, "tutti_allreduce of the check", size);
  }
  run_calls(b, c, count, size, opt.warmup);
  out->iters = opt.iters ? opt.iters : calibrate(b, c, count, size);
  double per_op[2];
  out->us = timed_batch(b, c, count, size, out->iters, per_op) / (double)out->iters * 1e6;
  out->minflt = per_op[0];
  out->allocs = per_op[1];
  out->algbw = (double)size / out->us * 1e-3; /* bytes/us / 1e3 = GB/s with 1 GB = 1e9 B */
  out->busbw = out->algbw * bench_busbw_factor(c, b->nranks);
}

/* The sizes of the sweep in order: returns the next after s, or 0 after the last. */
static size_t next_size(size_t s) {
  if (opt.nsizes) {
    for (int i = 0; i + 1 < opt.nsizes; i++)
      if (opt.sizes[i] == s)
        return opt.sizes[i + 1];
    return 0;
  }
  if (opt.factor > 1)
    return s == 0 || s > opt.maxb / opt.factor ? 0 : s * opt.factor;
  return s > opt.maxb - opt.step ? 0 : s + opt.step;
}

struct roofs {
  struct bench_roof *v;
  size_t n;
};

static const struct bench_roof *roof_of(const struct roofs *rf, size_t s) {
  for (size_t i = 0; i < rf->n; i++)
    if (rf->v[i].size == s)
      return &rf->v[i];
  return NULL;
}

/* Sweeps the sizes for collective c; returns the wrong elements found, over all ranks. */
/* Every busbw printed, for nccl-tests' closing "# Avg bus bandwidth" line. */
static double busbw_sum;
static long busbw_count;

static double sweep(struct bench_run *b, const struct bench_coll *c, const struct roofs *rf,
                    const char *transport) {
  size_t es = bench_esize(b->dt), n = (size_t)b->nranks, prev = 0;
  double wrong = 0;
  if (b->rank == 0)
    bench_print_header(&opt.cols, c);
  for (size_t s = opt.minb; s; s = next_size(s)) {
    /* Round to whole elements per call, at least one, as nccl-tests rounds its counts. */
    size_t count = s / es / (c->per_rank ? n : 1);
    count = count ? count : 1;
    size_t size = count * es * (c->per_rank ? n : 1);
    if (size == prev) /* small sizes can round to the same buffer: one row is enough */
      continue;
    prev = size;
    struct bench_result res[2] = {{0}, {0}};
    for (int v = 0; v < 2; v++) {
      if (!(v ? opt.cols.ip : opt.cols.oop))
        continue;
      if (v && c->oop_only) {
        res[v].skipped = 1;
        continue;
      }
      b->inplace = v;
      bench_variant(b, c, count, size, &res[v]);
      wrong += res[v].wrong > 0 ? res[v].wrong : 0;
      busbw_sum += res[v].busbw;
      busbw_count++;
    }
    if (b->rank != 0)
      continue;
    struct bench_row row = {
        .coll = c, .nranks = b->nranks, .root = c->rooted ? b->root : -1, .size = size,
        .count = size / es, /* the whole buffer's elements, as nccl-tests */
        .type = bench_dtype_name(b->dt), .op = c->reduces ? bench_op_names[b->op] : "none",
        .transport = transport, .oop = opt.cols.oop ? &res[0] : NULL,
        .ip = opt.cols.ip ? &res[1] : NULL, .roof = opt.cols.roof ? roof_of(rf, s) : NULL};
    bench_print_row(&opt.cols, &row);
  }
  return wrong;
}

/* --roofline: the bounds of every size of the sweep, measured once before any collective
 * (scratch is a third buffer the size of the others, freed afterwards). */
static void measure_roofs(const struct bench_run *b, size_t bytes, struct roofs *rf) {
  size_t cap = 0;
  for (size_t s = opt.minb; s; s = next_size(s))
    cap++;
  char *scratch = aligned_alloc(4096, bytes);
  rf->v = calloc(cap, sizeof(*rf->v));
  if (!scratch || !rf->v) {
    fprintf(stderr, "tutti-bench: rank %d: out of memory for the roofline\n", b->rank);
    exit(1);
  }
  for (size_t s = opt.minb; s; s = next_size(s)) {
    tutti_result_t r = bench_roof_measure(b, s, b->send, b->recv, scratch, &rf->v[rf->n]);
    if (r != TUTTI_SUCCESS)
      die(b, r, "roofline", s);
    rf->v[rf->n++].size = s;
    if (b->rank == 0 && opt.cols.format == FMT_TEXT)
      printf("# roofline %12zu B: copy %8.3f GB/s, reduce %8.3f GB/s\n", s,
             rf->v[rf->n - 1].copy_gbs, rf->v[rf->n - 1].reduce_gbs);
  }
  free(scratch);
}

/* The transport named by TUTTI_TRANSPORT, if it is a plain word (it goes into JSON as is). */
static const char *transport_name(void) {
  const char *t = getenv("TUTTI_TRANSPORT");
  if (!t || !*t || strlen(t) > 16)
    return "auto";
  for (const char *p = t; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
      return "auto";
  return t;
}

int main(int argc, char **argv) {
  bench_parse_args(argc, argv, &opt);
  struct bench_run b = {.dt = opt.dt, .op = opt.op, .root = opt.root};
  tutti_result_t r = tutti_comm_init_env(&b.comm);
  if (r != TUTTI_SUCCESS) {
    fprintf(stderr, "tutti-bench: tutti_comm_init_env failed: %s\n", tutti_result_string(r));
    return 1;
  }
  tutti_comm_rank(b.comm, &b.rank);
  tutti_comm_size(b.comm, &b.nranks);
  if (opt.timeout_s > 0 && (r = tutti_comm_set_timeout(b.comm, opt.timeout_s)) != TUTTI_SUCCESS)
    die(&b, r, "tutti_comm_set_timeout (-T)", 0);
  if (b.rank == 0 && opt.json_file_ignored)
    fprintf(stderr, "tutti-bench: -J %s: no JSON file is written (use --json for one JSON "
            "object per row on stdout)\n", opt.json_file_ignored);
  if (b.root >= b.nranks) {
    char root[16];
    snprintf(root, sizeof(root), "%d", b.root);
    bench_bad_usage("-r: root not below nranks", root);
  }

  /* One pair of buffers for the largest size of the sweep, touched now so that page faults
   * never land in a timed call. All-gather's per-rank rounding may need nranks elements. */
  size_t es = bench_esize(b.dt), bytes = opt.maxb > es * b.nranks ? opt.maxb : es * b.nranks;
  bytes = (bytes + 4095) & ~(size_t)4095;
  if (opt.reg) {
    void *sp = NULL, *rp = NULL;
    if ((r = tutti_mem_alloc(b.comm, bytes, &sp)) != TUTTI_SUCCESS ||
        (r = tutti_mem_alloc(b.comm, bytes, &rp)) != TUTTI_SUCCESS)
      die(&b, r, "tutti_mem_alloc (-R 1)", bytes);
    b.send = sp, b.recv = rp;
  } else {
    b.send = aligned_alloc(4096, bytes);
    b.recv = aligned_alloc(4096, bytes);
  }
  if (!b.send || !b.recv) {
    fprintf(stderr, "tutti-bench: rank %d: out of memory for 2 x %zu bytes\n", b.rank, bytes);
    return 1;
  }
  memset(b.send, 0, bytes);
  memset(b.recv, 0, bytes);

  const char *transport = transport_name();
  if (b.rank == 0 && opt.cols.format == FMT_TEXT) {
    printf("# tutti-bench (tutti %s): nranks %d, transport %s, dtype %s, warmup %ld, iters ",
           TUTTI_VERSION_STRING, b.nranks, transport, bench_dtype_name(b.dt), opt.warmup);
    printf(opt.iters ? "%ld" : "auto", opt.iters);
    printf(", %s%s\n# command:", opt.blocking ? "blocking" : "non-blocking",
           opt.reg ? ", registered buffers" : "");
    for (int i = 0; i < argc; i++)
      printf(" %s", argv[i]);
    printf("\n");
  } else if (b.rank == 0 && opt.cols.format == FMT_CSV) {
    printf("collective,nranks,size,count,type,op,root,inplace,iters,time_us,algbw_gbs,"
           "busbw_gbs,wrong,minflt_per_op,allocs_per_op,bound_gbs,pct_of_bound\n");
  }

  struct roofs rf = {0};
  if (opt.cols.roof)
    measure_roofs(&b, bytes, &rf);
  double wrong = 0;
  for (long cycle = 0; opt.cycles == 0 || cycle < opt.cycles; cycle++)
    for (int i = 0; i < bench_ncolls; i++)
      if (opt.colls & (1u << i))
        wrong += sweep(&b, &bench_colls[i], &rf, transport);
  /* nccl-tests' closing lines, which its parsers look for (on stderr with --json/--csv, so
   * stdout stays one record per line). */
  if (b.rank == 0) {
    FILE *f = opt.cols.format == FMT_TEXT ? stdout : stderr;
    fprintf(f, "# Out of bounds values : %.0f %s\n", wrong, wrong ? "FAILED" : "OK");
    fprintf(f, "# Avg bus bandwidth    : %g \n#\n",
            busbw_count ? busbw_sum / (double)busbw_count : 0.0);
  }
  if (opt.reg) {
    tutti_mem_free(b.comm, b.send);
    tutti_mem_free(b.comm, b.recv);
  } else {
    free(b.send);
    free(b.recv);
  }
  tutti_comm_destroy(b.comm);
  free(rf.v);
  return wrong ? 1 : 0;
}
