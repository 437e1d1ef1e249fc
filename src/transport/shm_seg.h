/*
 * The layout of the shared-memory segment of one host and the transport's private state,
 * shared by the byte queues (shm.c) and the one-shot mailboxes (mbox.c).
 */
#ifndef TUTTI_SHM_SEG_H
#define TUTTI_SHM_SEG_H

#include <stdatomic.h>
#include <stdint.h>

#include "transport/transport.h"

#define SHM_MAGIC 0x7475747469534d31ull /* "tuttiSM1" */
#define CACHELINE 64
#define PAGE 4096

typedef struct shm_header {
  uint64_t magic;
  uint64_t job_id;
  uint64_t queue_bytes;
  uint64_t total_bytes;
  uint32_t nlocal;
  _Atomic uint32_t ready;    /* set by the creator once the layout is initialised */
  _Atomic uint32_t attached; /* local ranks that have mapped the segment */
  _Atomic int32_t failed;    /* 1 + global rank of the first rank that failed, or 0 */
} shm_header_t;

#define CALL_DEPTH 8u

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
  /* The last CALL_DEPTH collectives this rank started, call k at k % CALL_DEPTH, each a
   * seqlock: seq (0 while being written), then the fingerprint in two words. Peers read them
   * only when they wait long, end a rooted call, or have a rooted call still to verify, so
   * ranks that disagree on a call no message crosses (different roots) fail (mbox.c). */
  _Alignas(CACHELINE) struct {
    _Atomic uint32_t seq;
    _Atomic uint64_t fp[2];
  } calls[CALL_DEPTH];
} shm_slot_t;

enum { CMA_NONE, CMA_PUBLISHED, CMA_OK, CMA_REFUSED };

/* Producer and consumer counters on separate lines so they do not bounce together. */
typedef struct shm_ring {
  _Alignas(CACHELINE) _Atomic uint64_t head; /* bytes written, owned by the producer */
  _Alignas(CACHELINE) _Atomic uint64_t tail; /* bytes read, owned by the consumer */
} shm_ring_t;

/*
 * A one-shot mailbox: the payload a rank offers its peers for one small collective, read in
 * place by every peer (one copy in, none through a queue). Each rank has MBOX_DEPTH, used by
 * successive one-shot calls in turn: a rank may run up to MBOX_DEPTH - 1 calls ahead of a
 * peer (mbox.c).
 */
#define MBOX_BYTES TUTTI_MBOX_BYTES
#define MBOX_DEPTH 8u
typedef struct shm_mbox {
  _Alignas(CACHELINE) _Atomic uint32_t ready; /* the one-shot call whose payload this is */
  _Atomic uint32_t writing; /* the call being written here: a seqlock for late readers */
  tutti_msg_hdr_t hdr; /* the call, checked by readers as a message header is */
  char data[];         /* in the header's line: a small payload moves with the flag */
} shm_mbox_t;
#define MBOX_STRIDE round_up(sizeof(shm_mbox_t) + MBOX_BYTES, PAGE)

typedef struct shm_transport {
  tutti_transport_t base;
  char *seg;
  size_t seg_bytes;
  shm_header_t *hdr;
  shm_slot_t *slots;
  shm_ring_t *rings;
  char *data;
  size_t qbytes;
  int nlocal;
  int me;      /* local index of this rank */
  int *pidfd;  /* per local index; -1 where pidfd_open is refused */
  int *global; /* global rank of each local index */
  uint64_t probe_word; /* what the other ranks read to prove they can (CMA check) */
  char *mboxes;        /* MBOX_DEPTH per local rank, MBOX_STRIDE apart */
  uint32_t mseq;       /* one-shot calls started */
  uint32_t *mseen;     /* per local index: the last one-shot call whose header was checked */
  tutti_msg_hdr_t mhdr; /* this rank's header of its current (or last) one-shot call */
} shm_transport_t;

static inline size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

static inline size_t slots_offset(void) { return round_up(sizeof(shm_header_t), PAGE); }
static inline size_t rings_offset(int n) {
  return slots_offset() + round_up((size_t)n * sizeof(shm_slot_t), PAGE);
}
static inline size_t data_offset(int n) {
  return rings_offset(n) + round_up((size_t)n * (size_t)n * sizeof(shm_ring_t), PAGE);
}

static inline size_t mbox_offset(int n, size_t qbytes) {
  return data_offset(n) + (size_t)n * (size_t)n * qbytes;
}
static inline shm_mbox_t *mbox_of(const shm_transport_t *s, int li, uint32_t call) {
  return (shm_mbox_t *)(s->mboxes + ((size_t)li * MBOX_DEPTH + call % MBOX_DEPTH) * MBOX_STRIDE);
}

static inline size_t pair(const shm_transport_t *s, int from, int to) {
  return (size_t)from * (size_t)s->nlocal + (size_t)to;
}

/* shm.c, for mbox.c. */
struct timespec;
long tutti__shm_futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts);
/* The failure another local rank published, as this rank's error; success if none. */
tutti_result_t tutti__shm_check_failed(shm_transport_t *s);
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
