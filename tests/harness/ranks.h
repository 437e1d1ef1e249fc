/* Ranks as forked children of a unit test, joined with a unique id. */
#ifndef TUTTI_HARNESS_RANKS_H
#define TUTTI_HARNESS_RANKS_H

#include "tutti.h"

/* The body of rank r: joins with id (tutti_comm_init_rank) and leaves with _exit. */
typedef void (*harness_rank_fn)(const tutti_unique_id_t *id, int r, void *arg);

/* Forks n ranks, then calls tutti_get_unique_id and hands each rank the id through a pipe:
 * no rank is forked beside the rendezvous thread that call starts (a child forked while
 * another thread holds a lock, a sanitizer allocator's say, could block on it forever).
 * Fails the test unless every rank exits with status 0; a failed tutti_get_unique_id hands
 * the ranks a zero id (their init fails) and fails the test. */
void harness_run_ranks(int n, harness_rank_fn fn, void *arg);

#endif
