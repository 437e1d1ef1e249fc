/*
 * Hierarchical reduce: as the hierarchical all-reduce (hier_allreduce.c) up to the
 * cross-host reduce-scatter of each slice, then each index group's members send their
 * reduced piece to the member on the root's host, and the root's host's ranks send their
 * slices to the root. A host link carries about 2(H-1)/H of the vector, against the whole
 * vector on the flat chain; the root receives each byte once.
 */
#include "algo/hier.h"
#include "algo/patterns.h"
#include "kernels/kernels.h"

/* Within an index group after its reduce-scatter of slice (len elements at slice): members
 * send their piece to the member on the root's host, which receives them all at once. */
static tutti_result_t gather_pieces(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                    const tutti_group_t *g, int root_host, char *slice,
                                    size_t len, tutti_xfer_t *ops) {
  size_t es = a->esize, off, n;
  if (g->pos != root_host) {
    tutti__block_range(len, g->n, g->pos, &off, &n);
    if (!n) return TUTTI_SUCCESS;
    TRY(tutti__isend(comm, &ops[0], g->ranks[root_host], slice + off * es, n * es));
    return tutti__wait(comm, &ops[0], a->deadline);
  }
  for (int p = 0; p < g->n; p++) {
    tutti__block_range(len, g->n, p, &off, &n);
    if (p != g->pos && n) TRY(tutti__irecv(comm, &ops[p], g->ranks[p], slice + off * es, n * es));
  }
  for (int p = 0; p < g->n; p++) {
    tutti__block_range(len, g->n, p, &off, &n);
    if (p != g->pos && n) TRY(tutti__wait(comm, &ops[p], a->deadline));
  }
  return TUTTI_SUCCESS;
}

/* On the root's host: every local rank sends the slices it covers to the root. */
static tutti_result_t gather_slices(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                    tutti_hier_t *h, char *w, tutti_xfer_t *ops) {
  size_t es = a->esize, off, len;
  int root_local = h->t->local_of[a->root], nops = 0, is_root = h->local == root_local;
  for (int i = 0; i < h->nlocal; i++) {
    /* The root's own slices are already in place; a sender sends only its own. */
    if (i == root_local || (!is_root && i != h->local)) continue;
    for (int j = i; j < h->max_local; j += h->nlocal) {
      tutti__block_range(a->count, h->max_local, j, &off, &len);
      if (!len) continue;
      if (is_root)
        TRY(tutti__irecv(comm, &ops[nops++], tutti__topo_rank(h->t, h->host, i), w + off * es,
                         len * es));
      else
        TRY(tutti__isend(comm, &ops[nops++], a->root, w + off * es, len * es));
    }
  }
  for (int i = 0; i < nops; i++) TRY(tutti__wait(comm, &ops[i], a->deadline));
  return TUTTI_SUCCESS;
}

/* What gather_pieces needs besides the slice (tutti__hier_reduce_slices' ctx). */
typedef struct {
  int root_host;
  tutti_xfer_t *ops;
} pieces_t;

static tutti_result_t slice_to_root_host(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                         const tutti_group_t *g, char *slice, size_t len,
                                         void *ctx) {
  const pieces_t *p = ctx;
  return gather_pieces(comm, a, g, p->root_host, slice, len, p->ops);
}

static tutti_result_t run(struct tutti_comm *comm, const tutti_coll_args_t *a, tutti_hier_t *h,
                          char *w, char *tmp, tutti_xfer_t *ops) {
  pieces_t p = {h->t->host_of[a->root], ops};
  TRY(tutti__hier_reduce_slices(comm, a, h, w, tmp, slice_to_root_host, &p));
  if (h->host != p.root_host) return TUTTI_SUCCESS;
  return gather_slices(comm, a, h, w, ops);
}

tutti_result_t tutti__hier_reduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  size_t tmp_bytes = tutti__chunk_elems(comm, a->esize) * a->esize;
  size_t w_bytes = comm->rank == a->root ? 0 : a->count * a->esize;
  char *scratch;
  TRY(tutti__scratch(comm, tmp_bytes + w_bytes, (void **)&scratch));
  tutti_hier_t h;
  TRY(tutti__hier_begin(comm, &h));
  char *w = comm->rank == a->root ? (char *)a->recvbuf : scratch + tmp_bytes;
  return run(comm, a, &h, w, scratch, h.xfers);
}
