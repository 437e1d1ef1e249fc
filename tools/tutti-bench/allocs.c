/*
 * Allocations per call (--faults): this executable defines malloc and its relatives, which
 * the dynamic linker then binds for libtutti too, counts every call and hands it to glibc's
 * own entry points. Sanitizer builds keep their interceptors instead (the count reads -1).
 */
#include "bench.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BENCH_COUNT_ALLOCS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define BENCH_COUNT_ALLOCS 0
#endif
#endif
#ifndef BENCH_COUNT_ALLOCS
#define BENCH_COUNT_ALLOCS 1
#endif

#if BENCH_COUNT_ALLOCS
/* Process-wide on purpose: every thread's allocations count (the progress thread's too). */
static atomic_ulong allocs;

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);

void *malloc(size_t size) {
  atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
  return __libc_malloc(size);
}
void *calloc(size_t n, size_t size) {
  atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
  return __libc_calloc(n, size);
}
void *realloc(void *p, size_t size) {
  atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
  return __libc_realloc(p, size);
}
void *aligned_alloc(size_t align, size_t size) {
  atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
  return __libc_memalign(align, size);
}
void *memalign(size_t align, size_t size) {
  atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
  return __libc_memalign(align, size);
}
int posix_memalign(void **out, size_t align, size_t size) {
  if (align < sizeof(void *) || (align & (align - 1)))
    return EINVAL;
  void *p = memalign(align, size);
  if (!p && size)
    return ENOMEM;
  *out = p;
  return 0;
}

double bench_allocs_now(void) { return (double)atomic_load(&allocs); }
#else
double bench_allocs_now(void) { return -1; }
#endif
