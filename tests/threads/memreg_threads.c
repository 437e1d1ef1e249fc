/*
 * Registered buffers (tutti_mem_alloc) when the ranks are threads of one process: the
 * single-copy algorithm reads a peer's registered buffer at the peer's own address (no
 * mapping). Every rank-count here registers the buffers of the odd ranks only, so one call
 * mixes in-place reads and process_vm_readv; results are checked against sums computed here.
 */
#include <stdint.h>

#include "harness.h"
#include "trun.h"

#define COUNT 20011 /* odd, past several of trun_config's small chunks */

static void body(tutti_comm_t comm, int rank, int nranks, void *arg) {
  (void)arg;
  int reg = rank % 2;
  size_t big = (size_t)COUNT * (size_t)nranks;
  uint32_t *s, *r;
  if (reg) {
    void *p, *q;
    ASSERT_EQ(tutti_mem_alloc(comm, big * 4, &p), TUTTI_SUCCESS);
    ASSERT_EQ(tutti_mem_alloc(comm, big * 4, &q), TUTTI_SUCCESS);
    s = p, r = q;
  } else {
    s = calloc(big, 4), r = calloc(big, 4);
  }
  for (size_t i = 0; i < big; i++) s[i] = (uint32_t)(rank * 1000003 + i);
  ASSERT_EQ(tutti_allreduce(s, r, COUNT, TUTTI_UINT32, TUTTI_SUM, comm), TUTTI_SUCCESS);
  for (size_t i = 0; i < COUNT; i++) {
    uint32_t w = 0;
    for (int k = 0; k < nranks; k++) w += (uint32_t)(k * 1000003 + i);
    if (r[i] != w) harness_fail(__FILE__, __LINE__, "allreduce rank %d element %zu", rank, i);
  }
  ASSERT_EQ(tutti_allgather(s, r, COUNT, TUTTI_UINT32, comm), TUTTI_SUCCESS);
  for (int k = 0; k < nranks; k++)
    for (size_t i = 0; i < COUNT; i++)
      if (r[k * COUNT + i] != (uint32_t)(k * 1000003 + i))
        harness_fail(__FILE__, __LINE__, "allgather rank %d block %d element %zu", rank, k, i);
  ASSERT_EQ(tutti_broadcast(s, r, COUNT, TUTTI_UINT32, 1, comm), TUTTI_SUCCESS);
  for (size_t i = 0; i < COUNT; i++)
    if (r[i] != (uint32_t)(1000003 + i))
      harness_fail(__FILE__, __LINE__, "broadcast rank %d element %zu", rank, i);
  ASSERT_EQ(tutti_reduce_scatter(s, r, COUNT, TUTTI_UINT32, TUTTI_SUM, comm), TUTTI_SUCCESS);
  for (size_t i = 0; i < COUNT; i++) {
    uint32_t w = 0;
    for (int k = 0; k < nranks; k++) w += (uint32_t)(k * 1000003 + (size_t)rank * COUNT + i);
    if (r[i] != w) harness_fail(__FILE__, __LINE__, "reduce_scatter rank %d element %zu", rank, i);
  }
  if (reg) {
    ASSERT_EQ(tutti_mem_free(comm, s), TUTTI_SUCCESS);
    ASSERT_EQ(tutti_mem_free(comm, r), TUTTI_SUCCESS);
  } else {
    free(s), free(r);
  }
}

TEST(registered_buffers_cma_threads) {
  tutti_config_t cfg;
  trun_config(&cfg);
  snprintf(cfg.algo, sizeof cfg.algo, "cma");
  for (int n = 2; n <= 4; n++) trun(n, &cfg, body, NULL);
}

int main(int c, char **v) { return harness_main(c, v); }
