/* Operations created at run time on a communicator (premul-sum). */
#ifndef TUTTI_USEROP_H
#define TUTTI_USEROP_H

#include "algo/algo.h"

typedef struct tutti_userop {
  int used;
  tutti_dtype_t dtype;
  unsigned char scalar[16]; /* one element of dtype */
} tutti_userop_t;

/* TUTTI_SUCCESS if op is a live operation of comm made for dtype. */
tutti_result_t tutti__userop_check(struct tutti_comm *comm, tutti_op_t op, tutti_dtype_t dtype);

/* Rewrites a (a premul-sum) into a SUM over a scaled copy of its send buffer of elems
 * elements; *scaled is that copy, for the caller to free after the call. */
tutti_result_t tutti__userop_prepare(struct tutti_comm *comm, tutti_coll_args_t *a, size_t elems,
                                     void **scaled);

#endif
