/*
 * The in-memory transport (mem.c): the ranks of a communicator are threads of one process.
 * tutti_comm_init_threads (tutti.h) is its public entry point; this header adds what tests
 * and tools/tutti-sim need: a configuration other than the environment's, and per-rank
 * counters of what crossed the transport, with Lamport-style clocks that measure the
 * critical path of a call and an alpha-beta time for it.
 */
#ifndef TUTTI_MEM_H
#define TUTTI_MEM_H

#include <stdint.h>

#include "transport/transport.h"

/* tutti_comm_init_threads with cfg instead of the environment's settings (NULL: the
 * environment's). cfg->shm_queue_bytes bounds the unread bytes of each directed queue. */
tutti_result_t tutti__comm_init_threads_cfg(tutti_comm_t *comms, int nranks,
                                            const tutti_config_t *cfg);

/* What one rank's transport saw since the last tutti__mem_stats_reset. A message is one
 * header framed by progress.c with its payload; abort frames are not messages. */
typedef struct tutti_mem_stats {
  uint64_t msgs_sent, bytes_sent; /* messages and payload bytes this rank sent */
  uint64_t msgs_rcvd, bytes_rcvd; /* ... and received (fully read) */
  int peers_sent, peers_rcvd;     /* distinct peers sent to / received from */
  int queues_out;                 /* queues this rank ever opened as sender (connections) */
  uint64_t steps;      /* longest chain of dependent messages that ended at this rank */
  uint64_t path_bytes; /* most payload bytes summed along one chain ending here */
  double model_s;      /* alpha-beta time at which this rank last received (see mem.c) */
} tutti_mem_stats_t;

/* 1 if comm's peers are thread ranks of this process. */
int tutti__mem_is(const struct tutti_comm *comm);
/* This rank's counters. Called by the rank's own thread, or by any thread once every rank
 * of the group is idle and that thread synchronised with them (a join or a barrier). */
void tutti__mem_stats(const struct tutti_comm *comm, tutti_mem_stats_t *out);
/* Zeroes the counters and clocks (queues_out stays). Same rule as tutti__mem_stats; every
 * rank of the group must reset between the same two calls, with no message in flight. */
void tutti__mem_stats_reset(struct tutti_comm *comm);
/* The latency (seconds per message) and inverse bandwidth (seconds per byte) of the
 * alpha-beta clock. Each rank's link sends one message at a time and receives one at a
 * time. Default: 1 us and 10 GB/s. Same rule as tutti__mem_stats_reset. */
void tutti__mem_set_model(struct tutti_comm *comm, double alpha, double beta);

#endif
