/* Dissemination barrier: ceil(log2 n) rounds of header-only messages; in round k each rank
 * signals rank + 2^k and hears from rank - 2^k, so after the last round every rank has
 * (transitively) heard from all. */
#include "algo/algo.h"
#include "algo/patterns.h"

tutti_result_t tutti__dissemination_barrier(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, r = comm->rank;
  for (int d = 1; d < n; d <<= 1) {
    tutti_xfer_t so, ro;
    TRY(tutti__irecv(comm, &ro, tutti__mod(r - d, n), NULL, 0));
    TRY(tutti__isend(comm, &so, tutti__mod(r + d, n), NULL, 0));
    TRY(tutti__wait(comm, &ro, a->deadline));
    TRY(tutti__wait(comm, &so, a->deadline));
  }
  return TUTTI_SUCCESS;
}
