/*
 * The in-memory transport's private state, shared by its files:
 *   mem.c       the queues and the transport's operations (send, recv, view, block, fail,
 *               destroy); its file comment describes the design
 *   mem_comm.c  the communicators of a group of thread ranks (tutti_comm_init_threads) and
 *               the counters tests and tools/tutti-sim read (mem.h)
 */
#ifndef TUTTI_MEM_INT_H
#define TUTTI_MEM_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "transport/mem.h"

#define HDR_BYTES sizeof(tutti_msg_hdr_t)
/* The least a queue may hold: one header and some payload. */
#define MEM_MIN_QUEUE 4096

typedef struct mem_stamp {
  uint64_t steps, bytes;
  double arrive; /* alpha-beta time at which the message is at the receiver */
  uint64_t len;  /* payload bytes */
} mem_stamp_t;

typedef struct mem_chunk {
  struct mem_chunk *next;
  size_t len, off;
  mem_stamp_t stamp;
  int ends_msg; /* the last bytes of a message: reading them delivers it */
  int is_msg;   /* a message, not an abort frame */
  char data[];
} mem_chunk_t;

typedef struct mem_queue {
  pthread_mutex_t mu;
  mem_chunk_t *head, *tail; /* under mu */
  int sender_waits;         /* under mu: the sender found no room and may sleep */
  atomic_size_t bytes;      /* unread; changed under mu, read anywhere */
  /* The sender's alone: the framing parser and the current message's stamp. */
  uint64_t msg_left;
  int in_msg, cur_is_msg;
  mem_stamp_t cur;
  uint32_t tx_epoch;
  uint32_t rx_epoch; /* the receiver's alone */
} mem_queue_t;

/* What other threads see of a rank. Cache-line aligned: bells are hot. */
typedef struct mem_ep {
  _Atomic uint32_t bell;
  atomic_int sleepers;
  atomic_int left;     /* its communicator was destroyed */
  pthread_mutex_t mu;  /* guards code and reason */
  int code;            /* the result it failed with (ABORTED: tutti_comm_abort) */
  char reason[256];
} __attribute__((aligned(64))) mem_ep_t;

typedef struct mem_group {
  atomic_int refs;
  int n;
  size_t cap;
  atomic_int failed;        /* 1 + the first rank that failed, or 0 */
  mem_ep_t *ep;             /* n */
  mem_queue_t *_Atomic *q;  /* n * n, [to * n + from], made by the sender */
} mem_group_t;

typedef struct mem_transport {
  tutti_transport_t base;
  mem_group_t *g;
  int me;
  double alpha, beta;
  /* Clocks and counters: the thread driving this communicator only. */
  uint64_t steps, path_bytes;
  double now, tx_free, rx_free;
  uint32_t epoch;
  tutti_mem_stats_t st;
} mem_transport_t;

extern const tutti_transport_ops_t tutti__mem_ops;
/* A group of n thread ranks whose queues hold at most cap unread bytes each (NULL: out of
 * memory), with one reference; each communicator takes one more. */
mem_group_t *tutti__mem_group_new(int n, size_t cap);
/* Drops a reference; the last frees the group. */
void tutti__mem_group_unref(mem_group_t *g);

#endif
