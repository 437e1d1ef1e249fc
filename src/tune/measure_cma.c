/*
 * Measuring the kernel's single copy (process_vm_readv) as the cma algorithms meet it. In a
 * collective every rank reads its peers at the same time, out of buffers the application
 * allocated: ordinary pages (not huge ones, which the kernel pins and maps 512 times less
 * often), usually out of cache. On the machine of this change (2-core AMD EPYC VM, 32 MiB L3)
 * one thread reading a huge-page buffer through the kernel ran 10-16 GB/s, about memcpy's
 * speed, which made the model pick cma nearly everywhere; from ordinary pages out of cache
 * it ran 6-8 GB/s alone and 3.5-6 GB/s per thread with two threads at it at once, in line
 * with what the cma all-gather achieved (8 MiB per rank in 2.26 ms at n = 2: 3.7 GB/s).
 *
 * So the figure is per reader with two readers at once, each on its own CPU, each copying its
 * own buffer of 1 MiB (256 ordinary pages) into the caller's (whose pages do not matter: the
 * kernel pins only the source), both flushed from the caches before each pass: small, because
 * faulting in ordinary pages costs about a millisecond per MiB under load. Two threads of one
 * process stand in for two ranks (measure_sync.c says why). A pass is timed in the thread's
 * CPU time (the kernel's copy included), as measure.c's are.
 *
 * Each timed pass reads a source that only one untimed pass has read before. The same 1 MiB
 * read again and again through the kernel runs faster pass after pass although flushed from
 * the caches (whatever per-page state the kernel's walk leaves warm, it stays warm for 256
 * pages, not for the thousands of a large buffer), and a source's first read is the slowest:
 * on a 2-vCPU EPYC VM (2026-12-07), 2 readers, passes 2-12 over one 1 MiB source ran 5-6, then
 * 9.4-11.7 GB/s each, over a 16 or 32 MiB source 4.0-8.9; every pass over a fresh 1 MiB source
 * 2.8-3.7; the second pass over each of 4 sources in turn 3.7-5.9. The host cache kept the
 * best of three jobs' figures, 10.9 GB/s, where the cma algorithms moved 5.0-6.7 GB/s a rank
 * at 64 MiB (all-gather in place, n = 2), and the model then picked cma over the ring in most
 * cells from 16 MiB where the ring ran 1.1-1.6x faster (scored offline over sessions 23-25's
 * bench-tuner tables: 62% of 320 picks within 10% of the best forced time at 10.9 GB/s, 90%
 * at any figure from 3.5 to 9).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#endif

#include "core/internal.h"
#include "tune/model.h"

#define PASSES 3
#define CMA_BYTES ((size_t)1 << 20)
#define WAIT_NS 20000000 /* a partner not scheduled within 20 ms: give up (busy machine) */
/* After the first pass: further passes start only within BUDGET_NS of its end, and the
 * partner is awaited at most STALL_NS (a preempted partner costs a time slice a wait; at a
 * load of 6-8 this part took 20-55 ms a job). The best pass so far stands. */
#define BUDGET_NS 3000000
#define STALL_NS 2000000

int tutti__measure_flush(const char *p, size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
  for (size_t i = 0; i < bytes; i += 64) _mm_clflush(p + i);
  _mm_mfence();
  return 0;
#else
  (void)p;
  (void)bytes;
  return -1;
#endif
}

int64_t tutti__measure_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One reader: its buffers, and the time of each pass (-1: not run). */
typedef struct reader {
  char *src[PASSES], *dst; /* pass k reads src[k] */
  size_t bytes;
  double s[PASSES];
} reader_t;

typedef struct cma_pair {
  _Alignas(64) atomic_int ready; /* passes the partner has flushed for */
  _Alignas(64) atomic_int go;    /* passes the main side has started */
  _Alignas(64) atomic_int stop;
  int cpu;
  reader_t r[2];
} cma_pair_t;

static void *map_plain(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
#ifdef MADV_POPULATE_WRITE
  if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return p;
#endif
  memset(p, 1, bytes);
  return p;
}

/* One pass of reader r: seconds, or -1 when the kernel refused. */
static double pass(reader_t *r, int k) {
  struct iovec l = {r->dst, r->bytes}, s = {r->src[k], r->bytes};
  int64_t t0 = tutti__measure_cpu_ns();
  if (process_vm_readv(getpid(), &l, 1, &s, 1, 0) != (ssize_t)r->bytes) return -1;
  return (double)(tutti__measure_cpu_ns() - t0) / 1e9;
}

/* Spins until *w >= val (yielding now and then: on a busy machine the other side may need
 * this CPU), or wait_ns: 0, or -1. */
static int wait_for(cma_pair_t *p, atomic_int *w, int val, int64_t wait_ns) {
  int64_t end = tutti__now_ns() + wait_ns;
  for (unsigned i = 1; atomic_load_explicit(w, memory_order_acquire) < val; i++) {
    if (atomic_load_explicit(&p->stop, memory_order_relaxed)) return -1;
    if (!(i & 63)) {
      sched_yield();
      if (tutti__now_ns() > end) return -1;
    }
  }
  return 0;
}

/* The untimed first read of each source. */
static void warm(reader_t *r) {
  for (int k = 0; k < PASSES; k++) (void)pass(r, k);
}

static void *partner(void *arg) {
  cma_pair_t *p = arg;
  tutti__measure_pin(p->cpu);
  warm(&p->r[1]);
  for (int k = 0; k < PASSES; k++) {
    tutti__measure_flush(p->r[1].src[k], p->r[1].bytes);
    tutti__measure_flush(p->r[1].dst, p->r[1].bytes);
    atomic_store_explicit(&p->ready, k + 1, memory_order_release);
    if (wait_for(p, &p->go, k + 1, WAIT_NS)) break;
    p->r[1].s[k] = pass(&p->r[1], k);
  }
  atomic_store_explicit(&p->ready, PASSES + 1, memory_order_release);
  return NULL;
}

/* The pair's passes; the per-reader figure of a pass is the slower reader's (a collective
 * waits for its slowest rank). Bytes per second, or 0. */
static double run_pair(cma_pair_t *p) {
  pthread_t th;
  if (pthread_create(&th, NULL, partner, p) != 0) return 0;
  warm(&p->r[0]);
  double best = -1;
  int64_t first = 0; /* when the first pass ended */
  for (int k = 0; k < PASSES; k++) {
    if (first && tutti__now_ns() > first + BUDGET_NS) break;
    int64_t wait = first ? STALL_NS : WAIT_NS;
    tutti__measure_flush(p->r[0].src[k], p->r[0].bytes);
    tutti__measure_flush(p->r[0].dst, p->r[0].bytes);
    if (wait_for(p, &p->ready, k + 1, wait)) break;
    atomic_store_explicit(&p->go, k + 1, memory_order_release);
    p->r[0].s[k] = pass(&p->r[0], k);
    /* The partner reports this pass done by being ready for the next one. */
    if (wait_for(p, &p->ready, k + 2, wait)) break;
    if (!first) first = tutti__now_ns();
    double a = p->r[0].s[k], b = p->r[1].s[k], s = a > b ? a : b;
    if (!(a > 0 && b > 0)) continue;
    /* Two passes within 5% of each other: a third would move the figure less than the
     * run-to-run spread, and each costs both CPUs at once, which a busy machine grants
     * slowly (a pass waited up to 20 ms for its partner at a load of 7). */
    int settled = best > 0 && s < 1.05 * best && best < 1.05 * s;
    if (best < 0 || s < best) best = s;
    if (settled) break;
  }
  atomic_store(&p->stop, 1);
  pthread_join(th, NULL);
  return best > 0 ? (double)p->r[0].bytes / best : 0;
}

/* One reader alone (no second CPU): bytes per second, or 0. */
static double run_alone(reader_t *r) {
  double best = -1;
  warm(r);
  for (int k = 0; k < PASSES; k++) {
    tutti__measure_flush(r->src[k], r->bytes);
    tutti__measure_flush(r->dst, r->bytes);
    double s = pass(r, k);
    if (s > 0 && (best < 0 || s < best)) best = s;
  }
  return best > 0 ? (double)r->bytes / best : 0;
}

int tutti__measure_cma(tutti_model_t *m, char *dst0, char *dst1) {
  size_t bytes = CMA_BYTES;
  cma_pair_t *p = aligned_alloc(64, sizeof *p);
  if (!p) return -1;
  memset(p, 0, sizeof *p);
  p->cpu = tutti__measure_other_cpu();
  int nr = p->cpu >= 0 ? 2 : 1, ok = 1;
  for (int i = 0; i < nr; i++) {
    p->r[i].bytes = bytes;
    p->r[i].dst = i ? dst1 : dst0;
    for (int k = 0; k < PASSES; k++) {
      p->r[i].s[k] = -1;
      p->r[i].src[k] = map_plain(bytes);
      ok = ok && p->r[i].src[k];
    }
  }
  double bps = 0;
  if (ok) bps = nr == 2 ? run_pair(p) : run_alone(&p->r[0]);
  /* A partner never scheduled in time measured the neighbours: one reader's figure then
   * (over sources the pair may have read already: a rough figure where a rough one is all
   * this machine's load allows). */
  if (ok && bps <= 0 && nr == 2) bps = run_alone(&p->r[0]);
  for (int i = 0; i < nr; i++)
    for (int k = 0; k < PASSES; k++)
      if (p->r[i].src[k]) munmap(p->r[i].src[k], bytes);
  free(p);
  if (bps <= 0) return -1;
  m->cma_bps = bps;
  return 0;
}
