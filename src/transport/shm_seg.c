/*
 * Creating and mapping the host's shared segment (layout: shm_seg.h). The lowest local rank
 * creates it and reserves every page with posix_fallocate before anyone touches it, shrinking
 * the queue pools while /dev/shm refuses; its verdict (the layout, or why it does not fit) is
 * written in the header's first page, which every local rank waits for, so a small /dev/shm
 * is the same error on every local rank at init and never a bus error later.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "transport/shm_seg.h"

static void nap_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

static size_t pool_floor(int nlocal) { return (size_t)nlocal * SHM_MIN_QUEUE; }

/* Reserves the segment's pages for real (tmpfs allocates them now, or says ENOSPC), so no
 * page of it can fail later with a bus error. Tries a pool of 4 queues of
 * TUTTI_SHM_QUEUE_SIZE per rank first, then halves the pools while /dev/shm refuses, down to
 * one smallest queue per local rank. Returns 0 and sets s->pool_bytes, or the last error. */
static int reserve(shm_transport_t *s, int fd) {
  size_t floor = pool_floor(s->nlocal), pool = 4 * s->qbytes;
  if (pool < floor) pool = floor;
  for (;;) {
    int e;
    do e = posix_fallocate(fd, 0, (off_t)seg_size(s->nlocal, pool));
    while (e == EINTR);
    if (e == 0 || pool == floor) {
      s->pool_bytes = pool;
      return e;
    }
    pool = round_up(pool / 2, PAGE);
    if (pool < floor) pool = floor;
  }
}

/* Why the creator could not reserve the segment, as every local rank will report it. */
static void refusal(shm_transport_t *s, const char *name, int e, char *buf, size_t len) {
  struct statvfs vfs;
  unsigned long long avail = statvfs("/dev/shm", &vfs) == 0
                                 ? (unsigned long long)vfs.f_bavail * vfs.f_frsize : 0;
  snprintf(buf, len, "the shared segment %s for %d local ranks does not fit in /dev/shm "
           "(%llu bytes free): not even its smallest layout of %zu bytes (4 KiB queues; "
           "TUTTI_SHM_QUEUE_SIZE=%zu asks for %zu) could be reserved (%s); enlarge /dev/shm "
           "or run fewer ranks on this host", name, s->nlocal, avail,
           seg_size(s->nlocal, pool_floor(s->nlocal)), s->qbytes,
           seg_size(s->nlocal, 4 * s->qbytes > pool_floor(s->nlocal) ? 4 * s->qbytes
                                                                     : pool_floor(s->nlocal)),
           strerror(e));
}

/* The creator's part of shm_map: creates the segment, reserves it and writes the header's
 * verdict (SHM_READY with the layout, or SHM_REFUSED with the reason) in its first page,
 * which it reserves first so that the verdict itself always has somewhere to go. */
static tutti_result_t seg_create(shm_transport_t *s, const char *name, int *fd_out) {
  struct tutti_comm *comm = s->base.comm;
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  int e = fd < 0 ? errno : posix_fallocate(fd, 0, PAGE);
  if (e) {
    /* Not even a page: a one-byte segment tells the others so (their wait reads the size). */
    if (fd >= 0 && ftruncate(fd, 1) == 0) {
      close(fd);
      nap_us(1000000); /* the others have passed the rendezvous with us: let them see it */
    } else if (fd >= 0) {
      close(fd);
    }
    shm_unlink(name);
    return tutti__error(comm, TUTTI_ERR_SYSTEM, "cannot create shared segment %s in /dev/shm: "
                        "%s", name, strerror(e));
  }
  shm_header_t *hdr = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (hdr == MAP_FAILED) {
    e = errno;
    close(fd);
    shm_unlink(name);
    return tutti__error(comm, TUTTI_ERR_SYSTEM, "cannot map shared segment %s: %s", name,
                        strerror(e));
  }
  hdr->magic = SHM_MAGIC;
  hdr->job_id = comm->job_id;
  hdr->queue_bytes = s->qbytes;
  hdr->nlocal = (uint32_t)s->nlocal;
  e = reserve(s, fd);
  if (e) {
    refusal(s, name, e, hdr->refused, sizeof hdr->refused);
    atomic_store_explicit(&hdr->ready, SHM_REFUSED, memory_order_release);
    tutti__shm_futex(&hdr->ready, FUTEX_WAKE, INT_MAX, NULL);
  } else {
    hdr->pool_bytes = s->pool_bytes;
    hdr->total_bytes = seg_size(s->nlocal, s->pool_bytes);
    /* Everything else starts as zeros, which is what a fresh reservation holds. */
    atomic_store_explicit(&hdr->ready, SHM_READY, memory_order_release);
    tutti__shm_futex(&hdr->ready, FUTEX_WAKE, INT_MAX, NULL);
    if (s->pool_bytes < 4 * s->qbytes)
      WARN("shm", comm->rank, "/dev/shm has no room for %zu bytes of shared memory: queue "
           "pools of %zu bytes per rank instead of %zu, so queues past the first are smaller; "
           "enlarge /dev/shm or lower TUTTI_SHM_QUEUE_SIZE", seg_size(s->nlocal, 4 * s->qbytes),
           s->pool_bytes, 4 * s->qbytes);
  }
  munmap(hdr, PAGE);
  *fd_out = fd;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__shm_map(shm_transport_t *s, const char *name, int64_t deadline) {
  struct tutti_comm *comm = s->base.comm;
  int fd = -1;
  if (s->me == 0) {
    TRY(seg_create(s, name, &fd));
  } else {
    /* Polls with a growing nap: tens of ranks polling every few hundred microseconds would
     * take the CPU the creator needs to reserve the segment. */
    for (long nap = 100;; nap = nap < 5000 ? nap * 2 : nap) {
      fd = shm_open(name, O_RDWR | O_CLOEXEC, 0600);
      struct stat st;
      if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 1) {
        close(fd);
        return tutti__error(comm, TUTTI_ERR_SYSTEM, "the host's first rank %d could not "
                            "create shared segment %s: /dev/shm is full", s->global[0], name);
      }
      if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size >= PAGE) break;
      if (fd >= 0) close(fd);
      if (tutti__now_ns() > deadline)
        return tutti__error(comm, TUTTI_ERR_TIMEOUT, "shared segment %s never appeared "
                            "(the host's first rank %d did not create it)", name, s->global[0]);
      nap_us(nap);
    }
  }
  shm_header_t *hdr = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (hdr == MAP_FAILED) {
    int e = errno;
    close(fd);
    if (s->me == 0) shm_unlink(name);
    return tutti__error(comm, TUTTI_ERR_SYSTEM, "cannot map shared segment %s: %s", name,
                        strerror(e));
  }
  uint32_t ready;
  while (!(ready = atomic_load_explicit(&hdr->ready, memory_order_acquire))) {
    if (tutti__now_ns() > deadline) {
      munmap(hdr, PAGE);
      close(fd);
      return tutti__error(comm, TUTTI_ERR_TIMEOUT, "shared segment %s was never initialised",
                          name);
    }
    /* The creator wakes us when it has written the verdict (reserving can take a while). */
    struct timespec slice = {0, 100000000};
    tutti__shm_futex(&hdr->ready, FUTEX_WAIT, 0, &slice);
  }
  if (ready == SHM_REFUSED) {
    char why[sizeof hdr->refused];
    memcpy(why, hdr->refused, sizeof why);
    why[sizeof why - 1] = '\0';
    atomic_fetch_add(&hdr->attached, 1);
    if (s->me == 0) {
      while (atomic_load(&hdr->attached) < (uint32_t)s->nlocal && tutti__now_ns() < deadline)
        nap_us(200);
      shm_unlink(name);
    }
    munmap(hdr, PAGE);
    close(fd);
    return tutti__error(comm, TUTTI_ERR_SYSTEM, "%s", why);
  }
  if (hdr->magic != SHM_MAGIC || hdr->job_id != comm->job_id ||
      hdr->nlocal != (uint32_t)s->nlocal || hdr->queue_bytes != s->qbytes) {
    munmap(hdr, PAGE);
    close(fd);
    return tutti__error(comm, TUTTI_ERR_INVALID_USAGE, "shared segment %s belongs to another "
                        "job or was made with another TUTTI_SHM_QUEUE_SIZE", name);
  }
  s->pool_bytes = hdr->pool_bytes;
  s->seg_bytes = hdr->total_bytes;
  munmap(hdr, PAGE);
  void *p = mmap(NULL, s->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) {
    if (s->me == 0) shm_unlink(name);
    return tutti__error(comm, TUTTI_ERR_SYSTEM, "cannot map shared segment %s: %s", name,
                        strerror(e));
  }
  s->seg = p;
  s->hdr = (shm_header_t *)p;
  s->slots = (shm_slot_t *)(s->seg + slots_offset());
  s->rings = (shm_ring_t *)(s->seg + rings_offset(s->nlocal));
  s->mboxes = s->seg + mbox_offset(s->nlocal, s->pool_bytes);
  s->mbig = s->seg + mbig_offset(s->nlocal, s->pool_bytes);
  return TUTTI_SUCCESS;
}
