/*
 * The layout of the shared-memory segment of one host and the transport's private state,
 * shared by the byte queues (shm.c) and the one-shot mailboxes (mbox.c).
 *
 * The segment, in order: the header; one slot per local rank; one pair of ring counters per
 * ordered pair of local ranks (128 bytes each: 2 MiB at 128 ranks); one queue pool per local
 * rank (pool_bytes each); the mailboxes (MBOX_DEPTH per local rank). A queue's bytes live in
 * its producer's pool and are carved out on the producer's first message to that peer, so
 * the memory follows the pairs an algorithm uses and the segment grows linearly in the local
 * ranks (shm.c, queue_open).
 */
#ifndef TUTTI_SHM_SEG_H
#define TUTTI_SHM_SEG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

#define SHM_MAGIC 0x7475747469534d32ull /* "tuttiSM2" */
#define CACHELINE 64
#define PAGE 4096

/* The smallest queue a pool hands out; a pool always has room for one per local rank. */
#define SHM_MIN_QUEUE PAGE

typedef struct shm_header {
  uint64_t magic;
  uint64_t job_id;
  uint64_t queue_bytes; /* the largest queue: TUTTI_SHM_QUEUE_SIZE */
  uint64_t pool_bytes;  /* each local rank's pool of queue space (chosen by the creator) */
  uint64_t total_bytes;
  uint32_t nlocal;
  /* Set by the creator: SHM_READY once the layout is initialised, SHM_REFUSED if the host
   * could not reserve it (the reason below, which every local rank reports). */
  _Atomic uint32_t ready;
  _Atomic uint32_t attached; /* local ranks that have mapped the segment */
  _Atomic int32_t failed;    /* 1 + global rank of the first rank that failed, or 0 */
  char refused[512];         /* why the creator could not reserve the segment */
} shm_header_t;

enum { SHM_READY = 1, SHM_REFUSED = 2 };

#define CALL_DEPTH 256u
/* How far a rank may run past a rooted call that went through the queues (not one-shot)
 * before waiting until every local peer has started it (mbox.c's settle_pending). */
#define CALL_AHEAD 16u

/* Per local rank: the word it sleeps on, and whether it sleeps (so wakers skip the syscall). */
typedef struct shm_slot {
  _Alignas(CACHELINE) _Atomic uint32_t doorbell;
  _Atomic uint32_t sleeping;
  /* Why this rank failed, written before it publishes the failure, so that ranks further
   * down the line can name the first cause and not just the neighbour that gave up. */
  _Alignas(CACHELINE) char reason[256];
  int32_t code; /* its tutti_result_t */
  int32_t culprit; /* its comm->culprit: 1 + the rank its failure follows from, or 0 */
  /* Single-copy check at init: where this rank's probe word is, then its verdict on reading
   * every other rank's (CMA_PUBLISHED, then CMA_OK or CMA_REFUSED). */
  uint64_t probe_addr;
  _Atomic uint32_t cma_state;
  /* Set before cma_state's CMA_PUBLISHED: 1 if this process registered for the expedited
   * global memory barrier (shm.c's fence_register) and does not share CPUs with more local
   * ranks than there are; one-shot posts rely on it where every local rank did. */
  uint32_t membarrier;
  /* The last CALL_DEPTH collectives this rank started, call k at k % CALL_DEPTH, each a
   * seqlock: seq (0 while being written), then the fingerprint in two words. Peers read them
   * only when they wait long, end a rooted call not run one-shot, or have a rooted call still
   * to verify, so ranks that disagree on a call no message crosses (different roots) fail
   * (mbox.c). Twice MBOX_DEPTH deep: a one-shot call the mailboxes have not verified yet is
   * at most MBOX_DEPTH calls old when a later call must verify it here; a rank does not
   * overwrite the entry of a rooted call still to verify before every peer has started it
   * (mbox.c's call_publish). */
  _Alignas(CACHELINE) struct {
    _Atomic uint32_t seq;
    _Atomic uint64_t fp[2];
  } calls[CALL_DEPTH];
} shm_slot_t;

enum { CMA_NONE, CMA_PUBLISHED, CMA_OK, CMA_REFUSED };

/* Producer and consumer counters on separate lines so they do not bounce together. A ring
 * has no bytes until its producer's first message: then `where` (segment offset of the data,
 * page-aligned, | log2 of its size) is stored before head first moves, so a consumer that
 * sees head move finds the data, and one that sees no bytes needs none. */
typedef struct shm_ring {
  _Alignas(CACHELINE) _Atomic uint64_t head; /* bytes written, owned by the producer */
  _Atomic uint64_t where;                    /* 0 until the producer opens the queue */
  _Alignas(CACHELINE) _Atomic uint64_t tail; /* bytes read, owned by the consumer */
} shm_ring_t;

/* A queue as one side sees it, cached in private memory once opened. */
typedef struct shm_queue {
  char *data; /* NULL until opened */
  size_t bytes;
} shm_queue_t;

/*
 * One-shot mailboxes: what a rank offers its peers for one small collective, read in place by
 * every peer (one copy in, none through a queue). Each rank has MBOX_DEPTH cells, used by
 * successive one-shot calls in turn, so a rank may run up to MBOX_DEPTH - 1 calls ahead of a
 * peer (mbox.c): deep, because a broadcast root that waits for a descheduled reader every few
 * calls pays a scheduler round trip each time when ranks outnumber cores. A cell holds the
 * call's flag, header and a payload of up to MBOX_INLINE bytes; a larger payload (up to
 * MBOX_BYTES) goes to one of MBOX_BIG_DEPTH big mailboxes, call m to m mod MBOX_BIG_DEPTH, so a
 * call with a big payload may run only MBOX_BIG_DEPTH - 1 calls ahead. 128 cells of 256 bytes
 * and 8 big mailboxes: the 544 KiB per rank of the 8 full-size mailboxes they replace.
 */
#define MBOX_BYTES TUTTI_MBOX_BYTES
#define MBOX_DEPTH 128u
#define MBOX_BIG_DEPTH 8u
#define MBOX_CELL 256u
typedef struct shm_mbox {
  _Alignas(CACHELINE) _Atomic uint32_t ready; /* the one-shot call whose payload this is */
  _Atomic uint32_t writing; /* the call being written here: a seqlock for late readers */
  tutti_msg_hdr_t hdr; /* the call, checked by readers as a message header is */
  uint32_t big;        /* 1: the payload is in the big mailbox of the call, not below */
  _Alignas(16) char data[]; /* in the header's line: a small payload moves with the flag */
} shm_mbox_t;
#define MBOX_INLINE (MBOX_CELL - offsetof(shm_mbox_t, data))
_Static_assert(offsetof(shm_mbox_t, data) <= CACHELINE, "a cell's first line holds a payload");

/* Published calls (shm_slot_t.calls) a rank keeps: more than the one-shot calls a rank may
 * run ahead through its cells, so a rooted one-shot call not verified yet is still there. */
_Static_assert(CALL_DEPTH >= 2 * MBOX_DEPTH, "published calls outlast the mailboxes");

typedef struct shm_transport {
  tutti_transport_t base;
  char *seg;
  size_t seg_bytes;
  shm_header_t *hdr;
  shm_slot_t *slots;
  shm_ring_t *rings;
  size_t qbytes;     /* the largest queue */
  size_t pool_bytes; /* each local rank's pool */
  shm_queue_t *tx;   /* per local index: the queue this rank writes to it */
  shm_queue_t *rx;   /* per local index: the queue this rank reads from it */
  size_t pool_used;  /* bytes of this rank's pool handed out */
  int unopened;      /* local ranks this rank has opened no queue to yet */
  int nlocal;
  int me;      /* local index of this rank */
  int *pidfd;  /* per local index; -1 where pidfd_open is refused */
  int *global; /* global rank of each local index */
  uint64_t probe_word; /* what the other ranks read to prove they can (CMA check) */
  char *mboxes;        /* MBOX_DEPTH cells per local rank, MBOX_CELL apart */
  char *mbig;          /* MBOX_BIG_DEPTH big mailboxes per local rank, MBOX_BYTES apart */
  uint32_t mseq;       /* one-shot calls started */
  uint32_t *mseen;     /* per local index: the last one-shot call whose header was checked */
  /* 1 while comm->verify_seq is a one-shot call the mailboxes are to verify (mbox.c's
   * call_conflict), 0 while it is the published calls' to verify. */
  int mverify;
  tutti_msg_hdr_t mhdr; /* this rank's header of its current (or last) one-shot call */
  /* Last: placed after mverify, it moved the fields the one-shot path reads per call, and
   * the 8-byte all-reduce at n = 2 ran 6% slower (12 alternating runs; here, within 1%). */
  uint8_t *mbig_mapped; /* per local index: 1 once this rank touched its big mailboxes */
  /* 1 where ranks do not outnumber CPUs and every local rank registered for
   * membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED): a one-shot post then publishes its flag
   * with a plain release store and a sleeper pays for the ordering of its announcement
   * against it (tutti__shm_sleep); 0: the post's store is sequentially consistent. */
  int asym_fence;
} shm_transport_t;

static inline size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

static inline size_t slots_offset(void) { return round_up(sizeof(shm_header_t), PAGE); }
static inline size_t rings_offset(int n) {
  return slots_offset() + round_up((size_t)n * sizeof(shm_slot_t), PAGE);
}
static inline size_t pools_offset(int n) {
  return rings_offset(n) + round_up((size_t)n * (size_t)n * sizeof(shm_ring_t), PAGE);
}
static inline size_t mbox_offset(int n, size_t pool_bytes) {
  return pools_offset(n) + (size_t)n * pool_bytes;
}
static inline size_t mbig_offset(int n, size_t pool_bytes) {
  return mbox_offset(n, pool_bytes) + round_up((size_t)n * MBOX_DEPTH * MBOX_CELL, PAGE);
}
static inline size_t seg_size(int n, size_t pool_bytes) {
  return mbig_offset(n, pool_bytes) + (size_t)n * MBOX_BIG_DEPTH * MBOX_BYTES;
}
static inline shm_mbox_t *mbox_of(const shm_transport_t *s, int li, uint32_t call) {
  return (shm_mbox_t *)(s->mboxes + ((size_t)li * MBOX_DEPTH + call % MBOX_DEPTH) * MBOX_CELL);
}
static inline char *mbig_of(const shm_transport_t *s, int li, uint32_t call) {
  return s->mbig + ((size_t)li * MBOX_BIG_DEPTH + call % MBOX_BIG_DEPTH) * MBOX_BYTES;
}

static inline size_t pair(const shm_transport_t *s, int from, int to) {
  return (size_t)from * (size_t)s->nlocal + (size_t)to;
}

/* shm_seg.c, for shm.c: creates (the host's first local rank) or waits for and maps the
 * segment `name`, and sets s->seg, hdr, slots, rings, mboxes, pool_bytes and seg_bytes from
 * the creator's verdict. If the creator could not reserve it, every local rank fails with
 * the creator's sentence, after every rank has seen it (so the creator can unlink it). */
tutti_result_t tutti__shm_map(shm_transport_t *s, const char *name, int64_t deadline);

/* shm.c, for mbox.c and shm_seg.c. */
struct timespec;
long tutti__shm_futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts);
/* Wakes slot's rank if it announced sleep (once a sleep); `always`: bump its bell even if not. */
void tutti__shm_ring(shm_slot_t *slot, int always);
/* Sleeps on this rank's slot until ready(ctx) holds, a waker rings it or timeout_ms pass:
 * reads the bell, announces sleep (then, with fence and s->asym_fence, a global memory
 * barrier: fence for waits on one-shot posts), checks ready, then waits for the bell to
 * change (the order tutti__shm_ring's wake-up relies on). 1: ready without sleeping; 0: woken
 * by a ring; -1: not woken by one (the slice ran out, the bell had moved already, or
 * timeout_ms is 0). */
int tutti__shm_sleep(shm_transport_t *s, int fence, int (*ready)(void *), void *ctx,
                     int timeout_ms);
/* The failure another local rank published, as this rank's error; success if none. */
tutti_result_t tutti__shm_check_failed(shm_transport_t *s);
/* Copies the first len unread bytes of the queue from local rank li without consuming them;
 * 0 if fewer than len are there. */
int tutti__shm_peek(shm_transport_t *s, int li, void *buf, size_t len);
/* 1 if local rank li's process has exited. */
int tutti__shm_exited(const shm_transport_t *s, int li);
/* TUTTI_ERR_REMOTE naming the first of the wanted peers that has exited. */
tutti_result_t tutti__shm_check_alive(shm_transport_t *s, const tutti_want_t *wants, int n);

/* The mailbox capability of shm_ops (mbox.c): one-shot mailboxes and published calls. */
extern const tutti_mbox_ops_t tutti__shm_mbox_ops;
/* shm_ops's check before a sleep (mbox.c): a peer running the current call through its
 * mailbox while this rank uses its queues, or publishing another call. */
tutti_result_t tutti__shm_check(tutti_transport_t *t);

#endif
