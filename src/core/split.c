/*
 * tutti_comm_split and tutti_comm_dup, built only from public calls on the parent: an
 * all-gather of every rank's (color, key), then an all-gather of the unique ids that one
 * leader per color creates, then tutti_comm_init_rank in each group. The new communicators
 * get their own rendezvous and transports, so they share nothing with the parent and may run
 * at the same time as it and as each other.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm_create.h"
#include "core/internal.h"

/* One member of this rank's color, as it is ordered in the new communicator. */
typedef struct split_member {
  int32_t key;
  int32_t rank; /* in the parent */
} split_member_t;

static int member_cmp(const void *a, const void *b) {
  const split_member_t *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Records why op failed on the parent (under op's name, since the collectives it called
 * renamed the operation in progress) and returns res. A failed parent keeps its first text:
 * that is the cause, and this sentence would only echo it. */
static tutti_result_t split_fail(struct tutti_comm *comm, const char *op, tutti_result_t res,
                                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static tutti_result_t split_fail(struct tutti_comm *comm, const char *op, tutti_result_t res,
                                 const char *fmt, ...) {
  char reason[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  TUTTI_SET_OP(comm, op);
  return tutti__error(comm, res, "%s", reason);
}

/* Every rank sees every rank's color, so every rank reaches the same verdict: a color below
 * TUTTI_SPLIT_NOCOLOR anywhere fails the call everywhere, instead of leaving the other ranks
 * waiting for a rank that gave up on its own. Returns the first offender, or -1. */
static int find_bad_color(const int32_t *pairs, int nranks) {
  for (int r = 0; r < nranks; r++)
    if (pairs[2 * r] < 0 && pairs[2 * r] != TUTTI_SPLIT_NOCOLOR) return r;
  return -1;
}

/* This rank's group, ordered by (key, parent rank): fills members, returns its size, and sets
 * *newrank to this rank's place in it. */
static int order_group(const int32_t *pairs, int nranks, int me, split_member_t *members,
                       int *newrank) {
  int n = 0;
  for (int r = 0; r < nranks; r++)
    if (pairs[2 * r] == pairs[2 * me]) members[n++] = (split_member_t){pairs[2 * r + 1], r};
  qsort(members, (size_t)n, sizeof *members, member_cmp);
  for (int i = 0; i < n; i++)
    if (members[i].rank == me) *newrank = i;
  return n;
}

static int id_is_blank(const tutti_unique_id_t *id) {
  for (size_t i = 0; i < sizeof id->internal; i++)
    if (id->internal[i]) return 0;
  return 1;
}

/* The body of both calls, op naming the API call for messages. Collective over comm: every
 * rank takes part in both all-gathers whatever happened locally in between, so a failure on
 * one rank reaches the others as a result rather than as a hang. */
static tutti_result_t split(struct tutti_comm *comm, int color, int key, tutti_comm_t *newcomm,
                            const char *op) {
  const int nranks = comm->nranks, me = comm->rank;
  tutti_result_t res;
  const char *step = "exchanging colors and keys"; /* for the message if a collective fails */
  int32_t *pairs = malloc((size_t)nranks * 2 * sizeof *pairs);
  split_member_t *members = malloc((size_t)nranks * sizeof *members);
  tutti_unique_id_t *ids = calloc((size_t)nranks, sizeof *ids);
  if (!pairs || !members || !ids) {
    res = split_fail(comm, op, TUTTI_ERR_SYSTEM, "out of memory for %d ranks", nranks);
    goto out;
  }

  int32_t mine[2] = {(int32_t)color, (int32_t)key};
  TRY_GOTO(tutti_allgather(mine, pairs, 2, TUTTI_INT32, comm), res, coll_failed);
  int bad = find_bad_color(pairs, nranks);
  if (bad == me) {
    res = split_fail(comm, op, TUTTI_ERR_INVALID_ARGUMENT, "color %d is neither "
                     "TUTTI_SPLIT_NOCOLOR nor >= 0", color);
    goto out;
  }
  if (bad >= 0) {
    res = split_fail(comm, op, TUTTI_ERR_INVALID_USAGE, "rank %d passed color %d, which is "
                     "neither TUTTI_SPLIT_NOCOLOR nor >= 0", bad, (int)pairs[2 * bad]);
    goto out;
  }

  int newrank = 0, newsize = 0;
  if (color != TUTTI_SPLIT_NOCOLOR) newsize = order_group(pairs, nranks, me, members, &newrank);
  /* The leader's failure to make an id is not returned yet: it still has to take part in the
   * id exchange below, where its blank slot tells its group members. */
  tutti_result_t id_res = TUTTI_SUCCESS;
  /* The new rendezvous listens where the peers already reach this rank, not on loopback. */
  if (newsize > 0 && newrank == 0) id_res = tutti__unique_id_at(&comm->peers[me].ip, &ids[me]);
  if (id_res != TUTTI_SUCCESS) memset(&ids[me], 0, sizeof ids[me]);
  step = "exchanging unique ids";
  TRY_GOTO(tutti_allgather(&ids[me], ids, sizeof ids[me], TUTTI_UINT8, comm), res,
           coll_failed);
  if (id_res != TUTTI_SUCCESS) {
    res = split_fail(comm, op, id_res, "cannot create the unique id of the new communicator "
                     "of color %d (%s)", color, tutti_result_string(id_res));
    goto out;
  }
  if (newsize == 0) { /* TUTTI_SPLIT_NOCOLOR: took part, joins nothing */
    res = TUTTI_SUCCESS;
    goto out;
  }
  const int leader = members[0].rank;
  if (id_is_blank(&ids[leader])) {
    res = split_fail(comm, op, TUTTI_ERR_REMOTE, "rank %d, leader of color %d, could not "
                     "create the new communicator's unique id", leader, color);
    goto out;
  }
  /* The new communicator's own error text dies with it when init fails, and the reason has
   * been logged at warn level; the parent keeps a sentence that says which step failed. */
  res = tutti_comm_init_rank(newcomm, newsize, &ids[leader], newrank);
  if (res != TUTTI_SUCCESS)
    split_fail(comm, op, res, "joining the new communicator (color %d, rank %d of %d, leader "
               "rank %d) failed: %s", color, newrank, newsize, leader, tutti_result_string(res));
  goto out;

coll_failed:
  /* The all-gather has recorded its own reason; this adds one only if it could not. */
  split_fail(comm, op, res, "%s over the parent failed (%s)", step, tutti_result_string(res));
out:
  free(ids);
  free(members);
  free(pairs);
  return res;
}

tutti_result_t tutti_comm_split(tutti_comm_t comm, int color, int key, tutti_comm_t *newcomm) {
  const char *op = "tutti_comm_split";
  if (!comm) {
    WARN("coll", -1, "%s: the communicator is NULL", op);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  if (!newcomm) return split_fail(comm, op, TUTTI_ERR_INVALID_ARGUMENT, "newcomm is NULL");
  *newcomm = NULL;
  /* A bad color is not refused here: this rank would leave the others waiting in the exchange.
   * It is refused after it, on every rank (see find_bad_color). */
  return split(comm, color, key, newcomm, op);
}

tutti_result_t tutti_comm_dup(tutti_comm_t comm, tutti_comm_t *newcomm) {
  const char *op = "tutti_comm_dup";
  if (!comm) {
    WARN("coll", -1, "%s: the communicator is NULL", op);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  if (!newcomm) return split_fail(comm, op, TUTTI_ERR_INVALID_ARGUMENT, "newcomm is NULL");
  *newcomm = NULL;
  return split(comm, 0, comm->rank, newcomm, op);
}
