/*
 * One-shot mailboxes (transport.h): small collectives between the ranks of one host without
 * the byte queues. A rank copies its payload once into its own mailbox and raises the flag in
 * the same cache line; its peers spin on that line and read the payload in place. A call
 * costs each rank one write and one read per peer, with no hand-off through a queue and no
 * per-message framing, so an 8-byte all-reduce is a cache-line exchange.
 *
 * Reuse without acknowledgements: each rank has MBOX_DEPTH cells and one-shot call m uses
 * cell m mod MBOX_DEPTH (and, for a payload too large for the cell, big mailbox m mod
 * MBOX_BIG_DEPTH). A rank starting call m first makes sure every peer has posted call
 * m - (depth - 1), depth being the cells' or the big mailboxes' (tutti__mbox_begin); a peer
 * that posted it has finished reading m - depth, the last call that used this rank's cell or
 * big mailbox. Calls where a rank reads every peer (all-reduce, all-gather) establish that for
 * free; a broadcast root or a reduce's leaves may run up to MBOX_DEPTH - 1 small calls ahead,
 * which amortises the scheduler's round trips when ranks outnumber cores.
 *
 * Every rank checks every peer's header of every call it can still see (the cells a peer has
 * not replaced) when it reads from that peer, or when it must wait for the peer before
 * reusing a cell, so ranks that disagree on a call fail within MBOX_DEPTH calls, at the first
 * call that reads, even where no rank read the other's payload (two ranks that both believe
 * they are a broadcast's root). Every MBOX_SAMPLE calls a rank also compares each peer's
 * previous call if the peer has posted it (one line per peer): a disagreement that repeats,
 * as two roots in a loop, fails within a few MBOX_SAMPLE calls where the peers keep pace.
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "transport/header_check.h"
#include "transport/shm_seg.h"

_Static_assert(MBOX_BYTES == TUTTI_MBOX_BYTES, "the mailbox capacity the tuner is told");

#define MBOX_SAMPLE 8u

/* Asks for the line of the next call's cell in exclusive state now, so that its peers' copies
 * are invalidated while this rank does other work: the sequentially consistent store that
 * publishes a call waits for every earlier store, and a store to a line a peer still holds
 * would make it wait for that round trip (82% of mbox_post's time, 8-byte broadcast at
 * n = 2). PREFETCHW is a no-op on x86-64 processors without it. */
static inline void prefetch_write(const void *p) {
#if defined(__x86_64__)
  __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

/* Serial-number order: the counters may wrap. */
static inline int reached(uint32_t have, uint32_t want) { return (int32_t)(have - want) >= 0; }

/* A message from peer li sitting in its byte queue for the collective this rank runs one-shot,
 * while li has not posted the call in its mailbox: that peer picked another algorithm, so the
 * ranks disagree on the call. A peer that did post it may have finished the call and sent the
 * exchange that closes it (online selection's agreement, tune/online.c, is tagged as the
 * call); its post is read after its message, so a post made before the message is seen. */
static tutti_result_t queue_conflict(shm_transport_t *s, int li, const shm_mbox_t *b,
                                     uint32_t call) {
  struct tutti_comm *comm = s->base.comm;
  tutti_msg_hdr_t got;
  if (!tutti__shm_peek(s, li, &got, sizeof got)) return TUTTI_SUCCESS;
  if (got.magic != TUTTI_MSG_MAGIC || got.seq != s->mhdr.seq) return TUTTI_SUCCESS;
  if (reached(atomic_load_explicit(&b->ready, memory_order_acquire), call)) return TUTTI_SUCCESS;
  char who[128], msg[512];
  tutti__peer_desc(comm, s->global[li], who, sizeof who);
  if (tutti__hdr_check(&s->mhdr, &got, sizeof got, who, msg, sizeof msg) == TUTTI_SUCCESS ||
      !memcmp(&got.fp, &s->mhdr.fp, sizeof got.fp))
    snprintf(msg, sizeof msg, "the ranks disagree on call #%u: %s runs it through its queues "
             "while this rank runs it one-shot (TUTTI_ALGO or TUTTI_TUNE differ?)", got.seq,
             who);
  return tutti__error(comm, TUTTI_ERR_INVALID_USAGE, "%s", msg);
}

/* Sleeps on this rank's doorbell until c is met, a poster rings it or slice_ms pass; posters
 * ring only ranks that announced sleep (tutti__shm_sleep, tutti__shm_ring). */
typedef struct doorbell_ctx {
  shm_transport_t *s;
  const tutti_cond_t *c;
} doorbell_ctx_t;

static int doorbell_ready(void *ctx) {
  const doorbell_ctx_t *d = ctx;
  return d->c->met(d->c) || atomic_load(&d->s->hdr->failed);
}

static void doorbell_sleep(shm_transport_t *s, const tutti_cond_t *c, int slice_ms) {
  doorbell_ctx_t d = {s, c};
  (void)tutti__shm_sleep(s, 1, doorbell_ready, &d, slice_ms);
}

/* Waiting for local rank li's post of a call (progress.c's wait loop, tutti__wait_cond). */
typedef struct post_wait {
  shm_transport_t *s;
  shm_mbox_t *b;
  int li;
  uint32_t call;
} post_wait_t;

static int posted(const tutti_cond_t *c) {
  const post_wait_t *w = c->ctx;
  return reached(atomic_load_explicit(&w->b->ready, memory_order_acquire), w->call);
}

static tutti_result_t post_check(const tutti_cond_t *c, int spun) {
  const post_wait_t *w = c->ctx;
  shm_transport_t *s = w->s;
  int exited = spun && tutti__shm_exited(s, w->li);
  if (exited || atomic_load(&s->hdr->failed)) {
    /* The peer may have posted, finished and gone (or failed later) since the last look:
     * what it posted stands. */
    if (posted(c)) return TUTTI_SUCCESS;
    TRY(tutti__shm_check_failed(s));
    if (exited) {
      tutti_want_t want = {s->global[w->li], TUTTI_WANT_RECV};
      TRY(tutti__shm_check_alive(s, &want, 1));
    }
  }
  return spun ? queue_conflict(s, w->li, w->b, w->call) : TUTTI_SUCCESS;
}

static void post_sleep(const tutti_cond_t *c, int ms) {
  const post_wait_t *w = c->ctx;
  doorbell_sleep(w->s, c, ms);
}

/* Waits until local rank li's mailbox holds call (or a later one), in the one wait loop. */
static tutti_result_t wait_posted(shm_transport_t *s, int li, uint32_t call, int64_t deadline) {
  post_wait_t w = {s, mbox_of(s, li, call), li, call};
  tutti_cond_t c = {posted, post_check, post_sleep, s->global[li], &w};
  if (posted(&c)) return TUTTI_SUCCESS;
  return tutti__wait_cond(s->base.comm, &c, deadline);
}

/* Checks the header local rank li posted against the one this rank posted for the call. */
static tutti_result_t check_header(shm_transport_t *s, int li, const tutti_msg_hdr_t *got,
                                   const tutti_msg_hdr_t *want) {
  if (got->magic == want->magic && got->seq == want->seq && got->len == want->len &&
      !memcmp(&got->fp, &want->fp, sizeof want->fp))
    return TUTTI_SUCCESS;
  char who[128], msg[512];
  tutti__peer_desc(s->base.comm, s->global[li], who, sizeof who);
  tutti_result_t res = tutti__hdr_check(want, got, sizeof *got, who, msg, sizeof msg);
  return tutti__error(s->base.comm, res == TUTTI_SUCCESS ? TUTTI_ERR_INVALID_USAGE : res, "%s",
                      msg);
}

/* A seqlock read of cell b's header of call c: 1 with it in *got if b holds call c and no
 * newer call started rewriting the cell meanwhile (a peer reuses its old cells while this
 * rank may still read them). */
static int read_posted_hdr(shm_mbox_t *b, uint32_t c, tutti_msg_hdr_t *got) {
  if (atomic_load_explicit(&b->ready, memory_order_acquire) != c) return 0;
  memcpy(got, &b->hdr, sizeof *got);
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(&b->writing, memory_order_relaxed) == c;
}

/* Checks local rank li's headers of the calls after the last checked one, up to upto, that
 * it has posted and not yet replaced, against this rank's own (still in its mailboxes: no
 * rank runs MBOX_DEPTH calls ahead of another). Calls a peer already replaced were read by
 * this rank in place or checked by another reader; calls not yet posted wait for later. */
static tutti_result_t check_since(shm_transport_t *s, int li, uint32_t upto) {
  for (uint32_t c = s->mseen[li] + 1; reached(upto, c); c++) {
    shm_mbox_t *b = mbox_of(s, li, c);
    if (!reached(atomic_load_explicit(&b->ready, memory_order_acquire), c)) break;
    tutti_msg_hdr_t got;
    if (read_posted_hdr(b, c, &got))
      TRY(check_header(s, li, &got, &mbox_of(s, s->me, c)->hdr));
    s->mseen[li] = c;
  }
  return TUTTI_SUCCESS;
}

/* The sampled check (top of file): every peer's header of call, if it has posted it and is
 * not rewriting that cell, against this rank's; and a failure another local rank published. */
static tutti_result_t sample_peers(shm_transport_t *s, uint32_t call) {
  TRY(tutti__shm_check_failed(s));
  for (int li = 0; li < s->nlocal; li++) {
    tutti_msg_hdr_t got;
    if (li != s->me && !reached(s->mseen[li], call) &&
        read_posted_hdr(mbox_of(s, li, call), call, &got))
      TRY(check_header(s, li, &got, &mbox_of(s, s->me, call)->hdr));
  }
  return TUTTI_SUCCESS;
}

static tutti_result_t mbox_begin(tutti_transport_t *t, size_t len, int64_t deadline) {
  shm_transport_t *s = (shm_transport_t *)t;
  uint32_t call = ++s->mseq;
  uint32_t depth = len <= MBOX_INLINE ? MBOX_DEPTH : MBOX_BIG_DEPTH;
  for (int li = 0; li < s->nlocal; li++) {
    if (li == s->me) continue;
    /* This call replaces call - depth in this rank's cell or big mailbox: every peer must
     * have finished that one, which it has once it posted a later call. */
    if (call > depth - 1 && !reached(s->mseen[li], call - (depth - 1))) {
      TRY(wait_posted(s, li, call - (depth - 1), deadline));
      /* Only here, once every depth - 1 calls for a rank that reads no one (a broadcast's
       * root): reading every peer's line on every call would cost more. */
      TRY(check_since(s, li, call - 1));
    }
  }
  if (call % MBOX_SAMPLE == 0) TRY(sample_peers(s, call - 1));
  return TUTTI_SUCCESS;
}

static tutti_result_t mbox_post(tutti_transport_t *t, const void *data, size_t len,
                                size_t call_bytes) {
  shm_transport_t *s = (shm_transport_t *)t;
  struct tutti_comm *comm = t->comm;
  uint32_t call = s->mseq;
  shm_mbox_t *b = mbox_of(s, s->me, call);
  s->mhdr = (tutti_msg_hdr_t){TUTTI_MSG_MAGIC, comm->seq, call_bytes, comm->fp};
  atomic_store_explicit(&b->writing, call, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  b->big = len > MBOX_INLINE;
  if (len) memcpy(b->big ? mbig_of(s, s->me, call) : b->data, data, len);
  b->hdr = s->mhdr;
  /* Against the sleeper's announce, then recheck (tutti__shm_sleep): either it sees this
   * flag, or this rank sees it asleep and rings. A sequentially consistent store here waits
   * for the line's round trip to the readers that hold it (82% of this function's time, n = 2
   * 8-byte broadcast, even with the prefetch below); with asym_fence the sleeper's
   * membarrier gives that order, and the compiler barrier keeps the loads of `sleeping` in
   * tutti__shm_ring after the store. */
  if (s->asym_fence) {
    atomic_store_explicit(&b->ready, call, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
  } else {
    atomic_store(&b->ready, call);
  }
  prefetch_write(mbox_of(s, s->me, call + 1));
  for (int li = 0; li < s->nlocal; li++)
    if (li != s->me) tutti__shm_ring(&s->slots[li], 0);
  return TUTTI_SUCCESS;
}

static tutti_result_t mbox_get(tutti_transport_t *t, int peer, int64_t deadline,
                               const char **data) {
  shm_transport_t *s = (shm_transport_t *)t;
  struct tutti_comm *comm = t->comm;
  int li = comm->peers[peer].local_index;
  shm_mbox_t *b = mbox_of(s, li, s->mseq);
  if (li != s->me) {
    TRY(wait_posted(s, li, s->mseq, deadline));
    TRY(check_since(s, li, s->mseq));
  }
  /* A peer's big mailboxes all at once, on the first large payload read there: one at a
   * time, each of the first MBOX_BIG_DEPTH such calls paid for a mailbox's page faults. */
  if (b->big && !s->mbig_mapped[li]) {
    tutti__prefault(mbig_of(s, li, 0), MBOX_BIG_DEPTH * MBOX_BYTES);
    s->mbig_mapped[li] = 1;
  }
  *data = b->big ? mbig_of(s, li, s->mseq) : b->data;
  return TUTTI_SUCCESS;
}

/* For a rank waiting on its queues: TUTTI_ERR_INVALID_USAGE if a peer runs the current call
 * through its mailbox (the ranks chose different algorithms for what should be one call). */
static tutti_result_t mbox_conflict(shm_transport_t *s) {
  struct tutti_comm *comm = s->base.comm;
  /* Only where the mailboxes serve every peer, and only inside a collective: point-to-point
   * calls keep the last collective's number. */
  if (comm->mbox != &s->base || comm->call_seq != comm->seq) return TUTTI_SUCCESS;
  /* Where ranks agreed so far, a peer running this call one-shot posts it as its one-shot
   * call s->mseq + 1: the cells around that one, not all MBOX_DEPTH of every peer (8 192
   * lines at 64 local ranks, before every sleep). */
  for (int li = 0; li < s->nlocal; li++)
    for (uint32_t k = s->mseq - 3; k != s->mseq + 5 && li != s->me; k++) {
      const shm_mbox_t *b = mbox_of(s, li, k);
      if (!atomic_load_explicit(&b->ready, memory_order_acquire) ||
          b->hdr.magic != TUTTI_MSG_MAGIC || b->hdr.seq != comm->seq)
        continue;
      char who[128];
      tutti__peer_desc(comm, s->global[li], who, sizeof who);
      if (memcmp(&b->hdr.fp, &comm->fp, sizeof comm->fp)) {
        tutti_msg_hdr_t want = {TUTTI_MSG_MAGIC, comm->seq, b->hdr.len, comm->fp};
        char msg[512];
        tutti__hdr_check(&want, &b->hdr, sizeof b->hdr, who, msg, sizeof msg);
        return tutti__error(comm, TUTTI_ERR_INVALID_USAGE, "%s", msg);
      }
      return tutti__error(comm, TUTTI_ERR_INVALID_USAGE, "the ranks disagree on call #%u: %s "
                          "runs it one-shot while this rank runs it through its queues "
                          "(TUTTI_ALGO or TUTTI_TUNE differ?)", comm->seq, who);
    }
  return TUTTI_SUCCESS;
}

/* ---- Published calls ------------------------------------------------------------------ */

/* Reads local rank li's entry for call k: 1 with its fingerprint in w, 0 if li has not
 * started call k yet (or is writing it), -1 if it is past it by CALL_DEPTH calls. */
static int read_call(shm_transport_t *s, int li, uint32_t k, uint64_t w[2]) {
  __typeof__(&s->slots[0].calls[0]) e = &s->slots[li].calls[k % CALL_DEPTH];
  uint32_t seq = atomic_load_explicit(&e->seq, memory_order_acquire);
  if (seq != k) return seq && reached(seq, k) ? -1 : 0;
  w[0] = atomic_load_explicit(&e->fp[0], memory_order_relaxed);
  w[1] = atomic_load_explicit(&e->fp[1], memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(&e->seq, memory_order_relaxed) == k;
}

/* Compares every local peer's call k with this rank's: INVALID_USAGE on a difference; else
 * *all is 1 when every peer's call k was seen (or is out of reach). */
static tutti_result_t check_call(struct tutti_comm *comm, shm_transport_t *s, uint32_t k,
                                 int *all) {
  uint64_t mine[2], w[2];
  *all = 1;
  if (read_call(s, s->me, k, mine) != 1) return TUTTI_SUCCESS;
  for (int li = 0; li < s->nlocal; li++) {
    if (li == s->me) continue;
    int got = read_call(s, li, k, w);
    if (got == 0) *all = 0;
    if (got != 1 || (w[0] == mine[0] && w[1] == mine[1])) continue;
    char who[128], msg[512];
    tutti__peer_desc(comm, s->global[li], who, sizeof who);
    tutti_msg_hdr_t want = {TUTTI_MSG_MAGIC, k, 0, comm->fp}, got_hdr;
    memcpy(&want.fp, mine, sizeof mine);
    got_hdr = want;
    memcpy(&got_hdr.fp, w, sizeof w);
    if (tutti__hdr_check(&want, &got_hdr, sizeof got_hdr, who, msg, sizeof msg) !=
        TUTTI_SUCCESS)
      return tutti__error(comm, TUTTI_ERR_INVALID_USAGE, "%s", msg);
  }
  return TUTTI_SUCCESS;
}

/* Compares the pending rooted calls (comm->verify_seq on), oldest first, that every peer
 * has started, and leaves verify_seq on the oldest that some peer has not (or 0). all_calls:
 * also compares the later calls some peers have started (a rank that waits long, or has a
 * message of another call in hand), where the end of a call stops at the first unfinished
 * one. This rank's entries for them are all still there: call_publish settles a pending call
 * before its entry is overwritten. */
static tutti_result_t published_pending(shm_transport_t *s, int all_calls) {
  struct tutti_comm *comm = s->base.comm;
  uint32_t oldest = 0;
  for (uint32_t k = comm->verify_seq; k && reached(comm->seq, k); k++) {
    int all;
    TRY(check_call(comm, s, k, &all));
    if (!all && !oldest) oldest = k;
    if ((!all && !all_calls) || k == comm->seq) break;
  }
  comm->verify_seq = oldest;
  return TUTTI_SUCCESS;
}

/* The published-calls check: the pending rooted calls, then the current one. */
static tutti_result_t published_conflict(shm_transport_t *s, int rooted, int all_calls) {
  struct tutti_comm *comm = s->base.comm;
  if (s->nlocal < 2 || comm->call_seq != comm->seq || comm->seq == 0) return TUTTI_SUCCESS;
  TRY(published_pending(s, all_calls));
  int all;
  TRY(check_call(comm, s, comm->seq, &all));
  if (rooted && !all && !comm->verify_seq) comm->verify_seq = comm->seq;
  return TUTTI_SUCCESS;
}

/* Waiting for local rank li to start call k (to publish it, or a later one). */
typedef struct start_wait {
  shm_transport_t *s;
  int li;
  uint32_t k;
} start_wait_t;

static int started(const tutti_cond_t *c) {
  const start_wait_t *w = c->ctx;
  uint64_t fp[2];
  return read_call(w->s, w->li, w->k, fp) != 0;
}

static tutti_result_t start_check(const tutti_cond_t *c, int spun) {
  const start_wait_t *w = c->ctx;
  shm_transport_t *s = w->s;
  TRY(tutti__shm_check_failed(s));
  if (spun && tutti__shm_exited(s, w->li) && !started(c)) {
    tutti_want_t want = {s->global[w->li], TUTTI_WANT_RECV};
    TRY(tutti__shm_check_alive(s, &want, 1));
  }
  return TUTTI_SUCCESS;
}

/* A peer starting a call rings no one (that would cost every call a read of each peer's
 * line): sleep in slices, woken early by whatever else the peer does here (its posts and
 * queue traffic ring the doorbell of a rank that announced sleep). */
static void start_sleep(const tutti_cond_t *c, int ms) {
  const start_wait_t *w = c->ctx;
  doorbell_sleep(w->s, c, ms);
}

/* How far past comm->verify_seq a rank runs before settle_pending waits: a call the mailboxes
 * are to verify is at most MBOX_DEPTH calls old (the cells bound the run ahead, and the entry
 * outlasts them); one that went through the queues, CALL_AHEAD, so that a disagreement there
 * surfaces within that many calls. */
static uint32_t ahead_limit(const shm_transport_t *s) {
  return s->mverify ? CALL_DEPTH : CALL_AHEAD;
}

/* Before this rank runs ahead_limit calls past comm->verify_seq: waits, in the one wait loop
 * and under the current call's deadline, until every local peer has started that call, and
 * compares it; then the same for the next pending one. Without this a rank running
 * CALL_DEPTH calls ahead (through the queues, which let a root run megabytes ahead) would
 * lose the check, and a peer naming another root would go unnoticed here. */
static tutti_result_t settle_pending(shm_transport_t *s) {
  struct tutti_comm *comm = s->base.comm;
  int64_t deadline = comm->call_start_ns + (int64_t)(comm->cfg.timeout_s * 1e9);
  while (comm->verify_seq && comm->seq - comm->verify_seq >= ahead_limit(s)) {
    uint32_t k = comm->verify_seq;
    uint64_t w[2];
    /* An entry this rank never wrote (a call with nothing to move returns unpublished) has
     * nothing to compare. */
    for (int li = 0; li < s->nlocal && read_call(s, s->me, k, w) == 1; li++) {
      start_wait_t sw = {s, li, k};
      tutti_cond_t c = {started, start_check, start_sleep, s->global[li], &sw};
      if (li == s->me || started(&c)) continue;
      comm->start_wait = k;
      memcpy(&comm->start_wait_fp, w, sizeof w);
      tutti_result_t res = tutti__wait_cond(comm, &c, deadline);
      comm->start_wait = 0;
      TRY(res);
    }
    int all;
    TRY(check_call(comm, s, k, &all));
    /* Every peer started k: on to the next call some peer has not. */
    comm->verify_seq = k + 1;
    TRY(published_pending(s, 0));
  }
  return TUTTI_SUCCESS;
}

/* Publishes the call this rank starts; first settles a pending rooted call whose entry this
 * one would overwrite (a test of private memory on the common path). */
static tutti_result_t call_publish(tutti_transport_t *t) {
  shm_transport_t *s = (shm_transport_t *)t;
  struct tutti_comm *comm = t->comm;
  if (s->nlocal < 2) return TUTTI_SUCCESS;
  if (__builtin_expect(comm->verify_seq && comm->seq - comm->verify_seq >= ahead_limit(s), 0))
    TRY(settle_pending(s));
  __typeof__(&s->slots[0].calls[0]) e = &s->slots[s->me].calls[comm->seq % CALL_DEPTH];
  uint64_t w[2];
  _Static_assert(sizeof comm->fp == sizeof w, "fingerprint size");
  memcpy(w, &comm->fp, sizeof w);
  atomic_store_explicit(&e->seq, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&e->fp[0], w[0], memory_order_relaxed);
  atomic_store_explicit(&e->fp[1], w[1], memory_order_relaxed);
  atomic_store_explicit(&e->seq, comm->seq, memory_order_release);
  return TUTTI_SUCCESS;
}

/* The oldest one-shot call whose header some peer has not had compared with this rank's
 * yet (check_since), or mseq + 1 if there is none. */
static uint32_t first_unchecked(const shm_transport_t *s) {
  uint32_t first = s->mseq + 1;
  for (int li = 0; li < s->nlocal; li++)
    if (li != s->me && !reached(s->mseen[li] + 1, first)) first = s->mseen[li] + 1;
  return first;
}

/* At the end of a call. A rooted call run one-shot is not compared here: the mailboxes
 * compare every peer's header of it by the time this rank reads that peer or reuses the
 * cell, MBOX_DEPTH - 1 one-shot calls later at most (mbox_begin). Reading the peers'
 * published calls after every such call instead cost a broadcast root and its receivers a
 * cache-line transfer each way per call (20-45% of an 8-byte broadcast's time at n = 2), and
 * told no more where the peer was behind. Until the mailboxes have compared it, verify_seq holds
 * the oldest call they have not, so a later call that is not one-shot compares it through
 * the published calls (CALL_DEPTH reaches back past the MBOX_DEPTH calls it can be). */
static tutti_result_t call_conflict(tutti_transport_t *t, int rooted) {
  shm_transport_t *s = (shm_transport_t *)t;
  struct tutti_comm *comm = t->comm;
  int oneshot = comm->mbox == t && s->mseq && s->mhdr.seq == comm->seq;
  if (!comm->verify_seq || !oneshot) s->mverify = 0;
  if (!oneshot || (comm->verify_seq && !s->mverify)) return published_conflict(s, rooted, 0);
  if (rooted) s->mverify = 1;
  if (!s->mverify) return TUTTI_SUCCESS;
  uint32_t first = first_unchecked(s);
  if (reached(first, s->mseq + 1)) {
    s->mverify = 0;
    comm->verify_seq = 0;
    return TUTTI_SUCCESS;
  }
  /* Every call since mverify was set ran one-shot; the collective of one-shot call first is
   * in this rank's own cell of it (a broadcast larger than a mailbox spans several one-shot
   * calls), still there: no peer's check lags MBOX_DEPTH calls behind (mbox_begin). Should
   * it not be, the count below reckons one one-shot call a collective, as before. */
  const shm_mbox_t *own = mbox_of(s, s->me, first);
  uint32_t seq = atomic_load_explicit(&own->ready, memory_order_relaxed) == first
                     ? own->hdr.seq
                     : comm->seq - (s->mseq - first);
  if (!comm->verify_seq || reached(seq, comm->verify_seq)) comm->verify_seq = seq;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__shm_check(tutti_transport_t *t) {
  TRY(mbox_conflict((shm_transport_t *)t));
  return published_conflict((shm_transport_t *)t, 0, 1);
}

const tutti_mbox_ops_t tutti__shm_mbox_ops = {
    .begin = mbox_begin,
    .post = mbox_post,
    .get = mbox_get,
    .call_publish = call_publish,
    .call_conflict = call_conflict,
};
