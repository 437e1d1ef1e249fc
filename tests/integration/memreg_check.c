/*
 * memreg_check: collectives on registered buffers (tutti_mem_alloc), one program run on every
 * rank under tutti-run, normally over shm with TUTTI_ALGO=cma so that peers read and write
 * the buffers in place (the other collectives run whatever the tuner picks: for them the
 * memory is ordinary).
 *
 * Three layouts: every rank registers both buffers; a mix (odd ranks register both, rank 0
 * only its send buffer, the others nothing), so some peers are read in place and others with
 * process_vm_readv in the same call; and none. Buffers are freed and allocated again for
 * every size, so a new region often takes a freed one's address: the peers' cached mappings
 * of the old region must not be used for the new one. int32 data makes every reference exact
 * (sums wrap as uint32). Also checks tutti_mem_free's and tutti_mem_alloc's refusals.
 *
 *   tutti-run -n 3 memreg_check
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tutti.h"

static int rank, nranks, failures;
static tutti_comm_t comm;

static void check_call(tutti_result_t r, const char *what) {
  if (r != TUTTI_SUCCESS) {
    fprintf(stderr, "rank %d: %s: %s: %s\n", rank, what, tutti_result_string(r),
            comm ? tutti_comm_last_error(comm) : tutti_last_init_error());
    exit(1);
  }
}

/* Rank r's element i in case c. */
static uint32_t val(int r, size_t i, int c) {
  uint32_t x = (uint32_t)r * 2654435761u ^ (uint32_t)i * 40503u ^ (uint32_t)c * 97u;
  return x ^ (x >> 13);
}

static void expect(const uint32_t *got, size_t i, uint32_t want, const char *what, size_t n,
                   int layout) {
  if (got[i] != want && failures++ < 5)
    fprintf(stderr, "rank %d: %s count %zu layout %d: element %zu is %u, want %u\n", rank,
            what, n, layout, i, got[i], want);
}

/* A buffer of n uint32, registered or not. */
static uint32_t *get(size_t n, int reg) {
  void *p;
  if (!reg) return calloc(n ? n : 1, 4);
  check_call(tutti_mem_alloc(comm, n * 4 + 4, &p), "tutti_mem_alloc");
  return p;
}
static void put(void *p, int reg) {
  if (reg)
    check_call(tutti_mem_free(comm, p), "tutti_mem_free");
  else
    free(p);
}

/* Every collective at count n with rank-specific send/recv registration. */
static void run_case(size_t n, int layout, int c) {
  int rs = layout == 0 || (layout == 1 && (rank % 2 == 1 || rank == 0));
  int rr = layout == 0 || (layout == 1 && rank % 2 == 1);
  size_t big = n * (size_t)nranks;
  uint32_t *s = get(big, rs), *r = get(big, rr);
  /* all-reduce, out of place then in place */
  for (size_t i = 0; i < n; i++) s[i] = val(rank, i, c);
  check_call(tutti_allreduce(s, r, n, TUTTI_UINT32, TUTTI_SUM, comm), "allreduce");
  for (size_t i = 0; i < n; i++) {
    uint32_t w = 0;
    for (int k = 0; k < nranks; k++) w += val(k, i, c);
    expect(r, i, w, "allreduce", n, layout);
  }
  check_call(tutti_allreduce(s, s, n, TUTTI_UINT32, TUTTI_SUM, comm), "allreduce in place");
  for (size_t i = 0; i < n; i++) expect(s, i, r[i], "allreduce in place", n, layout);
  /* all-gather, out of place then in place (in r) */
  for (size_t i = 0; i < n; i++) s[i] = val(rank, i, c + 1);
  check_call(tutti_allgather(s, r, n, TUTTI_UINT32, comm), "allgather");
  for (int k = 0; k < nranks; k++)
    for (size_t i = 0; i < n; i++) expect(r, k * n + i, val(k, i, c + 1), "allgather", n, layout);
  memset(r, 0, big * 4);
  for (size_t i = 0; i < n; i++) r[rank * n + i] = val(rank, i, c + 1);
  check_call(tutti_allgather(r + rank * n, r, n, TUTTI_UINT32, comm), "allgather in place");
  for (int k = 0; k < nranks; k++)
    for (size_t i = 0; i < n; i++)
      expect(r, k * n + i, val(k, i, c + 1), "allgather in place", n, layout);
  /* reduce-scatter (max), out of place then in place (in s) */
  for (size_t i = 0; i < big; i++) s[i] = val(rank, i, c + 2);
  check_call(tutti_reduce_scatter(s, r, n, TUTTI_UINT32, TUTTI_MAX, comm), "reduce_scatter");
  for (size_t i = 0; i < n; i++) {
    uint32_t w = 0;
    for (int k = 0; k < nranks; k++) {
      uint32_t v = val(k, rank * n + i, c + 2);
      w = v > w ? v : w;
    }
    expect(r, i, w, "reduce_scatter", n, layout);
    r[big - 1 - i] = w; /* kept for the in-place check; r holds nranks * n */
  }
  check_call(tutti_reduce_scatter(s, s + rank * n, n, TUTTI_UINT32, TUTTI_MAX, comm),
             "reduce_scatter in place");
  for (size_t i = 0; i < n; i++) expect(s, rank * n + i, r[big - 1 - i], "rs in place", n, layout);
  /* broadcast from every root, out of place and in place */
  for (int root = 0; root < nranks; root++) {
    for (size_t i = 0; i < n; i++) s[i] = val(rank, i, c + 3 + root);
    check_call(tutti_broadcast(s, r, n, TUTTI_UINT32, root, comm), "broadcast");
    for (size_t i = 0; i < n; i++) expect(r, i, val(root, i, c + 3 + root), "broadcast", n, layout);
    check_call(tutti_broadcast(s, s, n, TUTTI_UINT32, root, comm), "broadcast in place");
    for (size_t i = 0; i < n; i++)
      expect(s, i, val(root, i, c + 3 + root), "bcast in place", n, layout);
  }
  /* reduce, alltoall, gather, scatter: ordinary memory to their algorithms */
  for (size_t i = 0; i < big; i++) s[i] = val(rank, i, c + 9);
  check_call(tutti_reduce(s, r, n, TUTTI_UINT32, TUTTI_SUM, nranks - 1, comm), "reduce");
  for (size_t i = 0; i < n && rank == nranks - 1; i++) {
    uint32_t w = 0;
    for (int k = 0; k < nranks; k++) w += val(k, i, c + 9);
    expect(r, i, w, "reduce", n, layout);
  }
  check_call(tutti_alltoall(s, r, n, TUTTI_UINT32, comm), "alltoall");
  for (int k = 0; k < nranks; k++)
    for (size_t i = 0; i < n; i++)
      expect(r, k * n + i, val(k, rank * n + i, c + 9), "alltoall", n, layout);
  check_call(tutti_gather(s, r, n, TUTTI_UINT32, 0, comm), "gather");
  for (int k = 0; k < nranks && rank == 0; k++)
    for (size_t i = 0; i < n; i++) expect(r, k * n + i, val(k, i, c + 9), "gather", n, layout);
  check_call(tutti_scatter(s, r, n, TUTTI_UINT32, 0, comm), "scatter");
  for (size_t i = 0; i < n; i++) expect(r, i, val(0, rank * n + i, c + 9), "scatter", n, layout);
  put(s, rs), put(r, rr);
}

int main(void) {
  check_call(tutti_comm_init_env(&comm), "tutti_comm_init_env");
  check_call(tutti_comm_rank(comm, &rank), "tutti_comm_rank");
  check_call(tutti_comm_size(comm, &nranks), "tutti_comm_size");
  /* Odd counts; 70001 elements (273 KiB) crosses chunks and, with the small last-level cache
   * the test's tuning file claims, takes the streaming-store paths; 1300001 (5 MiB) spans
   * several of the 2 MiB parts a peer's region is faulted in by (memreg.c), at offsets that
   * are not multiples of them, and a region that ends inside one. */
  static const size_t counts[] = {1, 7, 1023, 70001, 1300001};
  int c = 0;
  for (int layout = 0; layout < 3; layout++)
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
      run_case(counts[k], layout, c += 16);
  /* Refusals: they leave the communicator usable. */
  void *p = NULL;
  int dummy;
  if (tutti_mem_alloc(comm, 0, &p) != TUTTI_ERR_INVALID_ARGUMENT || p) failures++;
  if (tutti_mem_free(comm, &dummy) != TUTTI_ERR_INVALID_ARGUMENT) failures++;
  if (tutti_mem_free(comm, NULL) != TUTTI_SUCCESS) failures++;
  check_call(tutti_mem_alloc(comm, 100, &p), "tutti_mem_alloc");
  memset(p, 1, 4096); /* whole pages */
  check_call(tutti_barrier(comm), "barrier");
  /* Left allocated on purpose: tutti_comm_destroy frees it (LeakSanitizer would say if not). */
  check_call(tutti_comm_destroy(comm), "tutti_comm_destroy");
  comm = NULL;
  printf("memreg_check rank %d of %d: %s\n", rank, nranks, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
