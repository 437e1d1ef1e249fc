/*
 * Measuring the memory side of the machine: cache sizes, copy and reduce bandwidth in and
 * out of cache, and the cost of one call of the kernel's single copy (its bandwidth:
 * measure_cma.c). Each figure is the best of
 * a few short repetitions: on a shared machine the best is the one least disturbed by the
 * other jobs, which is what the model wants (it orders algorithms; it does not predict the
 * neighbours).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/internal.h"
#include "kernels/kernels.h"
#include "tune/model.h"

/* "48K", "1024K", "32M" as sysfs writes cache sizes. */
static size_t sysfs_size(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char buf[32] = "";
  size_t v = 0;
  if (fgets(buf, sizeof buf, f)) {
    char *end;
    v = (size_t)strtoull(buf, &end, 10);
    if (*end == 'K') v <<= 10;
    else if (*end == 'M') v <<= 20;
  }
  fclose(f);
  return v;
}

static int sysfs_int(const char *path) {
  FILE *f = fopen(path, "r");
  int v = -1;
  if (f) {
    if (fscanf(f, "%d", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

void tutti__measure_caches(tutti_model_t *m) {
  char path[128], type[16];
  for (int i = 0; i < 8; i++) {
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    int level = sysfs_int(path);
    if (level < 0) break;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    FILE *f = fopen(path, "r");
    type[0] = '\0';
    if (f) {
      if (!fgets(type, sizeof type, f)) type[0] = '\0';
      fclose(f);
    }
    if (!strncmp(type, "Instruction", 11)) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    size_t sz = sysfs_size(path);
    if (level == 1) m->l1d_bytes = sz;
    else if (level == 2) m->l2_bytes = sz;
    else if (level == 3) m->l3_bytes = sz;
  }
  /* Containers and some VMs hide sysfs' cache directory; glibc asks cpuid instead. */
  long v;
  if (!m->l1d_bytes && (v = sysconf(_SC_LEVEL1_DCACHE_SIZE)) > 0) m->l1d_bytes = (size_t)v;
  if (!m->l2_bytes && (v = sysconf(_SC_LEVEL2_CACHE_SIZE)) > 0) m->l2_bytes = (size_t)v;
  if (!m->l3_bytes && (v = sysconf(_SC_LEVEL3_CACHE_SIZE)) > 0) m->l3_bytes = (size_t)v;
  if ((v = sysconf(_SC_NPROCESSORS_ONLN)) > 0) m->cpus = (size_t)v;
}

static size_t clamp(size_t v, size_t lo, size_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static void *map_buf(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  /* Huge pages make faulting the buffer in one fault per 2 MiB instead of per 4 KiB, most
   * of this file's time budget otherwise. */
  madvise(p, bytes, MADV_HUGEPAGE);
  /* Populating in the kernel zeroes each page once; faulting it from here would zero it and
   * then write it again. */
#ifdef MADV_POPULATE_WRITE
  if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return p;
#endif
  memset(p, 0, bytes);
  return p;
}

typedef enum { OP_COPY, OP_REDUCE, OP_CMA } mem_op_t;

/* Seconds for one pass of op over bytes (dst from src), best of reps, each repeating the
 * pass until it has run at least min_ns (so small buffers are timed over many passes).
 * With flush, both buffers are evicted from every cache level before each repetition (one
 * pass each then), so a buffer a few times L2 stands for one larger than the last-level
 * cache; two such passes within 5% of each other end the repetitions (a third would move
 * the figure less than the run-to-run spread). Timed in this thread's CPU time, not the
 * wall clock: on a machine busy with other jobs a pass is often preempted (at a load of 16 on
 * 2 cores, wall-clock passes over memory ran 4 GB/s where they run 10.7 on the quiet
 * machine), and what the model wants is the speed of the copy while it runs. */
static double best_pass(mem_op_t op, char *dst, char *src, size_t bytes, int reps,
                        int64_t min_ns, int flush) {
  double best = -1;
  struct iovec l = {dst, bytes}, r = {src, bytes};
  pid_t self = getpid();
  for (int k = 0; k < reps; k++) {
    if (flush) {
      tutti__measure_flush(src, bytes);
      tutti__measure_flush(dst, bytes);
    }
    int64_t t0 = tutti__measure_cpu_ns(), t;
    long passes = 0;
    do {
      switch (op) {
      case OP_COPY: memcpy(dst, src, bytes); break;
      case OP_REDUCE:
        tutti__reduce(dst, dst, src, bytes / 4, TUTTI_FLOAT32, TUTTI_SUM);
        break;
      case OP_CMA:
        if (process_vm_readv(self, &l, 1, &r, 1, 0) != (ssize_t)bytes) return -1;
        break;
      }
      passes++;
      t = tutti__measure_cpu_ns() - t0;
    } while (t < min_ns);
    double s = (double)t / 1e9 / (double)passes;
    int settled = flush && best > 0 && s < 1.05 * best && best < 1.05 * s;
    if (best < 0 || s < best) best = s;
    if (settled) break;
  }
  return best;
}

static double rate(double bytes, double seconds) { return seconds > 0 ? bytes / seconds : 0; }

static double ms_since(int64_t t0) { return (double)(tutti__now_ns() - t0) / 1e6; }

int tutti__measure_memory(tutti_model_t *m) {
  /* In cache: source and destination together half of L2. Out of cache, where the caches
   * can be flushed (x86): 4x L2 each (1-8 MiB; the single copy below needs 1 MiB), both
   * flushed before each pass, so every pass reads its source and the destination's lines
   * from memory. A buffer larger than the last-level cache gave the same figures (24 MiB
   * against 2 MiB flushed on the machine of this change, medians of 11 alternating rounds:
   * copy 6.5 vs 6.5-7.1 GB/s, reduce 7.2 vs 7.6-8.2, each within the run-to-run spread of
   * +-40%) but cost most of the measurement: faulting in 48 MiB took 7-200 ms in a new
   * process (huge pages compacted on demand), the passes over it 15-40 ms at a load of 5-10.
   * Without a flush: together twice the last-level cache, capped at 48 MiB (on machines with
   * a larger L3 the "memory" figure is then partly an L3 figure). */
  size_t l2 = m->l2_bytes ? m->l2_bytes : (size_t)512 << 10;
  size_t llc = m->l3_bytes ? m->l3_bytes : l2;
  size_t small = clamp(l2 / 4, (size_t)16 << 10, (size_t)1 << 20) & ~(size_t)4095;
  int flush = tutti__measure_flush(NULL, 0) == 0;
  size_t big = flush ? clamp(4 * l2, (size_t)1 << 20, (size_t)8 << 20)
                     : clamp(llc, (size_t)4 << 20, (size_t)24 << 20);
  big &= ~(size_t)4095;
  int64_t t0 = tutti__now_ns();
  char *src = map_buf(big), *dst = map_buf(big);
  int ok = src && dst;
  double t_map = ms_since(t0), t_cached = 0, t_mem = 0, t_cma = 0;
  if (ok) {
    t0 = tutti__now_ns();
    m->copy_cached_bps = rate((double)small, best_pass(OP_COPY, dst, src, small, 3, 100000, 0));
    m->reduce_cached_bps =
        rate((double)small, best_pass(OP_REDUCE, dst, src, small, 3, 100000, 0));
    t_cached = ms_since(t0);
    t0 = tutti__now_ns();
    /* Best of 3 (of 2 over unflushed buffers, whose passes are longer): the best is the one
     * the neighbours disturbed least. */
    m->copy_mem_bps = rate((double)big, best_pass(OP_COPY, dst, src, big, 3 - !flush, 0, flush));
    m->reduce_mem_bps =
        rate((double)big, best_pass(OP_REDUCE, dst, src, big, 3 - !flush, 0, flush));
    t_mem = ms_since(t0);
    t0 = tutti__now_ns();
    m->cma_call_s = best_pass(OP_CMA, dst, src, 8, 5, 20000, 0);
    if (m->cma_call_s < 0) m->cma_call_s = 0; /* refused: the model keeps its fallbacks */
    else tutti__measure_cma(m, dst, src); /* where it fails, cma keeps its fallback */
    t_cma = ms_since(t0);
  }
  if (src) munmap(src, big);
  if (dst) munmap(dst, big);
  INFO("tune", -1, "measuring memory: buffers 2 x %zu KiB %.1f ms, in cache %.1f ms, out of "
       "cache %.1f ms, single copy %.1f ms", big >> 10, t_map, t_cached, t_mem, t_cma);
  return ok && m->copy_mem_bps > 0 ? 0 : -1;
}
