/*
 * --roofline: what the memory of this machine allows at each size, so that a row can say how
 * close a collective came. Every rank runs the kernels at the same time, because that is how
 * the collective itself runs: ranks sharing a core (n > cores) or a memory channel share its
 * bandwidth, and a bound measured on an idle machine would be one no collective could reach.
 */
#include "bench.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* Each kernel runs for about this long per size: several scheduler slices (4 ms at HZ=250),
 * so that ranks time-sharing a core see their share and not a lucky slice. */
#define ROOF_TARGET_S 0.02

static double roof_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The compiler must neither drop a pass whose result nobody reads nor merge two passes. */
static void clobber(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

/* Eight floats: GCC and Clang lower it to one AVX register or two SSE ones. */
typedef float v8f __attribute__((vector_size(32)));

/* c = a + b in float32, the reduction every sum collective performs. Written with vectors
 * because -O2 does not vectorise the plain loop, and cloned for AVX2 where GCC can (it picks
 * the clone at load time): the library's kernels are vectorised, and a scalar bound would
 * flatter them in cache. Not under ThreadSanitizer: the clone's resolver runs while the
 * program is loaded, before TSan's runtime is up, and every TSan build of tutti-bench and the
 * *_perf programs died with SIGSEGV there at start-up. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("avx2", "default")))
#endif
static void sum_f32(float *c, const float *a, const float *b, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    v8f x, y;
    memcpy(&x, a + i, sizeof(x)); /* memcpy: no alignment is assumed */
    memcpy(&y, b + i, sizeof(y));
    x += y;
    memcpy(c + i, &x, sizeof(x));
  }
  for (; i < n; i++)
    c[i] = a[i] + b[i];
}

static void pass(int reduce, size_t size, char *x, char *y, char *z) {
  size_t n = size / sizeof(float) ? size / sizeof(float) : 1;
  if (reduce)
    sum_f32((float *)z, (const float *)x, (const float *)y, n);
  else
    memcpy(y, x, size);
  clobber(reduce ? z : y);
}

/* Bytes per second of one kernel: one untimed pass (faults, cache), then batches of passes,
 * doubling, until one batch takes ROOF_TARGET_S; the clock is read per batch, not per pass,
 * since a clock read costs as much as copying a few hundred bytes. */
static double rate(int reduce, size_t size, char *x, char *y, char *z) {
  size_t bytes = reduce ? (size / sizeof(float) ? size / sizeof(float) : 1) * 4 : size;
  pass(reduce, size, x, y, z);
  for (long reps = 1;; reps *= 2) {
    double t0 = roof_now();
    for (long i = 0; i < reps; i++)
      pass(reduce, size, x, y, z);
    double t = roof_now() - t0;
    if (t >= ROOF_TARGET_S || reps >= (1L << 40))
      return (double)bytes * (double)reps / t;
  }
}

tutti_result_t bench_roof_measure(const struct bench_run *b, size_t size, char *x, char *y,
                                  char *z, struct bench_roof *out) {
  /* Float inputs that stay normal numbers, so no denormal slow path skews the reduce. */
  size_t n = size / sizeof(float) ? size / sizeof(float) : 1;
  for (size_t i = 0; i < n; i++) {
    ((float *)x)[i] = (float)(i & 255);
    ((float *)y)[i] = 1.0f;
  }
  double gbs[2];
  for (int k = 0; k < 2; k++) {
    tutti_result_t r = tutti_barrier(b->comm);
    if (r != TUTTI_SUCCESS)
      return r;
    gbs[k] = rate(k, size, x, y, z) * 1e-9;
  }
  /* The slowest rank finishes last, so its rates bound the collective. */
  tutti_result_t r = tutti_allreduce(gbs, gbs, 2, TUTTI_FLOAT64, TUTTI_MIN, b->comm);
  if (r != TUTTI_SUCCESS)
    return r;
  out->size = size;
  out->copy_gbs = gbs[0];
  out->reduce_gbs = gbs[1];
  return TUTTI_SUCCESS;
}

double bench_roof_bound(const struct bench_coll *c, const struct bench_roof *roof, int nranks,
                        int inplace) {
  double cp = roof->copy_gbs, rd = roof->reduce_gbs, n = nranks > 1 ? nranks : 1;
  switch (c->kind) {
  case B_ALLGATHER: /* each rank must copy the (n-1)/n*S it lacks, busbw <= copy; out of */
  case B_GATHER:    /* place its own S/n too: S in all, so busbw <= (n-1)/n * copy */
    return inplace ? cp : cp * (n - 1) / n;
  case B_BROADCAST: /* each receiver must copy the S bytes once: busbw = S/t <= copy */
  case B_ALLTOALL:  /* the same bytes, from every peer instead of one fragment each */
  case B_SENDRECV:  /* S bytes copied once into the receiver */
  case B_SCATTER:   /* each rank copies its S/n once; the root's copy-out bounds the sum */
    return cp;
  case B_REDUCE_SCATTER: /* (n-1) reduce passes over its S/n slice: busbw <= reduce */
  case B_REDUCE:         /* the same work, spread or not, ends in the root's S bytes */
    return rd;
  case B_ALLREDUCE: /* a reduce-scatter then an all-gather, each (n-1)/n*S per rank:
                     * t >= (n-1)/n*S*(1/reduce + 1/copy), so busbw <= 2/(1/reduce + 1/copy) */
    return 2.0 / (1.0 / rd + 1.0 / cp);
  }
  return 0;
}
