/*
 * Shared-memory transport between the ranks of one host. One segment per host holds, for
 * every ordered pair of local ranks, a single-producer single-consumer byte ring whose bytes
 * the producer takes from its own pool on its first message to that peer (shm_seg.h), and for
 * every local rank a doorbell word it sleeps on with a futex. The lowest rank of the host
 * creates the segment and reserves all of it (posix_fallocate) before anyone touches it, so a
 * full /dev/shm is an error at init on every local rank, never a bus error later. It is
 * unlinked as soon as every local rank has mapped it, so a crash leaves nothing in /dev/shm.
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
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "kernels/kernels.h"
#include "transport/shm_seg.h"

long tutti__shm_futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts) {
  return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* Wakes the rank of slot if it announced sleep; always bumps its bell where always is set.
 * Called after what the sleeper waits for is published (sequentially consistent, against its
 * read-bell, announce, recheck in tutti__shm_sleep): either it sees that, or this sees its
 * announcement. The waker takes the announcement (exchange), so one sleep costs one
 * FUTEX_WAKE: a rank posting on while the sleeper takes its ~35 us to wake up otherwise rang
 * for every post (an 8-byte broadcast at n = 2: up to 78 000 futex calls in 3 million calls,
 * 1 in 38, against 700 sleeps). Whoever takes it bumps the bell after taking it, so the
 * bell the sleeper read before announcing no longer matches: a wake-up that comes before the
 * sleeper's FUTEX_WAIT is not lost. (Bumping it only before the check lost them: a ring for
 * something the sleeper does not wait for, between its announcement and its FUTEX_WAIT, took
 * the announcement, and the ring it did wait for then saw none and left it asleep for its
 * whole 100 ms slice: at n = 4 on 2 CPUs, 64 MiB broadcasts averaged 45-67 ms a call in 4
 * of 18 jobs against 16-19, none of 12 after; batches of 1 MiB calls at 1.1-1.4 ms a call
 * against 0.2 fit one such stall each.) */
void tutti__shm_ring(shm_slot_t *slot, int always) {
  if (always) atomic_fetch_add(&slot->doorbell, 1);
  if (!atomic_load(&slot->sleeping) || !atomic_exchange(&slot->sleeping, 0)) return;
  atomic_fetch_add(&slot->doorbell, 1);
  tutti__shm_futex(&slot->doorbell, FUTEX_WAKE, INT_MAX, NULL);
}

/* The sleeper's half of the one-shot posts' asymmetric fence (mbox.c's mbox_post): a poster
 * stores its flag with release order only, and its load of `sleeping` may pass that store in
 * its store buffer. membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), issued after the
 * announcement, makes every CPU running a registered process pass a full barrier: a poster
 * whose load came before that barrier had its flag visible by the time this returns (the
 * recheck sees it); one whose load came after sees the announcement. A sleep pays a few
 * microseconds for it (an interrupt to every CPU running a registered process, which on a
 * VM exits to the host), against the round trip every post paid with a sequentially
 * consistent store (n = 2, 8-byte broadcast: 0.133 against 0.149 us a call, medians of 4
 * alternating runs). Only where ranks do not outnumber CPUs: there ranks spin before they
 * sleep, while ranks that take turns sleep at nearly every wait, and a barrier each time
 * cost far more than the posts gained (n = 4 on 2 CPUs, bench-peers: 64 KiB all-reduce
 * 120 us a call against 41.5 in the run before). */
static int fence_register(void) {
  long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  return cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
         syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
}

int tutti__shm_sleep(shm_transport_t *s, int fence, int (*ready)(void *), void *ctx,
                     int timeout_ms) {
  shm_slot_t *slot = &s->slots[s->me];
  uint32_t bell = atomic_load(&slot->doorbell);
  atomic_store(&slot->sleeping, 1);
  /* Registered at init by every local rank, so it cannot fail but for a kernel that takes
   * it back; then a post can be missed only for the rest of this slice. */
  if (fence && s->asym_fence) (void)syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
  int got = ready(ctx) ? 1 : -1;
  if (got < 0 && timeout_ms > 0) {
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000};
    if (tutti__shm_futex(&slot->doorbell, FUTEX_WAIT, bell, &ts) == 0) got = 0;
  }
  atomic_store(&slot->sleeping, 0);
  return got;
}

static void ring_bell(shm_transport_t *s, int li) { tutti__shm_ring(&s->slots[li], 1); }

tutti_result_t tutti__shm_check_failed(shm_transport_t *s) {
  int32_t f = atomic_load_explicit(&s->hdr->failed, memory_order_acquire);
  struct tutti_comm *comm = s->base.comm;
  if (f == 0 || f - 1 == comm->rank || comm->in_agreement) return TUTTI_SUCCESS;
  char who[128], why[256];
  int li = comm->peers[f - 1].local_index;
  /* The first cause, not the local neighbour that gave up because of it: ranks on other
   * hosts learn the culprit from this rank (its abort to them names it). */
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

/* Carves the queue to local rank `to` out of this rank's pool, on the first message to it.
 * The first queues get TUTTI_SHM_QUEUE_SIZE; once the pool runs low later ones get a smaller
 * power of two, never less than SHM_MIN_QUEUE, because the pool always keeps that much for
 * every local rank still without one. So a valid program never runs out of queues; one that
 * talks to every peer gets smaller queues past the first few (slower for large messages, and
 * the bytes stream through in pieces all the same). */
static void queue_open(shm_transport_t *s, int to) {
  size_t left = s->pool_bytes - s->pool_used;
  size_t keep = (size_t)(s->unopened - 1) * SHM_MIN_QUEUE;
  size_t bytes = s->qbytes;
  while (bytes > SHM_MIN_QUEUE && bytes > left - keep) bytes /= 2;
  size_t off = pools_offset(s->nlocal) + (size_t)s->me * s->pool_bytes + s->pool_used;
  s->pool_used += bytes;
  s->unopened--;
  tutti__first_use(s->base.comm, s->seg + off, bytes);
  TRACE("shm", s->base.comm->rank, "queue to local rank %d: %zu bytes (%zu of the %zu-byte pool "
        "left)", to, bytes, s->pool_bytes - s->pool_used, s->pool_bytes);
  s->tx[to] = (shm_queue_t){s->seg + off, bytes};
  atomic_store_explicit(&s->rings[pair(s, s->me, to)].where,
                        off | (uint64_t)__builtin_ctzll(bytes), memory_order_release);
}

/* Finds the queue local rank `from` opened to this rank: 1 if found, 0 if not opened yet, -1
 * if what it published is not a queue of its pool (corruption). */
static int queue_find(shm_transport_t *s, int from) {
  uint64_t w = atomic_load_explicit(&s->rings[pair(s, from, s->me)].where,
                                    memory_order_acquire);
  if (!w) return 0;
  size_t off = (size_t)(w & ~(uint64_t)(PAGE - 1)), lg = (size_t)(w & (PAGE - 1));
  size_t pool = pools_offset(s->nlocal) + (size_t)from * s->pool_bytes;
  if (lg >= 48) return -1;
  size_t bytes = (size_t)1 << lg;
  if (bytes < SHM_MIN_QUEUE || bytes > s->qbytes || off < pool ||
      off + bytes > pool + s->pool_bytes)
    return -1;
  tutti__first_use(s->base.comm, s->seg + off, bytes);
  s->rx[from] = (shm_queue_t){s->seg + off, bytes};
  return 1;
}

int tutti__shm_peek(shm_transport_t *s, int li, void *buf, size_t len) {
  shm_ring_t *r = &s->rings[pair(s, li, s->me)];
  uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
  if (head - tail < len || (!s->rx[li].data && queue_find(s, li) <= 0)) return 0;
  const shm_queue_t *q = &s->rx[li];
  if (head - tail > q->bytes) return 0;
  size_t pos = (size_t)tail & (q->bytes - 1), first = q->bytes - pos;
  if (first > len) first = len;
  memcpy(buf, q->data + pos, first);
  memcpy((char *)buf + first, q->data, len - first);
  return 1;
}

static tutti_result_t shm_send(tutti_transport_t *t, int peer, const struct iovec *iov,
                               int iovcnt, size_t *moved) {
  shm_transport_t *s = (shm_transport_t *)t;
  int to = t->comm->peers[peer].local_index;
  shm_ring_t *r = &s->rings[pair(s, s->me, to)];
  if (!s->tx[to].data) queue_open(s, to);
  char *data = s->tx[to].data;
  size_t qbytes = s->tx[to].bytes;
  uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
  uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
  /* The peer writes tail: one ahead of head (only corruption does that) would make room
   * exceed the ring and the copies below run past it. */
  if (head - tail > qbytes) {
    char who[128];
    return tutti__error(t->comm, TUTTI_ERR_INTERNAL, "shared queue to %s is corrupt",
                        tutti__peer_desc(t->comm, peer, who, sizeof who));
  }
  size_t room = qbytes - (size_t)(head - tail), total = 0;
  for (int i = 0; i < iovcnt && room > 0; i++) {
    const char *src = iov[i].iov_base;
    size_t n = iov[i].iov_len < room ? iov[i].iov_len : room;
    size_t pos = (size_t)(head + total) & (qbytes - 1);
    size_t first = n < qbytes - pos ? n : qbytes - pos;
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

/* The bytes from peer that have arrived: *len of them readable in place at *ptr, up to the
 * queue's wrap (transport.h), of *avail in all. */
static tutti_result_t arrived(shm_transport_t *s, int peer, const char **ptr, size_t *len,
                              size_t *avail) {
  int from = s->base.comm->peers[peer].local_index;
  shm_ring_t *r = &s->rings[pair(s, from, s->me)];
  uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
  *avail = (size_t)(head - tail);
  *len = 0;
  if (!*avail) return TUTTI_SUCCESS; /* a queue not opened yet holds nothing either */
  /* Bytes without a queue, or a counter pair that claims more than a full ring, can only
   * come from corruption. */
  if ((!s->rx[from].data && queue_find(s, from) <= 0) || *avail > s->rx[from].bytes) {
    char who[128];
    return tutti__error(s->base.comm, TUTTI_ERR_INTERNAL, "shared queue from %s is corrupt",
                        tutti__peer_desc(s->base.comm, peer, who, sizeof who));
  }
  size_t qbytes = s->rx[from].bytes, pos = (size_t)tail & (qbytes - 1);
  *ptr = s->rx[from].data + pos;
  *len = *avail < qbytes - pos ? *avail : qbytes - pos;
  return TUTTI_SUCCESS;
}

static void shm_release(tutti_transport_t *t, int peer, size_t len) {
  shm_transport_t *s = (shm_transport_t *)t;
  int from = t->comm->peers[peer].local_index;
  shm_ring_t *r = &s->rings[pair(s, from, s->me)];
  uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
  atomic_store_explicit(&r->tail, tail + len, memory_order_release);
  ring_bell(s, from);
}

static tutti_result_t shm_recv(tutti_transport_t *t, int peer, void *buf, size_t len,
                               size_t *moved) {
  shm_transport_t *s = (shm_transport_t *)t;
  const char *data = NULL;
  size_t first, avail;
  *moved = 0;
  TRY(arrived(s, peer, &data, &first, &avail));
  size_t n = len < avail ? len : avail;
  if (!n) return TUTTI_SUCCESS;
  if (first > n) first = n;
  int from = t->comm->peers[peer].local_index, nt = t->comm->recv_nt;
  /* Up to the wrap, then the rest from the queue's start; one release for both. */
  tutti__copy(buf, data, first, nt);
  tutti__copy((char *)buf + first, s->rx[from].data, n - first, nt);
  *moved = n;
  shm_release(t, peer, n);
  return TUTTI_SUCCESS;
}

/* transport.h: the first contiguous run of what has arrived. */
static tutti_result_t shm_view(tutti_transport_t *t, int peer, const void **ptr, size_t *len) {
  const char *data = NULL;
  size_t avail;
  TRY(arrived((shm_transport_t *)t, peer, &data, len, &avail));
  *ptr = data;
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
    /* A queue not opened yet is opened by the send. */
    if (!s->tx[li].data || atomic_load(&r->head) - atomic_load(&r->tail) < s->tx[li].bytes)
      return 1;
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

typedef struct block_ctx {
  shm_transport_t *s;
  const tutti_want_t *wants;
  int nwants;
} block_ctx_t;

static int block_ready(void *ctx) {
  const block_ctx_t *b = ctx;
  if (atomic_load(&b->s->hdr->failed) != 0) return 1;
  for (int i = 0; i < b->nwants; i++)
    if (want_ready(b->s, &b->wants[i])) return 1;
  return 0;
}

static tutti_result_t shm_block(tutti_transport_t *t, const tutti_want_t *wants, int nwants,
                                int timeout_ms) {
  shm_transport_t *s = (shm_transport_t *)t;
  block_ctx_t b = {s, wants, nwants};
  /* Queue writers publish with full barriers (tutti__shm_ring's bump of the bell): no
   * membarrier for a wait on the queues. */
  int got = tutti__shm_sleep(s, 0, block_ready, &b, timeout_ms);
  TRY(tutti__shm_check_failed(s));
  /* Not woken by a peer: it may be gone. A peer that has exited fails the wait only where
   * what this rank wants from it is not there once its exit is seen (its last writes are
   * visible by then): a peer may send its last message and leave, ringing the bell just as
   * this rank goes to sleep (the futex then returns at once and got stays -1). Declaring it
   * dead there failed a 1 MiB all-reduce at n = 3 whose last message from the rank that
   * left was already in the queue (test_tune_agree: 2 of about 90 runs under load), as the
   * mailbox's wait already allowed for (mbox.c, post_check: what a peer posted stands). */
  for (int i = 0; got < 0 && i < nwants; i++)
    if (tutti__shm_exited(s, t->comm->peers[wants[i].peer].local_index) &&
        !want_ready(s, &wants[i]))
      return tutti__shm_check_alive(s, &wants[i], 1);
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
  free(s->mbig_mapped);
  free(s->tx);
  free(s->rx);
  free(s);
}

static const tutti_transport_ops_t shm_ops = {
    .name = "shm",
    .send = shm_send,
    .recv = shm_recv,
    .view = shm_view,
    .release = shm_release,
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

/* Waits until every local rank's CMA state is at least state. The nap grows (to 2 ms): a
 * hundred ranks polling every 100 us starve the ones they wait for of CPU (1.3 s of a
 * 128-rank init on 2 cores). */
static tutti_result_t cma_wait_all(shm_transport_t *s, uint32_t state, int64_t deadline) {
  long nap = 50;
  for (int i = 0; i < s->nlocal; i++)
    while (atomic_load_explicit(&s->slots[i].cma_state, memory_order_acquire) < state) {
      if (tutti__now_ns() > deadline)
        return tutti__error(s->base.comm, TUTTI_ERR_TIMEOUT, "local rank %d never finished "
                            "the single-copy check", s->global[i]);
      nap_us(nap);
      if (nap < 2000) nap *= 2;
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
  mine->membarrier = (uint32_t)(comm->cfg.asym_fence && !comm->oversubscribed && fence_register());
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
  s->asym_fence = 1;
  for (int i = 0; i < s->nlocal; i++) {
    all &= atomic_load_explicit(&s->slots[i].cma_state, memory_order_acquire) == CMA_OK;
    s->asym_fence &= (int)s->slots[i].membarrier;
  }
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
  s->unopened = s->nlocal;
  s->pidfd = malloc((size_t)s->nlocal * sizeof *s->pidfd);
  s->global = malloc((size_t)s->nlocal * sizeof *s->global);
  s->mseen = calloc((size_t)s->nlocal, sizeof *s->mseen);
  s->mbig_mapped = calloc((size_t)s->nlocal, sizeof *s->mbig_mapped);
  s->tx = calloc((size_t)s->nlocal, sizeof *s->tx);
  s->rx = calloc((size_t)s->nlocal, sizeof *s->rx);
  if (!s->pidfd || !s->global || !s->mseen || !s->mbig_mapped || !s->tx || !s->rx) {
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
  int64_t t0 = tutti__now_ns();
  TRY_GOTO(tutti__shm_map(s, name, deadline), res, out);
  int64_t t1 = tutti__now_ns();
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
  int64_t t2 = tutti__now_ns();
  TRY_GOTO(cma_check(s, deadline), res, out);
  int64_t t3 = tutti__now_ns();
  /* Now: the slots and counters, this rank's cells and big mailboxes, and every peer's
   * cells (flag, header, small payloads: 8 pages each); a peer's big mailboxes when a large
   * one-shot payload first reaches them, and the queues' pages when they are opened. Every
   * big mailbox of every peer would be n^2 x 128 pages for the host (2.2 GB of mappings at
   * 64 ranks, 0.9 s). */
  tutti__prefault(s->seg, pools_offset(s->nlocal));
  tutti__prefault((char *)mbox_of(s, 0, 0), (size_t)s->nlocal * MBOX_DEPTH * MBOX_CELL);
  tutti__prefault(mbig_of(s, s->me, 0), MBOX_BIG_DEPTH * MBOX_BYTES);
  INFO("shm", comm->rank, "segment %s: %zu bytes reserved for %d local ranks, queues of up to "
       "%zu bytes from %zu-byte pools, single-copy %s; set up in %.3f s (map %.3f, attach "
       "%.3f, single-copy check %.3f, prefault %.3f)", name, s->seg_bytes, s->nlocal, s->qbytes,
       s->pool_bytes, comm->cma ? "on" : "off", (double)(tutti__now_ns() - t0) / 1e9,
       (double)(t1 - t0) / 1e9, (double)(t2 - t1) / 1e9, (double)(t3 - t2) / 1e9,
       (double)(tutti__now_ns() - t3) / 1e9);
out:
  if (res != TUTTI_SUCCESS) {
    shm_destroy(&s->base);
    return res;
  }
  *out = &s->base;
  return TUTTI_SUCCESS;
}
