/* Result names and the communicator's first-error sentence. */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

const char *tutti_result_string(tutti_result_t result) {
  switch (result) {
  case TUTTI_SUCCESS: return "success";
  case TUTTI_ERR_INVALID_ARGUMENT: return "invalid argument";
  case TUTTI_ERR_INVALID_USAGE: return "invalid usage";
  case TUTTI_ERR_SYSTEM: return "system call failed";
  case TUTTI_ERR_REMOTE: return "remote peer failed";
  case TUTTI_ERR_TIMEOUT: return "timed out";
  case TUTTI_ERR_ABORTED: return "communicator aborted";
  case TUTTI_ERR_INTERNAL: return "internal error";
  case TUTTI_IN_PROGRESS: return "in progress";
  }
  return "unknown result code";
}

const char *tutti_comm_last_error(tutti_comm_t comm) {
  if (!comm) return "tutti_comm_last_error: the communicator is NULL";
  return comm->last_error;
}

/* The first failure is the cause and stays; what comes after is usually its echo, but an
 * argument error after it is news about that call, so it is kept too, after the cause, in
 * place of the previous such note. An argument (or soft usage) error before any failure
 * leaves the communicator usable, so the next error replaces it. */
/* The group this thread has open (engine.c): thread-local, as a group is the thread's. */
static _Thread_local struct {
  int open;
  tutti_result_t err; /* the first call of the group that failed its checks */
} group;

tutti_result_t tutti__group_errors(int open) {
  tutti_result_t err = group.err;
  group.open = open;
  group.err = TUTTI_SUCCESS;
  return err;
}

static tutti_result_t record(struct tutti_comm *comm, tutti_result_t res, int soft,
                             const char *fmt, va_list ap) {
  char reason[384];
  vsnprintf(reason, sizeof reason, fmt, ap);
  const char *op = comm->op_name ? comm->op_name : "tutti";
  WARN("coll", comm->rank, "%s: %s (%s)", op, reason, tutti_result_string(res));
  if (group.open && group.err == TUTTI_SUCCESS) group.err = res;
  char call[48] = "";
  uint32_t seq = comm->call_seq ? comm->call_seq : comm->agree_seq;
  if (seq) snprintf(call, sizeof call, " call #%u", seq);
  /* A spin lock: held for one snprintf, and only on the error path. */
  while (atomic_flag_test_and_set_explicit(&comm->error_lock, memory_order_acquire)) {
  }
  size_t keep = comm->error_first_len, cap = sizeof comm->last_error;
  if (keep && keep < cap - 1)
    snprintf(comm->last_error + keep, cap - keep, "; later: %s%s (rank %d of %d): %s", op, call,
             comm->rank, comm->nranks, reason);
  else if (!keep)
    snprintf(comm->last_error, cap, "%s%s (rank %d of %d): %s", op, call, comm->rank,
             comm->nranks, reason);
  if (!keep && !soft && res != TUTTI_ERR_INVALID_ARGUMENT)
    comm->error_first_len = strlen(comm->last_error);
  atomic_flag_clear_explicit(&comm->error_lock, memory_order_release);
  return res;
}

tutti_result_t tutti__error(struct tutti_comm *comm, tutti_result_t res, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record(comm, res, 0, fmt, ap);
  va_end(ap);
  return res;
}

tutti_result_t tutti__error_soft(struct tutti_comm *comm, tutti_result_t res, const char *fmt,
                                 ...) {
  va_list ap;
  va_start(ap, fmt);
  record(comm, res, 1, fmt, ap);
  va_end(ap);
  return res;
}

const char *tutti__peer_desc(const struct tutti_comm *comm, int peer, char *buf, size_t len) {
  const tutti_peer_t *p = &comm->peers[peer];
  snprintf(buf, len, "rank %d (pid %d on host %s)", peer, (int)p->pid, p->host);
  return buf;
}

/* Per thread, because a failed init has no communicator to hold its sentence, and two
 * threads may fail to init at once. */
static _Thread_local char init_error[512];

void tutti__init_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(init_error, sizeof init_error, fmt, ap);
  va_end(ap);
}

const char *tutti_last_init_error(void) { return init_error; }
