/*
 * Shared pieces of the single-copy (CMA) algorithms: cma.c (all-reduce, reduce-scatter) and
 * cma_copy.c (all-gather, broadcast). Only buffer addresses and completion tokens travel
 * through the transport; the data moves with process_vm_readv / process_vm_writev.
 */
#ifndef TUTTI_ALGO_CMA_H
#define TUTTI_ALGO_CMA_H

#include "algo/algo.h"

/* Where a rank's buffers are, sent to its peers at the start of a call. */
typedef struct {
  uint64_t send;
  uint64_t recv;
} cma_desc_t;

/* Reads len bytes at addr in peer's memory into dst. */
tutti_result_t tutti__cma_read(struct tutti_comm *comm, int peer, void *dst, uint64_t addr,
                               size_t len);
/* Writes len bytes of src to addr in peer's memory. */
tutti_result_t tutti__cma_write(struct tutti_comm *comm, int peer, uint64_t addr,
                                const void *src, size_t len);
/* Sends one small message to every other rank and receives one from each into theirs (len
 * bytes a rank, at rank * len): descriptors, or tokens that say "my part is done". */
tutti_result_t tutti__cma_all_exchange(struct tutti_comm *comm, const void *mine, void *theirs,
                                       size_t len, int64_t deadline);
/* Every rank's send and receive buffer addresses of call a, in comm->cma_descs. */
tutti_result_t tutti__cma_exchange_descs(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                         cma_desc_t **descs);
/* Returns once every rank has called it: no peer reads or writes this rank's buffers after. */
tutti_result_t tutti__cma_barrier_tokens(struct tutti_comm *comm, int64_t deadline);

#endif
