/* Mapping memory in ahead of use (internal.h: tutti__prefault), and counting what that
 * costs a call, so that online trials can leave a one-time cost out (tutti__first_use). */
#include <sys/mman.h>

#include "core/internal.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* The advice maps the pages in, best effort (older kernels refuse it). Then one load a page
 * from this process: where the hypervisor shadows the guest's page tables (PVM guests, as
 * the 2-CPU VMs of docs/tuning.md), the advice maps the pages in the guest only, and each
 * process's first access to each page still traps to the hypervisor, 5-7 us a page (1.7 ms
 * a MiB, measured; huge pages do not help: populating 64 MiB of them took 108-139 ms there).
 * A shm queue's first 16 calls of 64 KiB at n = 2 took 200-250 us each instead of 10. Elsewhere
 * the loads cost a cache miss a page. A peer may be writing these pages meanwhile: the loaded
 * bytes are discarded. */
void tutti__prefault(void *p, size_t len) {
  const uintptr_t page = 4096;
  uintptr_t start = (uintptr_t)p & ~(page - 1), end = (uintptr_t)p + len;
  madvise((void *)start, end - start, MADV_POPULATE_WRITE);
  for (uintptr_t a = start; a < end; a += page) (void)*(volatile const char *)a;
}

void tutti__first_use(struct tutti_comm *comm, void *p, size_t len) {
  int64_t t0 = tutti__now_ns();
  tutti__prefault(p, len);
  comm->first_use_ns += tutti__now_ns() - t0;
}
