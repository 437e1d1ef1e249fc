/*
 * The collective kinds and their properties: one table (colls.c) that the API checks, the
 * task runner, the wait loop's messages, forensics and the tuner all read, so none of them
 * needs the algorithms (algo/) to know what a call is.
 */
#ifndef TUTTI_COLLS_H
#define TUTTI_COLLS_H

#include <stddef.h>

typedef enum {
  TUTTI_COLL_ALLGATHER,
  TUTTI_COLL_ALLREDUCE,
  TUTTI_COLL_REDUCE_SCATTER,
  TUTTI_COLL_BROADCAST,
  TUTTI_COLL_REDUCE,
  TUTTI_COLL_BARRIER,
  TUTTI_COLL_ALLGATHERV,
  TUTTI_COLL_REDUCE_SCATTERV,
  TUTTI_COLL_GATHERV,
  TUTTI_COLL_SCATTERV,
  TUTTI_COLL_ALLTOALLV,
  TUTTI_COLL_SEND,
  TUTTI_COLL_RECV,
  TUTTI_COLL_COUNT
} tutti_coll_t;
_Static_assert(TUTTI_COLL_COUNT <= 16, "comm->pick_cache has a slot per collective");

typedef struct tutti_coll_info {
  const char *name;  /* as TUTTI_TUNE, tuning files and messages spell it */
  const char *label; /* for a message header's call: "send/recv" for point-to-point */
  unsigned char rooted;   /* one rank is the root (broadcast, reduce, gather, scatter) */
  unsigned char reduces;  /* combines values with an op (the op is part of the call) */
  unsigned char variable; /* per-rank counts (the v-kinds): the count is not compared */
  unsigned char p2p;      /* a point-to-point send or receive, not a collective */
  /* The byte rule: the call's size for the tuner is count * esize, times nranks where
   * times_n (the count is per rank of a result that spans every rank). */
  unsigned char times_n;
} tutti_coll_info_t;

/* Indexed by tutti_coll_t. */
extern const tutti_coll_info_t tutti__colls[TUTTI_COLL_COUNT];

/* The row of coll; a row named "?" for a number that is no kind (from the wire). */
const tutti_coll_info_t *tutti__coll_info(int coll);
/* tutti__coll_info(coll)->name. */
const char *tutti__coll_name(tutti_coll_t coll);
/* The bytes a call moves by the byte rule, as the tuner and tuning files count them. */
size_t tutti__coll_bytes(tutti_coll_t coll, size_t count, size_t esize, int nranks);

#endif
