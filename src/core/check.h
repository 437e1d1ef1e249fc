/* Argument checks shared by the entry points (coll.c, coll_v.c). Each records a sentence
 * through tutti__error and returns TUTTI_ERR_INVALID_ARGUMENT, leaving comm usable. */
#ifndef TUTTI_CHECK_H
#define TUTTI_CHECK_H

#include "algo/algo.h"

tutti_result_t tutti__check_dtype_op(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                     int reduces);
tutti_result_t tutti__check_rank(struct tutti_comm *comm, const char *what, int r);
tutti_result_t tutti__check_size(struct tutti_comm *comm, size_t count, size_t mult);
tutti_result_t tutti__need_buf(struct tutti_comm *comm, const void *buf, const char *name,
                               size_t count);
/* Sums nranks counts into *total, checking counts and displs (may be NULL) for overflow. */
tutti_result_t tutti__check_array(struct tutti_comm *comm, const size_t *counts,
                                  const size_t *displs, const char *name, size_t *total);
/* sbytes at sendbuf and rbytes at recvbuf must not overlap, except that sendbuf may be exactly
 * in_place (the call's in-place layout; NULL if it has none). */
tutti_result_t tutti__check_overlap(struct tutti_comm *comm, const void *sendbuf, size_t sbytes,
                                    const void *recvbuf, size_t rbytes, const void *in_place);
/* The nranks blocks (counts[i] elements at displs[i]) a call writes must not overlap. */
tutti_result_t tutti__check_blocks(struct tutti_comm *comm, const size_t *counts,
                                   const size_t *displs, const char *name);
/* The elements a buffer described by counts and displs spans: max(displs[i] + counts[i]). */
size_t tutti__extent(const struct tutti_comm *comm, const size_t *counts, const size_t *displs);
/* Hands a checked call to the engine (blocking when req is NULL). */
tutti_result_t tutti__submit(struct tutti_comm *comm, const char *api, const tutti_coll_args_t *a,
                             tutti_request_t *req);

/* Common prologue: a NULL communicator has nowhere to keep a message, so it is logged. */
#define TUTTI_ENTER(comm, name)                                                             \
  do {                                                                                      \
    if (!(comm)) {                                                                          \
      WARN("coll", -1, "%s: the communicator is NULL", name);                               \
      return TUTTI_ERR_INVALID_ARGUMENT;                                                    \
    }                                                                                       \
    TUTTI_SET_OP((comm), name);                                                             \
  } while (0)

#define TUTTI_ARGS(kind, ...) ((tutti_coll_args_t){.coll = (kind), __VA_ARGS__})

#endif
