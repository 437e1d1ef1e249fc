/*
 * The in-memory transport (mem.h): ranks as threads of one process, for thread-rank tests and
 * tools/tutti-sim. Every algorithm runs over it unchanged; only the bytes' road differs.
 *
 * Shape, chosen so that thousands of rank threads fit in a few GiB:
 * - A group (the ranks of one tutti_comm_init_threads call) is owned by its communicators
 *   and freed with the last of them (refcounted); nothing here is process-wide.
 * - A directed queue exists only between ranks that message each other: it is made by the
 *   sender on its first message (so a ring opens two per rank, not n - 1). The group holds
 *   one pointer per ordered pair, calloc'd: pages of that table are only committed where a
 *   row is used (n = 4,096: 128 MiB of address space, a few MiB touched by a ring).
 * - A queue holds a list of heap chunks, one per send, bounded by cfg.shm_queue_bytes of
 *   unread bytes (backpressure as over shm); memory follows the bytes in flight, not the
 *   number of pairs.
 * - A rank that waits sleeps on its own futex word (its "bell"), which every sender, every
 *   reader that frees room the rank waits for, and every failure rings; nothing spins past
 *   the generic wait loop's short spin, so 1,024 threads on 2 cores make progress.
 *
 * Failures are seen as over shm: the first rank that fails marks the group failed and rings
 * every bell, and every waiting rank fails at once naming it and its reason. A rank that
 * destroys its communicator marks itself gone, so a peer waiting on it fails instead of
 * timing out.
 *
 * Counting: the sender parses progress.c's framing (header, then hdr.len payload bytes), so
 * messages are counted as messages. Each message carries two Lamport clocks: steps (1 + the
 * sender's count when it sent) and path bytes; a receiver's clocks become the maximum of its
 * own and those of what it read. A third clock is an alpha-beta time: a message starts when
 * the sender has both reached that time and finished sending its previous message, takes
 * len * beta to leave, arrives alpha later, and is read when the receiver has finished
 * reading its previous one (len * beta each). Computation is free in this clock.
 */
#include "transport/mem_int.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"

/* ---- The group ------------------------------------------------------------------------- */

void tutti__mem_group_unref(mem_group_t *g) {
  if (!g || atomic_fetch_sub(&g->refs, 1) != 1) return;
  size_t nn = (size_t)g->n * (size_t)g->n;
  for (size_t i = 0; g->q && i < nn; i++) {
    mem_queue_t *q = atomic_load_explicit(&g->q[i], memory_order_acquire);
    if (!q) continue;
    for (mem_chunk_t *c = q->head, *next; c; c = next) {
      next = c->next;
      free(c);
    }
    pthread_mutex_destroy(&q->mu);
    free(q);
  }
  for (int i = 0; g->ep && i < g->n; i++) pthread_mutex_destroy(&g->ep[i].mu);
  free(g->q);
  free(g->ep);
  free(g);
}

mem_group_t *tutti__mem_group_new(int n, size_t cap) {
  mem_group_t *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  atomic_init(&g->refs, 1);
  g->n = n;
  g->cap = cap < MEM_MIN_QUEUE ? MEM_MIN_QUEUE : cap;
  g->q = calloc((size_t)n * (size_t)n, sizeof *g->q);
  void *ep = NULL;
  if (!g->q || posix_memalign(&ep, 64, (size_t)n * sizeof(mem_ep_t)) != 0) {
    free(g->q);
    free(g);
    return NULL;
  }
  memset(ep, 0, (size_t)n * sizeof(mem_ep_t));
  g->ep = ep;
  for (int i = 0; i < n; i++) pthread_mutex_init(&g->ep[i].mu, NULL);
  return g;
}

static void ring(mem_ep_t *ep) {
  atomic_fetch_add(&ep->bell, 1);
  if (atomic_load(&ep->sleepers))
    syscall(SYS_futex, &ep->bell, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static mem_queue_t *queue_at(const mem_group_t *g, int to, int from) {
  return atomic_load_explicit(&g->q[(size_t)to * (size_t)g->n + (size_t)from],
                              memory_order_acquire);
}

/* ---- Failures -------------------------------------------------------------------------- */

/* The first failure of the group, as shm reports one: every rank fails with it. */
static tutti_result_t check_failed(mem_transport_t *t) {
  int f = atomic_load_explicit(&t->g->failed, memory_order_acquire);
  struct tutti_comm *comm = t->base.comm;
  if (f == 0 || f - 1 == t->me) return TUTTI_SUCCESS;
  mem_ep_t *ep = &t->g->ep[f - 1];
  char who[128], why[sizeof ep->reason];
  pthread_mutex_lock(&ep->mu);
  int first = ep->code;
  memcpy(why, ep->reason, sizeof why);
  pthread_mutex_unlock(&ep->mu);
  if (!comm->culprit) comm->culprit = f;
  /* A disagreement on the call is every rank's bug and a timeout every rank's timeout. */
  tutti_result_t code = first == TUTTI_ERR_INVALID_USAGE || first == TUTTI_ERR_TIMEOUT
                            ? (tutti_result_t)first
                            : TUTTI_ERR_REMOTE;
  return tutti__error(comm, code, "%s failed and abandoned the collective (%s)",
                      tutti__peer_desc(comm, f - 1, who, sizeof who),
                      why[0] ? why : "no reason given");
}

static tutti_result_t peer_left(mem_transport_t *t, int peer) {
  char who[128];
  struct tutti_comm *comm = t->base.comm;
  if (!comm->culprit) comm->culprit = peer + 1;
  return tutti__error(comm, TUTTI_ERR_REMOTE, "%s destroyed its communicator during the call",
                      tutti__peer_desc(comm, peer, who, sizeof who));
}

/* ---- Sending --------------------------------------------------------------------------- */

static tutti_result_t out_queue(mem_transport_t *t, int peer, mem_queue_t **out) {
  mem_group_t *g = t->g;
  mem_queue_t *_Atomic *slot = &g->q[(size_t)peer * (size_t)g->n + (size_t)t->me];
  mem_queue_t *q = atomic_load_explicit(slot, memory_order_relaxed);
  if (!q) { /* only this rank makes this queue, so a plain publish suffices */
    q = calloc(1, sizeof *q);
    if (!q)
      return tutti__error(t->base.comm, TUTTI_ERR_SYSTEM, "out of memory for the queue to "
                          "rank %d", peer);
    pthread_mutex_init(&q->mu, NULL);
    atomic_store_explicit(slot, q, memory_order_release);
    t->st.queues_out++;
  }
  *out = q;
  return TUTTI_SUCCESS;
}

/* A cursor over the caller's iovec. */
typedef struct iov_cur {
  const struct iovec *iov;
  int cnt, i;
  size_t off;
} iov_cur_t;

static void iov_take(iov_cur_t *c, char *dst, size_t n, int advance) {
  iov_cur_t k = *c;
  while (n) {
    size_t have = k.iov[k.i].iov_len - k.off, m = have < n ? have : n;
    memcpy(dst, (const char *)k.iov[k.i].iov_base + k.off, m);
    dst += m;
    n -= m;
    k.off += m;
    if (k.off == k.iov[k.i].iov_len) {
      k.i++;
      k.off = 0;
    }
  }
  if (advance) *c = k;
}

/* A header starts a message: stamp it with the sender's clocks and count it. */
static void start_msg(mem_transport_t *t, mem_queue_t *q, const tutti_msg_hdr_t *h) {
  int is_msg = h->magic == TUTTI_MSG_MAGIC;
  uint64_t len = is_msg ? h->len : 0;
  q->in_msg = 1;
  q->cur_is_msg = is_msg;
  q->msg_left = HDR_BYTES + len;
  double start = t->now > t->tx_free ? t->now : t->tx_free;
  t->tx_free = start + (double)len * t->beta;
  q->cur = (mem_stamp_t){t->steps + 1, t->path_bytes + len, t->tx_free + t->alpha, len};
  if (!is_msg) return;
  t->st.msgs_sent++;
  t->st.bytes_sent += len;
  if (q->tx_epoch != t->epoch) {
    q->tx_epoch = t->epoch;
    t->st.peers_sent++;
  }
}

static tutti_result_t mem_send(tutti_transport_t *tp, int peer, const struct iovec *iov,
                               int iovcnt, size_t *moved) {
  mem_transport_t *t = (mem_transport_t *)tp;
  mem_ep_t *dst = &t->g->ep[peer];
  *moved = 0;
  /* Once any rank failed the group is spent, even for a rank whose bytes are all there. */
  if (atomic_load_explicit(&t->g->failed, memory_order_relaxed)) TRY(check_failed(t));
  if (atomic_load(&dst->left)) return peer_left(t, peer);
  mem_queue_t *q = NULL;
  TRY(out_queue(t, peer, &q));
  iov_cur_t cur = {iov, iovcnt, 0, 0};
  size_t total = 0;
  for (int i = 0; i < iovcnt; i++) total += iov[i].iov_len;
  size_t room = t->g->cap - atomic_load(&q->bytes);
  while (total) {
    if (!q->in_msg) {
      tutti_msg_hdr_t h;
      if (total < HDR_BYTES)
        return tutti__error(tp->comm, TUTTI_ERR_INTERNAL, "a message header to rank %d came "
                            "in pieces (the in-memory transport moves headers whole)", peer);
      if (room < HDR_BYTES) break;
      iov_take(&cur, (char *)&h, HDR_BYTES, 0);
      start_msg(t, q, &h);
    }
    size_t n = total < room ? total : room;
    if (n > q->msg_left) n = (size_t)q->msg_left;
    if (!n) break;
    mem_chunk_t *c = malloc(sizeof *c + n);
    if (!c)
      return tutti__error(tp->comm, TUTTI_ERR_SYSTEM, "out of memory for %zu bytes to rank %d",
                          n, peer);
    iov_take(&cur, c->data, n, 1);
    c->next = NULL;
    c->len = n;
    c->off = 0;
    c->stamp = q->cur;
    c->is_msg = q->cur_is_msg;
    q->msg_left -= n;
    c->ends_msg = q->msg_left == 0;
    if (c->ends_msg) q->in_msg = 0;
    pthread_mutex_lock(&q->mu);
    if (q->tail)
      q->tail->next = c;
    else
      q->head = c;
    q->tail = c;
    atomic_fetch_add(&q->bytes, n);
    pthread_mutex_unlock(&q->mu);
    *moved += n;
    total -= n;
    room -= n;
  }
  if (total) { /* the reader rings this rank's bell when it frees room */
    pthread_mutex_lock(&q->mu);
    q->sender_waits = 1;
    pthread_mutex_unlock(&q->mu);
  }
  if (*moved) ring(dst);
  return TUTTI_SUCCESS;
}

/* ---- Receiving ------------------------------------------------------------------------- */

static void deliver(mem_transport_t *t, mem_queue_t *q, const mem_chunk_t *c) {
  if (!c->ends_msg || !c->is_msg) return;
  const mem_stamp_t *s = &c->stamp;
  if (s->steps > t->steps) t->steps = s->steps;
  if (s->bytes > t->path_bytes) t->path_bytes = s->bytes;
  double start = s->arrive > t->rx_free ? s->arrive : t->rx_free;
  t->rx_free = start + (double)s->len * t->beta;
  if (t->rx_free > t->now) t->now = t->rx_free;
  t->st.msgs_rcvd++;
  t->st.bytes_rcvd += s->len;
  if (q->rx_epoch != t->epoch) {
    q->rx_epoch = t->epoch;
    t->st.peers_rcvd++;
  }
}

/* Takes up to len bytes from peer's queue, copying them into buf unless it is NULL (they
 * were read in place: mem_view); *moved is how many. */
static void take(mem_transport_t *t, int peer, void *buf, size_t len, size_t *moved) {
  mem_queue_t *q = queue_at(t->g, t->me, peer);
  *moved = 0;
  if (!q || len == 0 || atomic_load(&q->bytes) == 0) return;
  mem_chunk_t *done = NULL, **done_tail = &done;
  size_t n = 0;
  int wake_sender = 0;
  pthread_mutex_lock(&q->mu);
  while (q->head && n < len) {
    mem_chunk_t *c = q->head;
    size_t m = c->len - c->off < len - n ? c->len - c->off : len - n;
    if (buf) memcpy((char *)buf + n, c->data + c->off, m);
    c->off += m;
    n += m;
    if (c->off < c->len) break;
    q->head = c->next;
    if (!q->head) q->tail = NULL;
    c->next = NULL;
    *done_tail = c;
    done_tail = &c->next;
  }
  atomic_fetch_sub(&q->bytes, n);
  if (q->sender_waits) {
    q->sender_waits = 0;
    wake_sender = 1;
  }
  pthread_mutex_unlock(&q->mu);
  for (mem_chunk_t *c = done, *next; c; c = next) {
    next = c->next;
    deliver(t, q, c);
    free(c);
  }
  if (wake_sender) ring(&t->g->ep[peer]);
  *moved = n;
}

static tutti_result_t mem_recv(tutti_transport_t *tp, int peer, void *buf, size_t len,
                               size_t *moved) {
  mem_transport_t *t = (mem_transport_t *)tp;
  *moved = 0;
  if (atomic_load_explicit(&t->g->failed, memory_order_relaxed)) TRY(check_failed(t));
  take(t, peer, buf, len, moved);
  return TUTTI_SUCCESS;
}

/* The unread rest of the oldest chunk from peer (transport.h): only this rank removes chunks
 * or moves their offsets, so it stays put until released. */
static tutti_result_t mem_view(tutti_transport_t *tp, int peer, const void **ptr, size_t *len) {
  mem_transport_t *t = (mem_transport_t *)tp;
  mem_queue_t *q = queue_at(t->g, t->me, peer);
  *len = 0;
  if (atomic_load_explicit(&t->g->failed, memory_order_relaxed)) TRY(check_failed(t));
  if (!q || atomic_load(&q->bytes) == 0) return TUTTI_SUCCESS;
  pthread_mutex_lock(&q->mu);
  if (q->head) {
    *ptr = q->head->data + q->head->off;
    *len = q->head->len - q->head->off;
  }
  pthread_mutex_unlock(&q->mu);
  return TUTTI_SUCCESS;
}

static void mem_release(tutti_transport_t *tp, int peer, size_t len) {
  size_t moved;
  take((mem_transport_t *)tp, peer, NULL, len, &moved);
}

/* ---- Waiting --------------------------------------------------------------------------- */

static int want_ready(const mem_transport_t *t, const tutti_want_t *w) {
  const mem_group_t *g = t->g;
  if (atomic_load(&g->ep[w->peer].left)) return 1;
  if (w->what & TUTTI_WANT_RECV) {
    mem_queue_t *q = queue_at(g, t->me, w->peer);
    if (q && atomic_load(&q->bytes) > 0) return 1;
  }
  if (w->what & TUTTI_WANT_SEND) {
    mem_queue_t *q = queue_at(g, w->peer, t->me);
    if (!q || g->cap - atomic_load(&q->bytes) >= HDR_BYTES) return 1;
  }
  return 0;
}

/* A peer that is gone while this rank still waits on it with nothing left to read. */
static tutti_result_t check_left(mem_transport_t *t, const tutti_want_t *wants, int nwants) {
  for (int i = 0; i < nwants; i++) {
    int p = wants[i].peer;
    if (!atomic_load(&t->g->ep[p].left)) continue;
    mem_queue_t *q = queue_at(t->g, t->me, p);
    if ((wants[i].what & TUTTI_WANT_SEND) || !q || atomic_load(&q->bytes) == 0)
      return peer_left(t, p);
  }
  return TUTTI_SUCCESS;
}

static tutti_result_t mem_block(tutti_transport_t *tp, const tutti_want_t *wants, int nwants,
                                int timeout_ms) {
  mem_transport_t *t = (mem_transport_t *)tp;
  mem_ep_t *me = &t->g->ep[t->me];
  struct tutti_comm *comm = tp->comm;
  /* Announce, then read the bell, then check: whoever changes what is checked after that
   * also rings the bell, and FUTEX_WAIT returns at once on a bell that moved. */
  atomic_fetch_add(&me->sleepers, 1);
  uint32_t bell = atomic_load(&me->bell);
  int ready = atomic_load(&t->g->failed) != 0 || atomic_load(&comm->aborted) ||
              atomic_load(&comm->work_pending);
  for (int i = 0; i < nwants && !ready; i++) ready = want_ready(t, &wants[i]);
  if (!ready && timeout_ms > 0) {
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000};
    syscall(SYS_futex, &me->bell, FUTEX_WAIT_PRIVATE, bell, &ts, NULL, 0);
  }
  atomic_fetch_sub(&me->sleepers, 1);
  TRY(check_failed(t));
  return check_left(t, wants, nwants);
}

static void mem_wake(tutti_transport_t *tp) {
  mem_transport_t *t = (mem_transport_t *)tp;
  ring(&t->g->ep[t->me]);
}

/* From the thread driving the communicator (tutti__comm_fail passes its own last_error), or
 * from any thread through tutti_comm_abort, which passes its own text: then comm->failed is
 * the owner's to write, so it is not read here and the code is ABORTED. */
static void mem_fail(tutti_transport_t *tp, const char *reason) {
  mem_transport_t *t = (mem_transport_t *)tp;
  mem_ep_t *me = &t->g->ep[t->me];
  int code = reason == tp->comm->last_error ? (int)tp->comm->failed : TUTTI_ERR_ABORTED;
  pthread_mutex_lock(&me->mu);
  if (!me->code) {
    me->code = code;
    snprintf(me->reason, sizeof me->reason, "%s", reason);
  }
  pthread_mutex_unlock(&me->mu);
  int expected = 0;
  atomic_compare_exchange_strong(&t->g->failed, &expected, t->me + 1);
  for (int i = 0; i < t->g->n; i++)
    if (i != t->me) ring(&t->g->ep[i]);
}

static void mem_destroy(tutti_transport_t *tp) {
  mem_transport_t *t = (mem_transport_t *)tp;
  atomic_store(&t->g->ep[t->me].left, 1);
  for (int i = 0; i < t->g->n; i++)
    if (i != t->me) ring(&t->g->ep[i]);
  tutti__mem_group_unref(t->g);
  free(t);
}

const tutti_transport_ops_t tutti__mem_ops = {
    .name = "mem",
    .send = mem_send,
    .recv = mem_recv,
    .view = mem_view,
    .release = mem_release,
    .block = mem_block,
    .wake = mem_wake,
    .fail = mem_fail,
    .destroy = mem_destroy,
};
