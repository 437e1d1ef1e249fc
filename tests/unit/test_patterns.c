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

int main(int argc, char **argv) { return harness_main(argc, argv); }
