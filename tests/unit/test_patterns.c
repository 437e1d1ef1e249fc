/* Unit tests of the algorithms' rank and index arithmetic. */
#include "algo/patterns.h"
#include "harness.h"

TEST(mod_is_non_negative) {
  ASSERT_EQ(tutti__mod(-1, 5), 4);
  ASSERT_EQ(tutti__mod(-11, 5), 4);
  ASSERT_EQ(tutti__mod(7, 5), 2);
  ASSERT_EQ(tutti__ring_left(0, 3), 2);
  ASSERT_EQ(tutti__ring_right(2, 3), 0);
}

/* Blocks tile [0, count) in order without gaps, and sizes differ by at most one. */
TEST(block_range_tiles_exactly) {
  for (int n = 1; n <= 9; n++)
    for (size_t count = 0; count <= 40; count++) {
      size_t next = 0, minl = (size_t)-1, maxl = 0;
      for (int b = 0; b < n; b++) {
        size_t off, len;
        tutti__block_range(count, n, b, &off, &len);
        ASSERT_EQ(off, next);
        next = off + len;
        minl = len < minl ? len : minl;
        maxl = len > maxl ? len : maxl;
      }
      ASSERT_EQ(next, count);
      ASSERT(maxl - minl <= 1);
    }
}

TEST(nchunks) {
  ASSERT_EQ(tutti__nchunks(0, 4), 0);
  ASSERT_EQ(tutti__nchunks(1, 4), 1);
  ASSERT_EQ(tutti__nchunks(4, 4), 1);
  ASSERT_EQ(tutti__nchunks(5, 4), 2);
}

/* Every rank has a distinct position; the root is first (broadcast) or last (reduce). */
TEST(chain_positions_are_a_permutation) {
  for (int n = 1; n <= 8; n++)
    for (int root = 0; root < n; root++) {
      int seen_from[8] = {0}, seen_to[8] = {0};
      for (int r = 0; r < n; r++) {
        seen_from[tutti__chain_pos_from_root(r, root, n)]++;
        seen_to[tutti__chain_pos_to_root(r, root, n)]++;
        /* The rank after r in either chain is r's right ring neighbour. */
        if (tutti__chain_pos_from_root(r, root, n) < n - 1)
          ASSERT_EQ(tutti__chain_pos_from_root(tutti__ring_right(r, n), root, n),
                    tutti__chain_pos_from_root(r, root, n) + 1);
      }
      for (int p = 0; p < n; p++) {
        ASSERT_EQ(seen_from[p], 1);
        ASSERT_EQ(seen_to[p], 1);
      }
      ASSERT_EQ(tutti__chain_pos_from_root(root, root, n), 0);
      ASSERT_EQ(tutti__chain_pos_to_root(root, root, n), n - 1);
    }
}

/* At every step each rank sends to exactly one rank, which receives from it at that step, and
 * over the n-1 steps every rank sends to every other rank once. */
TEST(pairwise_steps_match_and_cover) {
  for (int n = 1; n <= 9; n++)
    for (int r = 0; r < n; r++) {
      int sent[9] = {0};
      for (int k = 1; k < n; k++) {
        int to = tutti__pairwise_to(r, k, n);
        ASSERT(to != r);
        ASSERT_EQ(tutti__pairwise_from(to, k, n), r);
        sent[to]++;
      }
      for (int j = 0; j < n; j++) ASSERT_EQ(sent[j], j == r ? 0 : 1);
    }
}

/* The fold leaves a power of two of virtual ranks, numbered 0 .. p-1 in rank order, and the
 * ranks each one stands for tile 0 .. n-1. */
TEST(fold_numbers_virtual_ranks) {
  for (int n = 1; n <= 33; n++) {
    int p = tutti__pow2_floor(n), rem = n - p, seen = 0, prev = -1;
    ASSERT(p <= n && 2 * p > n && (p & (p - 1)) == 0);
    for (int r = 0; r < n; r++) {
      int v = tutti__fold_vrank(r, rem);
      if (v < 0) {
        ASSERT(r < 2 * rem && r % 2 == 0);
        continue;
      }
      ASSERT_EQ(v, prev + 1);
      prev = v;
      seen++;
      ASSERT_EQ(tutti__fold_rank(v, rem), r);
      ASSERT(tutti__fold_first(v, rem) <= r && r < tutti__fold_first(v + 1, rem));
    }
    ASSERT_EQ(seen, p);
    ASSERT_EQ(tutti__fold_first(0, rem), 0);
    ASSERT_EQ(tutti__fold_first(p, rem), n);
  }
}

/* Checks one tree over n ranks: parent and child links agree, there is one root, every rank
 * reaches it in at most 2 log2 n hops, and a subtree is a contiguous range (in-order). */
static void check_tree(int n, int t) {
  int roots = 0;
  for (int r = 0; r < n; r++) {
    int u, d[2];
    tutti__dtree(n, r, t, &u, &d[0], &d[1]);
    if (u < 0) roots++;
    for (int i = 0; i < 2; i++) {
      if (d[i] < 0) continue;
      ASSERT(d[i] < n && d[i] != r);
      int cu, c0, c1;
      tutti__dtree(n, d[i], t, &cu, &c0, &c1);
      ASSERT_EQ(cu, r);
    }
    if (u >= 0) { /* r is one of its parent's children */
      int pu, p0, p1;
      tutti__dtree(n, u, t, &pu, &p0, &p1);
      ASSERT(p0 == r || p1 == r);
    }
    int hops = 0, x = r;
    while (x >= 0 && hops <= 64) {
      int xu, x0, x1;
      tutti__dtree(n, x, t, &xu, &x0, &x1);
      x = xu;
      hops++;
    }
    int lg = 0;
    while ((1 << lg) < n) lg++;
    ASSERT(hops - 1 <= 2 * lg + 1);
  }
  ASSERT_EQ(roots, 1);
}

TEST(double_binary_tree_is_two_trees) {
  for (int n = 1; n <= 40; n++) {
    check_tree(n, 0);
    check_tree(n, 1);
  }
  /* Tree 0 is in-order: down0 < rank < down1. */
  for (int n = 2; n <= 40; n++)
    for (int r = 0; r < n; r++) {
      int u, d0, d1;
      tutti__btree(n, r, &u, &d0, &d1);
      ASSERT(d0 < r);
      ASSERT(d1 < 0 || d1 > r);
    }
}

/* For even n the two trees are complementary: a rank with children in one is a leaf in the
 * other (NCCL's point: each rank sends and receives about the same in total). */
TEST(double_binary_tree_inner_nodes_complement) {
  for (int n = 2; n <= 40; n += 2)
    for (int r = 0; r < n; r++) {
      int u, a0, a1, b0, b1;
      tutti__dtree(n, r, 0, &u, &a0, &a1);
      tutti__dtree(n, r, 1, &u, &b0, &b1);
      int inner0 = a0 >= 0 || a1 >= 0, inner1 = b0 >= 0 || b1 >= 0;
      ASSERT(!(inner0 && inner1));
    }
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
