/*
 * Requests, the per-communicator progress thread, and groups. Every API call becomes a task;
 * a blocking call with nothing queued before it runs inline in the caller's thread (no
 * thread hand-off on the fast path); everything else goes through the communicator's queue,
 * which one progress thread runs in issue order.
 */
#ifndef TUTTI_ENGINE_H
#define TUTTI_ENGINE_H

#include "algo/algo.h"

/* One call as the user made it. */
typedef struct tutti_task {
  tutti_coll_args_t a;
  const char *api;   /* API function name, for messages */
  size_t *arrays;    /* owned copies of the v-variant arrays (requests only) */
} tutti_task_t;

/* Runs one task to completion in the calling thread (coll.c). */
tutti_result_t tutti__task_run(struct tutti_comm *comm, tutti_task_t *t);

/* Posts the transfer of a send or receive task into *x and sets its deadline (coll.c). */
tutti_result_t tutti__p2p_post(struct tutti_comm *comm, const tutti_task_t *t, tutti_xfer_t *x,
                               int64_t *deadline);

/* Runs t now (blocking, req NULL) or queues it and returns a request in *req. Inside a group,
 * only records it. The task's arrays are copied when it outlives the call. */
tutti_result_t tutti__engine_submit(struct tutti_comm *comm, const tutti_task_t *t,
                                    tutti_request_t *req);

/* Whether no request of comm is queued or running (finished, unfreed ones do not count). */
int tutti__engine_idle(struct tutti_comm *comm);

/* Stops the progress thread (aborting what it runs) and frees the engine. */
void tutti__engine_destroy(struct tutti_comm *comm);

/* Wakes the progress thread (abort, new work). */
void tutti__engine_kick(struct tutti_comm *comm);

static inline int tutti__task_is_p2p(const tutti_task_t *t) {
  return t->a.coll == TUTTI_COLL_SEND || t->a.coll == TUTTI_COLL_RECV;
}

#endif
