/*
 * Registered buffers: tutti_mem_alloc / tutti_mem_free, and the lookups the single-copy
 * algorithms make (memreg.h). The state hangs off the communicator, made on first use.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/memreg.h"

/* A region this rank allocated. */
struct region {
  struct region *next;
  char *base;
  size_t len;
  int fd;
  uint64_t ino;
};

/* A peer's region as mapped here (local NULL: it could not be, do not try again). faulted:
 * a bit per FAULT_GRAIN of it, set once that part is mapped in (tutti__first_use), so the
 * cost lands once per part a call uses, not on a whole pool the first time a piece of it is. */
struct peer_map {
  struct peer_map *next;
  int peer;
  uint64_t base, len, ino;
  char *local;
  uint64_t *faulted;
};

#define FAULT_GRAIN ((uint64_t)2 << 20)

struct tutti_memreg {
  /* Guards regions: tutti_mem_alloc/free on the caller's thread may run while the progress
   * thread describes the buffers of a non-blocking call. */
  pthread_mutex_t lock;
  struct region *regions;
  /* Only touched by the running collective, and calls on one communicator run one at a
   * time, so it needs no lock. */
  struct peer_map *maps;
};

/* The communicator's state, made on the first allocation. Two threads may race here; the
 * loser frees its copy. */
static struct tutti_memreg *memreg_get(struct tutti_comm *comm) {
  struct tutti_memreg *r = atomic_load(&comm->memreg);
  if (r) return r;
  r = calloc(1, sizeof *r);
  if (!r) return NULL;
  pthread_mutex_init(&r->lock, NULL);
  struct tutti_memreg *expected = NULL;
  if (!atomic_compare_exchange_strong(&comm->memreg, &expected, r)) {
    pthread_mutex_destroy(&r->lock);
    free(r);
    return expected;
  }
  return r;
}

tutti_result_t tutti_mem_alloc(tutti_comm_t comm, size_t bytes, void **ptr) {
  if (!comm || !ptr) return TUTTI_ERR_INVALID_ARGUMENT;
  *ptr = NULL;
  TUTTI_SET_OP(comm, "tutti_mem_alloc");
  if (bytes == 0)
    return tutti__error_soft(comm, TUTTI_ERR_INVALID_ARGUMENT, "cannot register 0 bytes");
  struct tutti_memreg *mr = memreg_get(comm);
  struct region *reg = calloc(1, sizeof *reg);
  if (!mr || !reg) {
    free(reg);
    return tutti__error_soft(comm, TUTTI_ERR_SYSTEM, "out of memory for a registered region");
  }
  long page = sysconf(_SC_PAGESIZE);
  size_t len = (bytes + (size_t)page - 1) / (size_t)page * (size_t)page;
  struct stat st;
  int fd = memfd_create("tutti-mem", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)len) != 0 || fstat(fd, &st) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    free(reg);
    return tutti__error_soft(comm, TUTTI_ERR_SYSTEM, "cannot create a registered region of "
                             "%zu bytes: %s", len, strerror(e));
  }
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    close(fd);
    free(reg);
    return tutti__error_soft(comm, TUTTI_ERR_SYSTEM, "cannot map a registered region of %zu "
                             "bytes: %s", len, strerror(e));
  }
  *reg = (struct region){NULL, p, len, fd, (uint64_t)st.st_ino};
  pthread_mutex_lock(&mr->lock);
  reg->next = mr->regions;
  mr->regions = reg;
  pthread_mutex_unlock(&mr->lock);
  *ptr = p;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti_mem_free(tutti_comm_t comm, void *ptr) {
  if (!comm) return TUTTI_ERR_INVALID_ARGUMENT;
  if (!ptr) return TUTTI_SUCCESS;
  TUTTI_SET_OP(comm, "tutti_mem_free");
  struct tutti_memreg *mr = atomic_load(&comm->memreg);
  struct region *reg = NULL;
  if (mr) {
    pthread_mutex_lock(&mr->lock);
    for (struct region **pp = &mr->regions; *pp; pp = &(*pp)->next) {
      if ((*pp)->base == ptr) {
        reg = *pp;
        *pp = reg->next;
        break;
      }
    }
    pthread_mutex_unlock(&mr->lock);
  }
  if (!reg)
    return tutti__error_soft(comm, TUTTI_ERR_INVALID_ARGUMENT, "%p is not a buffer "
                             "tutti_mem_alloc returned on this communicator", ptr);
  /* Peers that mapped the region keep its pages until they drop their mapping; the memory
   * is the kernel's to free once the last mapping goes. */
  munmap(reg->base, reg->len);
  close(reg->fd);
  free(reg);
  return TUTTI_SUCCESS;
}

void tutti__memreg_describe(struct tutti_comm *comm, const void *p, size_t len,
                            tutti_regbuf_t *out) {
  struct tutti_memreg *mr = atomic_load_explicit(&comm->memreg, memory_order_acquire);
  *out = (tutti_regbuf_t){(uint64_t)(uintptr_t)p, 0, 0, 0, -1, 0};
  if (!mr || !p) return;
  const char *c = p;
  pthread_mutex_lock(&mr->lock);
  for (struct region *r = mr->regions; r; r = r->next) {
    if (c >= r->base && len <= r->len && (size_t)(c - r->base) <= r->len - len) {
      out->reg_base = (uint64_t)(uintptr_t)r->base;
      out->reg_len = r->len;
      out->reg_ino = r->ino;
      out->reg_fd = r->fd;
      break;
    }
  }
  pthread_mutex_unlock(&mr->lock);
}

/* Maps peer's region b here, or records that it cannot be (local NULL). */
static struct peer_map *map_peer_region(struct tutti_comm *comm, struct tutti_memreg *mr,
                                        int peer, const tutti_regbuf_t *b) {
  struct peer_map *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  *m = (struct peer_map){NULL, peer, b->reg_base, b->reg_len, b->reg_ino, NULL, NULL};
  char path[64];
  struct stat st;
  const char *why = NULL;
  snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)comm->peers[peer].pid, (int)b->reg_fd);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    why = strerror(errno);
  } else if (fstat(fd, &st) != 0 || (uint64_t)st.st_ino != b->reg_ino ||
             (uint64_t)st.st_size < b->reg_len) {
    why = "it is not the region the peer described (freed meanwhile?)";
  } else {
    size_t words = (size_t)((b->reg_len + 64 * FAULT_GRAIN - 1) / (64 * FAULT_GRAIN));
    void *p = mmap(NULL, b->reg_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
      why = strerror(errno);
    else if (!(m->faulted = calloc(words, sizeof *m->faulted))) {
      munmap(p, b->reg_len);
      why = "out of memory";
    } else
      m->local = p;
  }
  if (m->local)
    TRACE("coll", comm->rank, "mapped rank %d's registered region of %llu bytes", peer,
          (unsigned long long)b->reg_len);
  if (fd >= 0) close(fd);
  if (why) {
    char who[128];
    tutti__peer_desc(comm, peer, who, sizeof who);
    INFO("coll", comm->rank, "cannot map %s's registered region (%s): %s; reading it with "
         "process_vm_readv instead", who, path, why);
  }
  m->next = mr->maps;
  mr->maps = m;
  return m;
}

void *tutti__memreg_peer(struct tutti_comm *comm, int peer, const tutti_regbuf_t *b,
                         uint64_t addr, size_t len) {
  if (!b->reg_len || addr < b->reg_base || len > b->reg_len ||
      addr - b->reg_base > b->reg_len - len)
    return NULL;
  /* Ranks that are threads of this process (tutti_comm_init_threads) share the mapping. */
  if (comm->peers[peer].pid == (int32_t)getpid()) return (void *)(uintptr_t)addr;
  struct tutti_memreg *mr = memreg_get(comm);
  if (!mr) return NULL;
  struct peer_map *hit = NULL;
  for (struct peer_map **pp = &mr->maps; *pp;) {
    struct peer_map *m = *pp;
    if (m->peer == peer && m->base == b->reg_base && m->len == b->reg_len &&
        m->ino == b->reg_ino) {
      hit = m;
      break;
    }
    /* The peer's addresses now belong to another region, so the old one was freed: drop
     * this mapping, the last thing keeping its pages. Part of the new region's first use:
     * unmapping the last mapping of a freed 16 MiB region took 1.4 ms on a PVM guest. */
    if (m->peer == peer && m->base < b->reg_base + b->reg_len && b->reg_base < m->base + m->len) {
      int64_t t0 = tutti__now_ns();
      *pp = m->next;
      if (m->local) munmap(m->local, m->len);
      free(m->faulted);
      free(m);
      comm->first_use_ns += tutti__now_ns() - t0;
      continue;
    }
    pp = &m->next;
  }
  if (!hit) hit = map_peer_region(comm, mr, peer, b);
  if (!hit || !hit->local) return NULL;
  char *p = hit->local + (addr - b->reg_base);
  uint64_t first = (addr - b->reg_base) / FAULT_GRAIN;
  uint64_t last = (addr - b->reg_base + (len ? len - 1 : 0)) / FAULT_GRAIN;
  for (uint64_t g = first; g <= last; g++) {
    uint64_t bit = (uint64_t)1 << (g % 64);
    if (hit->faulted[g / 64] & bit) continue;
    hit->faulted[g / 64] |= bit;
    uint64_t end = (g + 1) * FAULT_GRAIN < hit->len ? (g + 1) * FAULT_GRAIN : hit->len;
    tutti__first_use(comm, hit->local + g * FAULT_GRAIN, (size_t)(end - g * FAULT_GRAIN));
  }
  return p;
}

void tutti__memreg_destroy(struct tutti_comm *comm) {
  struct tutti_memreg *mr = atomic_load(&comm->memreg);
  if (!mr) return;
  while (mr->regions) {
    struct region *r = mr->regions;
    mr->regions = r->next;
    munmap(r->base, r->len);
    close(r->fd);
    free(r);
  }
  while (mr->maps) {
    struct peer_map *m = mr->maps;
    mr->maps = m->next;
    if (m->local) munmap(m->local, m->len);
    free(m->faulted);
    free(m);
  }
  pthread_mutex_destroy(&mr->lock);
  free(mr);
  atomic_store(&comm->memreg, NULL);
}
