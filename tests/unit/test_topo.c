/* Unit tests of the topology (core/topo.c), the hierarchical layouts (algo/hier_util.c) and
 * the tuner's choice between flat and hierarchical algorithms. */
#include <stdlib.h>
#include <string.h>

#include "algo/hier.h"
#include "algo/patterns.h"
#include "algo/tuner.h"
#include "core/internal.h"
#include "core/topo.h"
#include "harness.h"

/* A communicator with only what the topology reads: rank r on host hosts[r]. */
static struct tutti_comm *fake_comm(int n, const int *hosts, int rank) {
  struct tutti_comm *c = calloc(1, sizeof *c);
  c->nranks = n;
  c->rank = rank;
  c->peers = calloc((size_t)n, sizeof *c->peers);
  for (int r = 0; r < n; r++) {
    snprintf(c->peers[r].host, sizeof c->peers[r].host, "h%d", hosts[r]);
    snprintf(c->peers[r].boot_id, sizeof c->peers[r].boot_id, "boot");
  }
  return c;
}

static void free_comm(struct tutti_comm *c) {
  if (c->topo) free(c->topo->work);
  free(c->topo);
  free(c->peers);
  free(c);
}

/* How often a ring over order[0..n-1] crosses from one host to another. */
static int crossings(const int *order, int n, const int *hosts) {
  int x = 0;
  for (int i = 0; i < n; i++) x += hosts[order[i]] != hosts[order[(i + 1) % n]];
  return x;
}

TEST(cyclic_placement_ring_crosses_each_host_once) {
  int cyclic[6] = {0, 1, 2, 0, 1, 2}, block[6] = {0, 0, 1, 1, 2, 2};
  struct tutti_comm *c = fake_comm(6, cyclic, 4);
  const tutti_topo_t *t = tutti__topo(c);
  ASSERT_EQ(t->nhosts, 3);
  ASSERT_EQ(t->max_local, 2);
  ASSERT_EQ(t->min_local, 2);
  /* Hosts by lowest rank, then local rank: 0 3 | 1 4 | 2 5. */
  int want[6] = {0, 3, 1, 4, 2, 5};
  ASSERT_MEM_EQ(t->ranks, want, sizeof want);
  ASSERT_EQ(crossings(t->ranks, 6, cyclic), 3);
  /* The rank-order ring, what the flat ring ran before: every hop crosses. */
  int plain[6] = {0, 1, 2, 3, 4, 5};
  ASSERT_EQ(crossings(plain, 6, cyclic), 6);
  ASSERT_EQ(crossings(plain, 6, block), 3);
  ASSERT_EQ(t->host_of[4], 1);
  ASSERT_EQ(t->local_of[4], 1);
  ASSERT_EQ(t->pos_of[4], 3);
  free_comm(c);
}

TEST(uneven_hosts) {
  int hosts[6] = {0, 1, 2, 0, 2, 2}; /* cyclic 2+1+3 */
  struct tutti_comm *c = fake_comm(6, hosts, 0);
  const tutti_topo_t *t = tutti__topo(c);
  ASSERT_EQ(t->nhosts, 3);
  ASSERT_EQ(t->max_local, 3);
  ASSERT_EQ(t->min_local, 1);
  ASSERT_EQ(tutti__topo_nlocal(t, 1), 1);
  ASSERT_EQ(tutti__topo_rank(t, 2, 2), 5);
  free_comm(c);
}

/* Every rank's block appears exactly once in the local layouts of each host, and index j
 * of a host is covered by local rank j % size. */
TEST(hier_layouts_cover_every_block_once) {
  int hosts[7] = {0, 1, 1, 1, 1, 2, 2}; /* 1+4+2 */
  for (int rank = 0; rank < 7; rank++) {
    struct tutti_comm *c = fake_comm(7, hosts, rank);
    tutti_hier_t h;
    ASSERT_EQ(tutti__hier_begin(c, &h), TUTTI_SUCCESS);
    ASSERT_EQ(h.max_local, 4);
    ASSERT_EQ(tutti__hier_cover(&h, 2, 3), 6);
    ASSERT_EQ(tutti__hier_cover(&h, 0, 3), 0);
    tutti_ring_layout_t l;
    tutti__hier_local_blocks(&h, 10, &l);
    int seen[7] = {0};
    for (int s = 0; s < l.seg_first[l.n]; s++) {
      ASSERT_EQ(l.segs[s].len, 10u);
      seen[l.segs[s].off / 10]++;
    }
    for (int r = 0; r < 7; r++) ASSERT_EQ(seen[r], 1);
    tutti__hier_local_slices(&h, 103, &l);
    size_t total = 0;
    for (int s = 0; s < l.seg_first[l.n]; s++) total += l.segs[s].len;
    ASSERT_EQ(total, 103u);
    free_comm(c);
  }
}

static tutti_tune_query_t query(tutti_coll_t coll, size_t bytes, int n, int hosts, int L) {
  tutti_tune_query_t q = {coll, bytes, n, hosts == 1, hosts > 1, 262144, 0, 0, NULL, hosts, L};
  return q;
}

/* Large calls across hosts with several ranks each go hierarchical; one host or one rank per
 * host never does (the model has nothing for it there). */
TEST(tuner_picks_hier_across_hosts) {
  const tutti_algo_t *hier = tutti__algo_find("hier");
  ASSERT(hier != NULL);
  tutti_coll_t colls[3] = {TUTTI_COLL_ALLREDUCE, TUTTI_COLL_ALLGATHER,
                           TUTTI_COLL_REDUCE_SCATTER};
  for (int i = 0; i < 3; i++) {
    tutti_tune_query_t q = query(colls[i], 16 << 20, 6, 3, 2);
    ASSERT(tutti__tune_pick(&q, NULL, 0, "auto", NULL) == hier);
    q = query(colls[i], 16 << 20, 6, 1, 6);
    ASSERT(tutti__tune_pick(&q, NULL, 0, "auto", NULL) != hier);
    ASSERT(tutti__tune_predict(hier, &q) < 0);
    q = query(colls[i], 16 << 20, 3, 3, 1);
    ASSERT(tutti__tune_predict(hier, &q) < 0);
  }
  /* A forced hier runs anywhere, one host included. */
  tutti_tune_query_t q = query(TUTTI_COLL_ALLREDUCE, 64, 4, 1, 4);
  ASSERT(tutti__tune_pick(&q, NULL, 0, "hier", NULL) == hier);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
