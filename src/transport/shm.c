/*
 * Shared-memory transport between the ranks of one host. One segment per host holds, for
 * every ordered pair of local ranks, a single-producer single-consumer byte ring, and for
 * every local rank a doorbell word it sleeps on with a futex. The lowest rank of the host
 * creates the segment; it is unlinked as soon as every local rank has mapped it, so a crash
 * leaves nothing in /dev/shm.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "transport/shm_seg.h"

long tutti__shm_futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts) {
  return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

static void ring_bell(shm_transport_t *s, int li) {
  shm_slot_t *slot = &s->slots[li];
  atomic_fetch_add(&slot->doorbell, 1);
  if (atomic_load(&slot->sleeping)) tutti__shm_futex(&slot->doorbell, FUTEX_WAKE, INT_MAX, NULL);
}

tutti_result_t tutti__shm_check_failed(shm_transport_t *s) {
  int32_t f = atomic_load_explicit(&s->hdr->failed, memory_order_acquire);
  struct tutti_comm *comm = s->base.comm;
  if (f == 0 || f - 1 == comm->rank || comm->in_agreement) return TUTTI_SUCCESS;
  char who[128], why[256];
  int li = comm->peers[f - 1].local_index;
  /* The first cause, not the local neighbour that gave up because of it: ranks on other
   * hosts learn the culprit from this rank (the tcp abort names it). */
  if (!comm->culprit) comm->culprit = s->slots[li].culprit ? s->slots[li].culprit : f;
  memcpy(why, s->slots[li].reason, sizeof why);
  why[sizeof why - 1] = '\0';
  /* A disagreement on the call is the caller's bug on every rank, not a peer failure; a
   * timeout is every rank's timeout (the peer stopped answering), and the reason names it. */
  int32_t first = s->slots[li].code;
  tutti_result_t code = first == TUTTI_ERR_INVALID_USAGE || first == TUTTI_ERR_TIMEOUT
                            ? (tutti_result_t)first
                            : TUTTI_ERR_REMOTE;
  return tutti__error(comm, code, "%s failed and abandoned the collective (%s)",
                      tutti__peer_desc(comm, f - 1, who, sizeof who),
                      why[0] ? why : "no reason given");
}

static tutti_result_t shm_send(tutti_transport_t *t, int peer, const struct iovec *iov,
                               int iovcnt, size_t *moved) {
  shm_transport_t *s = (shm_transport_t *)t;
  int to = t->comm->peers[peer].local_index;
  size_t q = pair(s, s->me, to);
  shm_ring_t *r = &s->rings[q];
  char *data = s->data + q * s->qbytes;
  uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
  uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
  /* The peer writes tail: one ahead of head (only corruption does that) would make room
   * exceed the ring and the copies below run past it. */
  if (head - tail > s->qbytes) {
    char who[128];
    return tutti__error(t->comm, TUTTI_ERR_INTERNAL, "shared queue to %s is corrupt",
                        tutti__peer_desc(t->comm, peer, who, sizeof who));
  }
  size_t room = s->qbytes - (size_t)(head - tail), total = 0;
  for (int i = 0; i < iovcnt && room > 0; i++) {
    const char *src = iov[i].iov_base;
    size_t n = iov[i].iov_len < room ? iov[i].iov_len : room;
    size_t pos = (size_t)(head + total) & (s->qbytes - 1);
    size_t first = n < s->qbytes - pos ? n : s->qbytes - pos;
    memcpy(data + pos, src, first);
    memcpy(data, src + first, n - first);
    total += n;
    room -= n;
  }
  *moved = total;
  if (total) {
    atomic_store_explicit(&r->head, head + total, memory_order_release);
    ring_bell(s, to);
  }
  return TUTTI_SUCCESS;
}

static tutti_result_t shm_recv(tutti_transport_t *t, int peer, void *buf, size_t len,
                               size_t *moved) {
  shm_transport_t *s = (shm_transport_t *)t;
  int from = t->comm->peers[peer].local_index;
  size_t q = pair(s, from, s->me);
  shm_ring_t *r = &s->rings[q];
  const char *data = s->data + q * s->qbytes;
  uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
  size_t avail = (size_t)(head - tail);
  /* A counter pair that claims more than a full ring can only come from corruption. */
  if (avail > s->qbytes) {
    char who[128];
    return tutti__error(t->comm, TUTTI_ERR_INTERNAL, "shared queue from %s is corrupt",
                        tutti__peer_desc(t->comm, peer, who, sizeof who));
  }
  size_t n = len < avail ? len : avail;
  *moved = n;
  if (!n) return TUTTI_SUCCESS;
  size_t pos = (size_t)tail & (s->qbytes - 1);
  size_t first = n < s->qbytes - pos ? n : s->qbytes - pos;
  memcpy(buf, data + pos, first);
  memcpy((char *)buf + first, data, n - first);
  atomic_store_explicit(&r->tail, tail + n, memory_order_release);
  ring_bell(s, from);
  return TUTTI_SUCCESS;
}

static int want_ready(shm_transport_t *s, const tutti_want_t *w) {
  int li = s->base.comm->peers[w->peer].local_index;
  if (w->what & TUTTI_WANT_RECV) {
    shm_ring_t *r = &s->rings[pair(s, li, s->me)];
    if (atomic_load(&r->head) != atomic_load(&r->tail)) return 1;
  }
  if (w->what & TUTTI_WANT_SEND) {
    shm_ring_t *r = &s->rings[pair(s, s->me, li)];
    if (atomic_load(&r->head) - atomic_load(&r->tail) < s->qbytes) return 1;
  }
  return 0;
}

/* A dead peer never rings; its pidfd becomes readable when it exits. */
int tutti__shm_exited(const shm_transport_t *s, int li) {
  if (s->pidfd[li] >= 0) {
    struct pollfd pfd = {.fd = s->pidfd[li], .events = POLLIN};
    return poll(&pfd, 1, 0) > 0;
  }
  return kill(s->base.comm->peers[s->global[li]].pid, 0) != 0 && errno == ESRCH;
}

tutti_result_t tutti__shm_check_alive(shm_transport_t *s, const tutti_want_t *wants, int n) {
  struct tutti_comm *comm = s->base.comm;
  for (int i = 0; i < n; i++) {
    if (tutti__shm_exited(s, comm->peers[wants[i].peer].local_index)) {
      char who[128];
      if (!comm->culprit) comm->culprit = wants[i].peer + 1;
      return tutti__error(comm, TUTTI_ERR_REMOTE, "%s died during the collective",
                          tutti__peer_desc(comm, wants[i].peer, who, sizeof who));
    }
  }
  return TUTTI_SUCCESS;
}

static tutti_result_t shm_block(tutti_transport_t *t, const tutti_want_t *wants, int nwants,
                                int timeout_ms) {
  shm_transport_t *s = (shm_transport_t *)t;
  shm_slot_t *slot = &s->slots[s->me];
  /* Announce sleep, then read the bell, then re-check: a producer that updates a ring after
   * our check also bumps the bell, so FUTEX_WAIT returns at once instead of missing it. */
  atomic_store(&slot->sleeping, 1);
  uint32_t bell = atomic_load(&slot->doorbell);
  int ready = atomic_load(&s->hdr->failed) != 0;
  for (int i = 0; i < nwants && !ready; i++) ready = want_ready(s, &wants[i]);
  long rc = 0;
  if (!ready && timeout_ms > 0) {
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000};
    rc = tutti__shm_futex(&slot->doorbell, FUTEX_WAIT, bell, &ts);
  }
  atomic_store(&slot->sleeping, 0);
  TRY(tutti__shm_check_failed(s));
  if (!ready && (rc != 0 || timeout_ms == 0)) TRY(tutti__shm_check_alive(s, wants, nwants));
  return TUTTI_SUCCESS;
}

static void shm_wake(tutti_transport_t *t) {
  shm_transport_t *s = (shm_transport_t *)t;
  ring_bell(s, s->me);
}

static void shm_fail(tutti_transport_t *t, const char *reason) {
  shm_transport_t *s = (shm_transport_t *)t;
  int32_t expected = 0;
  char *dst = s->slots[s->me].reason;
  size_t len = strnlen(reason, sizeof s->slots[s->me].reason - 1);
  memcpy(dst, reason, len);
  dst[len] = '\0';
  s->slots[s->me].code = t->comm->failed;
  s->slots[s->me].culprit = t->comm->culprit;
  atomic_compare_exchange_strong(&s->hdr->failed, &expected, t->comm->rank + 1);
  for (int i = 0; i < s->nlocal; i++)
    if (i != s->me) ring_bell(s, i);
}

static void shm_destroy(tutti_transport_t *t) {
  shm_transport_t *s = (shm_transport_t *)t;
  if (s->seg) munmap(s->seg, s->seg_bytes);
  for (int i = 0; s->pidfd && i < s->nlocal; i++)
    if (s->pidfd[i] >= 0) close(s->pidfd[i]);
  free(s->pidfd);
  free(s->global);
  free(s->mseen);
  free(s);
}

static const tutti_transport_ops_t shm_ops = {
    .name = "shm",
    .send = shm_send,
    .recv = shm_recv,
    .block = shm_block,
    .wake = shm_wake,
    .fail = shm_fail,
    .destroy = shm_destroy,
    .check = tutti__shm_check,
    .mbox = &tutti__shm_mbox_ops,
};

static void nap_us(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

/* The creator sizes and initialises the segment; the others wait for it to appear. */
static tutti_result_t shm_map(shm_transport_t *s, const char *name, int64_t deadline) {
  struct tutti_comm *comm = s->base.comm;
  int fd = -1;
  if (s->me == 0) {
    fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)s->seg_bytes) != 0) {
      int e = errno;
      if (fd >= 0) {
        close(fd);
        shm_unlink(name);
      }
      return tutti__error(comm, TUTTI_ERR_SYSTEM, "cannot create shared segment %s of %zu "
                          "bytes: %s", name, s->seg_bytes, strerror(e));
    }
  } else {
    for (;;) {
      fd = shm_open(name, O_RDWR | O_CLOEXEC, 0600);
      struct stat st;
      if (fd >= 0 && fstat(fd, &st) == 0 && (size_t)st.st_size == s->seg_bytes) break;
      if (fd >= 0) close(fd);
      if (tutti__now_ns() > deadline)
        return tutti__error(comm, TUTTI_ERR_TIMEOUT, "shared segment %s never appeared "
                            "(the host's first rank %d did not create it)", name, s->global[0]);
      nap_us(500);
    }
  }
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
  s->data = s->seg + data_offset(s->nlocal);
  s->mboxes = s->seg + mbox_offset(s->nlocal, s->qbytes);
  if (s->me == 0) {
    s->hdr->magic = SHM_MAGIC;
    s->hdr->job_id = comm->job_id;
    s->hdr->queue_bytes = s->qbytes;
    s->hdr->total_bytes = s->seg_bytes;
    s->hdr->nlocal = (uint32_t)s->nlocal;
    atomic_store_explicit(&s->hdr->ready, 1, memory_order_release);
  }
  while (!atomic_load_explicit(&s->hdr->ready, memory_order_acquire)) {
    if (tutti__now_ns() > deadline)
      return tutti__error(comm, TUTTI_ERR_TIMEOUT, "shared segment %s was never initialised",
                          name);
    nap_us(200);
  }
  if (s->hdr->magic != SHM_MAGIC || s->hdr->job_id != comm->job_id ||
      s->hdr->nlocal != (uint32_t)s->nlocal || s->hdr->queue_bytes != s->qbytes)
    return tutti__error(comm, TUTTI_ERR_INVALID_USAGE, "shared segment %s belongs to another "
                        "job or was made with another TUTTI_SHM_QUEUE_SIZE", name);
  return TUTTI_SUCCESS;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Maps in, now, every page of the segment this rank will touch: its queues to and from each
 * peer, the counters and the mailboxes. Otherwise each page faults the first time a call
 * reaches it, and a ring of small messages takes thousands of calls to wrap, so the faults
 * land in timed, steady-state calls. Best effort: older kernels refuse the advice. */
static void prefault(shm_transport_t *s) {
  madvise(s->seg, data_offset(s->nlocal), MADV_POPULATE_WRITE);
  for (int j = 0; j < s->nlocal; j++) {
    if (j == s->me) continue;
    madvise(s->data + pair(s, s->me, j) * s->qbytes, s->qbytes, MADV_POPULATE_WRITE);
    madvise(s->data + pair(s, j, s->me) * s->qbytes, s->qbytes, MADV_POPULATE_WRITE);
  }
  madvise(s->mboxes, (size_t)s->nlocal * MBOX_DEPTH * MBOX_STRIDE, MADV_POPULATE_WRITE);
}

/* Waits until every local rank's CMA state is at least state. */
static tutti_result_t cma_wait_all(shm_transport_t *s, uint32_t state, int64_t deadline) {
  for (int i = 0; i < s->nlocal; i++)
    while (atomic_load_explicit(&s->slots[i].cma_state, memory_order_acquire) < state) {
      if (tutti__now_ns() > deadline)
        return tutti__error(s->base.comm, TUTTI_ERR_TIMEOUT, "local rank %d never finished "
                            "the single-copy check", s->global[i]);
      nap_us(100);
    }
  return TUTTI_SUCCESS;
}

/* Single-copy transfers (process_vm_readv) need the kernel's permission to read a peer's
 * memory (same user, ptrace policy, same pid namespace). Every rank tries it on every other
 * and publishes its verdict, so all of them reach the same answer and pick the same
 * algorithms; a refusal anywhere means copies through the queues for everyone. */
static tutti_result_t cma_check(shm_transport_t *s, int64_t deadline) {
  struct tutti_comm *comm = s->base.comm;
  shm_slot_t *mine = &s->slots[s->me];
  s->probe_word = 0x746d6170ull ^ (uint64_t)getpid();
  mine->probe_addr = (uint64_t)(uintptr_t)&s->probe_word;
  atomic_store_explicit(&mine->cma_state, CMA_PUBLISHED, memory_order_release);
  TRY(cma_wait_all(s, CMA_PUBLISHED, deadline));
  int ok = comm->cfg.cma;
  for (int i = 0; ok && i < s->nlocal; i++) {
    if (i == s->me) continue;
    int32_t pid = comm->peers[s->global[i]].pid;
    uint64_t got = 0;
    struct iovec local = {&got, sizeof got};
    struct iovec remote = {(void *)(uintptr_t)s->slots[i].probe_addr, sizeof got};
    ok = process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof got &&
         got == (0x746d6170ull ^ (uint64_t)(uint32_t)pid);
    if (!ok)
      INFO("shm", comm->rank, "single-copy reads refused (rank %d: %s): copies go through the "
           "queues", s->global[i], strerror(errno));
  }
  atomic_store_explicit(&mine->cma_state, ok ? CMA_OK : CMA_REFUSED, memory_order_release);
  TRY(cma_wait_all(s, CMA_OK, deadline));
  int all = 1;
  for (int i = 0; i < s->nlocal; i++)
    all &= atomic_load_explicit(&s->slots[i].cma_state, memory_order_acquire) == CMA_OK;
  comm->cma = all && s->nlocal == comm->nranks;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__shm_create(struct tutti_comm *comm, int listen_fd, tutti_transport_t **out) {
  (void)listen_fd;
  tutti_result_t res = TUTTI_SUCCESS;
  shm_transport_t *s = calloc(1, sizeof *s);
  if (!s) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory creating shm transport");
  s->base.ops = &shm_ops;
  s->base.comm = comm;
  s->nlocal = comm->nlocal;
  s->me = comm->peers[comm->rank].local_index;
  s->qbytes = comm->cfg.shm_queue_bytes;
  s->seg_bytes = mbox_offset(s->nlocal, s->qbytes) + (size_t)s->nlocal * MBOX_DEPTH * MBOX_STRIDE;
  s->pidfd = malloc((size_t)s->nlocal * sizeof *s->pidfd);
  s->global = malloc((size_t)s->nlocal * sizeof *s->global);
  s->mseen = calloc((size_t)s->nlocal, sizeof *s->mseen);
  if (!s->pidfd || !s->global || !s->mseen) {
    res = tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory creating shm transport");
    goto out;
  }
  for (int i = 0; i < s->nlocal; i++) s->pidfd[i] = -1;
  for (int r = 0; r < comm->nranks; r++) {
    if (comm->peers[r].local_index >= 0) s->global[comm->peers[r].local_index] = r;
    if (comm->peers[r].kind == TUTTI_TRANSPORT_SHM) comm->peers[r].tp = &s->base;
  }

  char name[64];
  snprintf(name, sizeof name, "/tutti-%016llx-%d", (unsigned long long)comm->job_id,
           s->global[0]);
  int64_t deadline = tutti__deadline_after(comm->cfg.timeout_s);
  TRY_GOTO(shm_map(s, name, deadline), res, out);
  atomic_fetch_add(&s->hdr->attached, 1);
  if (s->me == 0) {
    while (atomic_load(&s->hdr->attached) < (uint32_t)s->nlocal && tutti__now_ns() < deadline)
      nap_us(200);
    shm_unlink(name);
    if (atomic_load(&s->hdr->attached) < (uint32_t)s->nlocal) {
      res = tutti__error(comm, TUTTI_ERR_TIMEOUT, "only %u of %d local ranks mapped the "
                         "shared segment", atomic_load(&s->hdr->attached), s->nlocal);
      goto out;
    }
  }
  for (int i = 0; i < s->nlocal; i++)
    if (i != s->me)
      s->pidfd[i] = (int)syscall(SYS_pidfd_open, comm->peers[s->global[i]].pid, 0);
  TRY_GOTO(cma_check(s, deadline), res, out);
  prefault(s);
  INFO("shm", comm->rank, "segment %s: %d local ranks, %zu-byte queues, single-copy %s", name,
       s->nlocal, s->qbytes, comm->cma ? "on" : "off");
out:
  if (res != TUTTI_SUCCESS) {
    shm_destroy(&s->base);
    return res;
  }
  *out = &s->base;
  return TUTTI_SUCCESS;
}
