/* Groups and layouts of the hierarchical algorithms (hier.h). */
#include "algo/hier.h"

#include <stdlib.h>

#include "algo/patterns.h"
#include "kernels/kernels.h"

/* Bytes of the working memory: segments, then transfers, then ints (the larger alignment
 * first, so every part is aligned). */
static size_t work_bytes(const tutti_topo_t *t, int nranks, size_t *nseg, size_t *nxfer) {
  *nseg = (size_t)nranks + (size_t)t->max_local;
  *nxfer = (size_t)(t->nhosts > t->max_local ? t->nhosts : t->max_local);
  size_t ints = (size_t)t->nhosts + *nseg + 1 + (size_t)t->max_local + 1;
  return sizeof(tutti_seg_t) * *nseg + sizeof(tutti_xfer_t) * *nxfer + sizeof(int) * ints;
}

tutti_result_t tutti__hier_begin(struct tutti_comm *comm, tutti_hier_t *h) {
  memset(h, 0, sizeof *h);
  tutti_topo_t *t = tutti__topo(comm);
  if (!t) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory for the topology");
  size_t nseg, nxfer, bytes = work_bytes(t, comm->nranks, &nseg, &nxfer);
  if (!t->work && !(t->work = malloc(bytes)))
    return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory for a hierarchical %s (%zu "
                        "bytes)", comm->op_name ? comm->op_name : "collective", bytes);
  h->t = t;
  h->nhosts = t->nhosts;
  h->max_local = t->max_local;
  h->host = t->host_of[comm->rank];
  h->local = t->local_of[comm->rank];
  h->nlocal = tutti__topo_nlocal(t, h->host);
  h->local_group = (tutti_group_t){t->ranks + t->host_first[h->host], h->nlocal, h->local};
  h->segs = t->work;
  h->xfers = (tutti_xfer_t *)(h->segs + nseg);
  h->index_ranks = (int *)(h->xfers + nxfer);
  h->seg_first = h->index_ranks + t->nhosts;
  h->children = h->seg_first + nseg + 1;
  return TUTTI_SUCCESS;
}

void tutti__hier_index_group(tutti_hier_t *h, int j, tutti_group_t *g) {
  for (int host = 0; host < h->nhosts; host++)
    h->index_ranks[host] = tutti__hier_cover(h, host, j);
  *g = (tutti_group_t){h->index_ranks, h->nhosts, h->host};
}

static void segmented(tutti_hier_t *h, int n, tutti_ring_layout_t *l) {
  *l = (tutti_ring_layout_t){0};
  l->n = n;
  l->segs = h->segs;
  l->seg_first = h->seg_first;
}

void tutti__hier_local_slices(tutti_hier_t *h, size_t count, tutti_ring_layout_t *l) {
  int k = h->nlocal, s = 0;
  segmented(h, k, l);
  for (int i = 0; i < k; i++) {
    h->seg_first[i] = s;
    for (int j = i; j < h->max_local; j += k, s++)
      tutti__block_range(count, h->max_local, j, &h->segs[s].off, &h->segs[s].len);
  }
  h->seg_first[k] = s;
}

void tutti__hier_local_blocks(tutti_hier_t *h, size_t per, tutti_ring_layout_t *l) {
  tutti__hier_local_block_parts(h, per, 0, per, l);
}

void tutti__hier_local_block_parts(tutti_hier_t *h, size_t per, size_t off, size_t len,
                                   tutti_ring_layout_t *l) {
  int k = h->nlocal, s = 0;
  segmented(h, k, l);
  for (int i = 0; i < k; i++) {
    h->seg_first[i] = s;
    for (int j = i; j < h->max_local; j += k)
      for (int g = 0; g < h->nhosts; g++)
        if (j < tutti__topo_nlocal(h->t, g))
          h->segs[s++] = (tutti_seg_t){(size_t)tutti__topo_rank(h->t, g, j) * per + off, len};
  }
  h->seg_first[k] = s;
}

void tutti__hier_index_blocks(tutti_hier_t *h, int j, size_t per, tutti_ring_layout_t *l) {
  int s = 0;
  segmented(h, h->nhosts, l);
  for (int g = 0; g < h->nhosts; g++) {
    h->seg_first[g] = s;
    if (j < tutti__topo_nlocal(h->t, g))
      h->segs[s++] = (tutti_seg_t){(size_t)tutti__topo_rank(h->t, g, j) * per, per};
  }
  h->seg_first[h->nhosts] = s;
}

tutti_result_t tutti__hier_reduce_slices(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                         tutti_hier_t *h, char *w, char *tmp,
                                         tutti_hier_slice_fn done, void *ctx) {
  size_t es = a->esize;
  if (h->nlocal == 1) {
    tutti__copy_if_apart(w, a->sendbuf, a->count * es);
  } else {
    tutti_ring_layout_t l;
    tutti__hier_local_slices(h, a->count, &l);
    TRY(tutti__ring_group_reduce_scatter(comm, a, &h->local_group, &l, a->sendbuf, w, tmp));
  }
  TUTTI_HIER_FOR_INDEX(h, j) {
    size_t off, len;
    tutti__block_range(a->count, h->max_local, j, &off, &len);
    char *slice = w + off * es;
    tutti_group_t g;
    tutti__hier_index_group(h, j, &g);
    tutti_ring_layout_t il = {len, 0, g.n, NULL, NULL, NULL, NULL, NULL};
    TRY(tutti__ring_group_reduce_scatter(comm, a, &g, &il, slice, slice, tmp));
    if (a->op == TUTTI_AVG) {
      size_t so, sl;
      tutti__block_range(len, g.n, g.pos, &so, &sl);
      tutti__avg_finish(slice + so * es, sl, a->dtype, comm->nranks);
    }
    TRY(done(comm, a, &g, slice, len, ctx));
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__hier_wait_pairs(struct tutti_comm *comm, tutti_hier_pair_t *x, size_t n,
                                      int64_t deadline) {
  for (size_t i = 0; i < n; i++) {
    if (x[i].received) TRY(tutti__wait(comm, &x[i].recv, deadline));
    if (x[i].sent) TRY(tutti__wait(comm, &x[i].send, deadline));
    x[i].received = x[i].sent = 0;
  }
  return TUTTI_SUCCESS;
}

int tutti__hier_pipe_pieces(size_t bytes) {
  size_t p = bytes / TUTTI_HIER_PIECE_MIN;
  return p < 1 ? 1 : p > TUTTI_HIER_PIECES ? TUTTI_HIER_PIECES : (int)p;
}
