/* Premul-sum operations (ncclRedOpCreatePreMulSum): each rank scales its own input by the
 * scalar and the collective sums the scaled inputs. */
#include <stdlib.h>
#include <string.h>

#include "core/userop.h"
#include "kernels/kernels.h"

static tutti_userop_t *find(struct tutti_comm *comm, tutti_op_t op) {
  int i = (int)op - TUTTI_NUM_OPS;
  if (i < 0 || i >= comm->nuserops || !comm->userops[i].used) return NULL;
  return &comm->userops[i];
}

tutti_result_t tutti_op_create_premul_sum(tutti_op_t *op, const void *scalar, tutti_dtype_t dtype,
                                          tutti_comm_t comm) {
  if (!comm) return TUTTI_ERR_INVALID_ARGUMENT;
  TUTTI_SET_OP(comm, "tutti_op_create_premul_sum");
  if (!op || !scalar)
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "%s is NULL", op ? "scalar" : "op");
  if (!tutti__dtype_valid((int)dtype))
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "dtype %d is not a tutti_dtype_t",
                        (int)dtype);
  int slot = 0;
  while (slot < comm->nuserops && comm->userops[slot].used) slot++;
  if (slot == comm->nuserops) {
    tutti_userop_t *grown = realloc(comm->userops, (size_t)(slot + 8) * sizeof *grown);
    if (!grown) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory");
    memset(grown + slot, 0, 8 * sizeof *grown);
    comm->userops = grown;
    comm->nuserops = slot + 8;
  }
  tutti_userop_t *u = &comm->userops[slot];
  u->used = 1;
  u->dtype = dtype;
  memcpy(u->scalar, scalar, tutti__dtype_size(dtype));
  *op = (tutti_op_t)(TUTTI_NUM_OPS + slot);
  return TUTTI_SUCCESS;
}

tutti_result_t tutti_op_destroy(tutti_op_t op, tutti_comm_t comm) {
  if (!comm) return TUTTI_ERR_INVALID_ARGUMENT;
  TUTTI_SET_OP(comm, "tutti_op_destroy");
  tutti_userop_t *u = find(comm, op);
  if (!u)
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "op %d was not created on this "
                        "communicator, or was destroyed", (int)op);
  u->used = 0;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__userop_check(struct tutti_comm *comm, tutti_op_t op, tutti_dtype_t dtype) {
  tutti_userop_t *u = find(comm, op);
  if (!u)
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "op %d is neither a built-in "
                        "operation nor one created on this communicator", (int)op);
  if (u->dtype != dtype)
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "op %d was created for %s, not %s",
                        (int)op, tutti__dtype_name((int)u->dtype), tutti__dtype_name((int)dtype));
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__userop_prepare(struct tutti_comm *comm, tutti_coll_args_t *a, size_t elems,
                                     void **scaled) {
  tutti_userop_t *u = find(comm, a->op);
  if (!u) /* destroyed between the call and its run */
    return tutti__error_soft(comm, TUTTI_ERR_INVALID_USAGE, "op %d was destroyed", (int)a->op);
  *scaled = NULL;
  a->op = TUTTI_SUM;
  if (!elems || !a->sendbuf) return TUTTI_SUCCESS;
  size_t bytes = elems * tutti__dtype_size(a->dtype);
  *scaled = malloc(bytes);
  if (!*scaled) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory for premul-sum");
  tutti__premul(*scaled, a->sendbuf, elems, a->dtype, u->scalar);
  a->sendbuf = *scaled;
  return TUTTI_SUCCESS;
}
