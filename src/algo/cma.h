/*
 * Shared pieces of the single-copy (CMA) algorithms: cma.c (all-reduce, reduce-scatter) and
 * cma_copy.c (all-gather, broadcast). Only buffer addresses and completion tokens travel
 * through the transport; the data moves with process_vm_readv / process_vm_writev.
 */
#ifndef TUTTI_ALGO_CMA_H
#define TUTTI_ALGO_CMA_H

#include "algo/algo.h"
#include "core/memreg.h"

/* Where a rank's buffers are, and the registered regions they lie in, sent to its peers at
 * the start of a call. */
typedef struct {
  tutti_regbuf_t send;
  tutti_regbuf_t recv;
} cma_desc_t;

/* Reads len bytes at addr in peer's memory into dst. */
tutti_result_t tutti__cma_read(struct tutti_comm *comm, int peer, void *dst, uint64_t addr,
                               size_t len);
/* Writes len bytes of src to addr in peer's memory. */
tutti_result_t tutti__cma_write(struct tutti_comm *comm, int peer, uint64_t addr,
                                const void *src, size_t len);
/* Copies len bytes at addr of peer's buffer b into dst: with memcpy (streaming stores when nt)
 * when b is a registered region this rank can map, else with process_vm_readv. */
tutti_result_t tutti__cma_fetch(struct tutti_comm *comm, int peer, void *dst,
                                const tutti_regbuf_t *b, uint64_t addr, size_t len, int nt);
/* The same towards the peer: src to addr of peer's buffer b. */
tutti_result_t tutti__cma_put(struct tutti_comm *comm, int peer, const tutti_regbuf_t *b,
                              uint64_t addr, const void *src, size_t len, int nt);
/* 1 when an output of bytes (what this rank writes in the call) is larger than the measured
 * last-level cache (comm's model), so streaming stores save a read of it; else 0. */
int tutti__cma_nt(const struct tutti_comm *comm, size_t bytes);
/* Called by the exchanges below for each peer as soon as its message is here, so that a
 * rank works on what has arrived while it waits for the rest: where ranks outnumber cores
 * they arrive a scheduler turn apart, and waiting for all first makes every rank wait for
 * the last before any copies. It runs for this rank too, first, once its own message is
 * posted (its own share of the work, done while the messages travel). NULL: nothing to do
 * per peer. */
typedef tutti_result_t (*cma_arrival_fn)(struct tutti_comm *comm, int peer, void *ctx);
/* Sends one small message to every other rank and receives one from each into theirs (len
 * bytes a rank, at rank * len): descriptors, or tokens that say "my part is done"; on(peer)
 * runs once each has arrived. */
tutti_result_t tutti__cma_all_exchange(struct tutti_comm *comm, const void *mine, void *theirs,
                                       size_t len, int64_t deadline, cma_arrival_fn on,
                                       void *ctx);
/* The same exchange in parts, for a rank that needs the peers' messages in a fixed order
 * (the reductions fold in rank order): post it, await each peer's message where it is needed,
 * then end it (waits for what is left: every message in and out). mine must stay valid until
 * the end. */
tutti_result_t tutti__cma_exchange_post(struct tutti_comm *comm, const void *mine, void *theirs,
                                        size_t len);
tutti_result_t tutti__cma_await(struct tutti_comm *comm, int peer, int64_t deadline);
tutti_result_t tutti__cma_exchange_end(struct tutti_comm *comm, int64_t deadline);
/* Every rank's send and receive buffer addresses of call a, in comm->cma_descs (*descs);
 * on(peer) runs once peer's are here. */
tutti_result_t tutti__cma_exchange_descs(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                         cma_desc_t **descs, cma_arrival_fn on, void *ctx);
/* Posts the exchange of those addresses (tutti__cma_await each, then tutti__cma_exchange_end). */
tutti_result_t tutti__cma_post_descs(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                     cma_desc_t **descs);
/* Returns once every rank has called it: no peer reads or writes this rank's buffers after.
 * on(peer) runs once peer has called it. */
tutti_result_t tutti__cma_barrier_tokens(struct tutti_comm *comm, int64_t deadline,
                                         cma_arrival_fn on, void *ctx);

#endif
