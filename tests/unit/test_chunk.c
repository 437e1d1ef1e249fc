/* Unit tests of the pipelined chunk chosen from the cache sizes (algo/pipeline.c). */
#include "algo/algo.h"
#include "harness.h"

/* A quarter of L2, rounded down to a power of two, kept within 64 KiB .. 1 MiB; the
 * configured fallback where L2 is unknown. */
TEST(chunk_is_a_quarter_of_l2) {
  ASSERT_EQ(tutti__chunk_for_cache((size_t)1 << 20, 262144), (size_t)256 << 10);
  ASSERT_EQ(tutti__chunk_for_cache((size_t)512 << 10, 262144), (size_t)128 << 10);
  ASSERT_EQ(tutti__chunk_for_cache((size_t)2 << 20, 262144), (size_t)512 << 10);
  /* 1.25 MiB (Intel's L2 of some cores): a quarter is 320 KiB, so 256 KiB. */
  ASSERT_EQ(tutti__chunk_for_cache((size_t)1280 << 10, 262144), (size_t)256 << 10);
}

TEST(chunk_is_clamped_and_falls_back) {
  ASSERT_EQ(tutti__chunk_for_cache(0, 12345), 12345);
  ASSERT_EQ(tutti__chunk_for_cache((size_t)64 << 10, 262144), (size_t)64 << 10);
  ASSERT_EQ(tutti__chunk_for_cache(4096, 262144), (size_t)64 << 10);
  ASSERT_EQ(tutti__chunk_for_cache((size_t)32 << 20, 262144), (size_t)1 << 20);
}
int main(int argc, char **argv) { return harness_main(argc, argv); }
