/*
 * The standard fold that lets recursive doubling and halving run on any n: with p the
 * largest power of two not above n and rem = n - p, each even rank below 2*rem hands its data
 * to the odd rank above it before the exchanges and gets the result back after them, so p
 * ranks take part (tutti__fold_vrank numbers them). Costs two extra messages on those pairs.
 */
#include "algo/algo.h"
#include "algo/patterns.h"
#include "core/topo.h"
#include "kernels/kernels.h"

/* This rank's place in the order ord (ranks host by host), or its rank without one; and the
 * rank at a place. */
static int place_of(const struct tutti_comm *comm, const tutti_topo_t *ord) {
  return ord ? ord->pos_of[comm->rank] : comm->rank;
}
static int rank_at(const tutti_topo_t *ord, int place) { return ord ? ord->ranks[place] : place; }

tutti_result_t tutti__fold_in_order(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                    char *w, const char *own, size_t count, char *tmp, int rem,
                                    const tutti_topo_t *ord) {
  int r = place_of(comm, ord);
  if (r >= 2 * rem) return TUTTI_SUCCESS;
  size_t bytes = count * a->esize;
  if (r % 2 == 0) {
    /* Waited for before anything can be received into the same memory (in place). */
    tutti_xfer_t x;
    TRY(tutti__isend(comm, &x, rank_at(ord, r + 1), w, bytes));
    return tutti__wait(comm, &x, a->deadline);
  }
  int from = rank_at(ord, r - 1);
  if (!count) return tutti__recv(comm, from, tmp, 0, a->deadline); /* its empty message */
  return tutti__sendrecv_reduce(comm, a, -1, NULL, 0, from, w, own, 0, tmp, count);
}

tutti_result_t tutti__fold_out_order(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                     char *buf, size_t len, int rem, const tutti_topo_t *ord) {
  int r = place_of(comm, ord);
  if (r >= 2 * rem) return TUTTI_SUCCESS;
  if (r % 2 == 0) return tutti__recv(comm, rank_at(ord, r + 1), buf, len, a->deadline);
  tutti_xfer_t x;
  TRY(tutti__isend(comm, &x, rank_at(ord, r - 1), buf, len));
  return tutti__wait(comm, &x, a->deadline);
}

tutti_result_t tutti__fold_in(struct tutti_comm *comm, const tutti_coll_args_t *a, char *w,
                              const char *own, size_t count, char *tmp, int rem) {
  return tutti__fold_in_order(comm, a, w, own, count, tmp, rem, NULL);
}

tutti_result_t tutti__fold_out(struct tutti_comm *comm, const tutti_coll_args_t *a, char *buf,
                               size_t len, int rem) {
  return tutti__fold_out_order(comm, a, buf, len, rem, NULL);
}
