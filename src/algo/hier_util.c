/* Groups and layouts of the hierarchical algorithms (hier.h). */
#include "algo/hier.h"

#include <stdlib.h>

#include "algo/patterns.h"

tutti_result_t tutti__hier_begin(struct tutti_comm *comm, tutti_hier_t *h) {
  memset(h, 0, sizeof *h);
  h->t = tutti__topo(comm);
  if (!h->t) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory for the topology");
  const tutti_topo_t *t = h->t;
  h->nhosts = t->nhosts;
  h->max_local = t->max_local;
  h->host = t->host_of[comm->rank];
  h->local = t->local_of[comm->rank];
  h->nlocal = tutti__topo_nlocal(t, h->host);
  h->local_group = (tutti_group_t){t->ranks + t->host_first[h->host], h->nlocal, h->local};
  size_t nseg = (size_t)comm->nranks + (size_t)t->max_local;
  h->index_ranks = malloc(sizeof(int) * ((size_t)t->nhosts + nseg + 1));
  h->segs = malloc(sizeof(tutti_seg_t) * nseg);
  if (!h->index_ranks || !h->segs) {
    tutti__hier_end(h);
    return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory for a hierarchical %s",
                        comm->op_name ? comm->op_name : "collective");
  }
  h->seg_first = h->index_ranks + t->nhosts;
  return TUTTI_SUCCESS;
}

void tutti__hier_end(tutti_hier_t *h) {
  free(h->index_ranks);
  free(h->segs);
  h->index_ranks = NULL;
  h->segs = NULL;
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
  int k = h->nlocal, s = 0;
  segmented(h, k, l);
  for (int i = 0; i < k; i++) {
    h->seg_first[i] = s;
    for (int j = i; j < h->max_local; j += k)
      for (int g = 0; g < h->nhosts; g++)
        if (j < tutti__topo_nlocal(h->t, g))
          h->segs[s++] = (tutti_seg_t){(size_t)tutti__topo_rank(h->t, g, j) * per, per};
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
