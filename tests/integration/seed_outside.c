/*
 * The seed example as an outside program would write it, against API.md and tutti.h only:
 * ranks 0, 1, 2 hold [1, 4], [2, -1], [3, 2]; all-gather gives every rank
 * [1, 4, 2, -1, 3, 2] and all-reduce with sum gives [6, 5]. Exits non-zero on any mismatch.
 *
 *   tutti-run -n 3 ./prog
 */
#include <stdio.h>

#include "tutti.h"

static int check(tutti_result_t rc, const char *what, tutti_comm_t comm) {
  if (rc == TUTTI_SUCCESS) return 0;
  fprintf(stderr, "seed_outside: %s: %s: %s\n", what, tutti_result_string(rc),
          comm ? tutti_comm_last_error(comm) : "");
  return 1;
}

int main(void) {
  static const int inputs[3][2] = {{1, 4}, {2, -1}, {3, 2}};
  static const int gathered[6] = {1, 4, 2, -1, 3, 2};
  static const int summed[2] = {6, 5};
  tutti_comm_t comm = NULL;
  int rank = -1, size = 0, bad = 0;

  if (check(tutti_comm_init_env(&comm), "tutti_comm_init_env", NULL)) return 1;
  if (check(tutti_comm_rank(comm, &rank), "tutti_comm_rank", comm) ||
      check(tutti_comm_size(comm, &size), "tutti_comm_size", comm))
    return 1;
  if (size != 3) {
    fprintf(stderr, "seed_outside: needs 3 ranks, got %d\n", size);
    return 1;
  }

  int all[6] = {0}, sum[2] = {0};
  if (check(tutti_allgather(inputs[rank], all, 2, TUTTI_INT32, comm), "tutti_allgather", comm) ||
      check(tutti_allreduce(inputs[rank], sum, 2, TUTTI_INT32, TUTTI_SUM, comm),
            "tutti_allreduce", comm))
    return 1;
  for (int i = 0; i < 6; i++) bad |= all[i] != gathered[i];
  for (int i = 0; i < 2; i++) bad |= sum[i] != summed[i];
  printf("rank %d: allgather [%d, %d, %d, %d, %d, %d], allreduce sum [%d, %d]%s\n", rank, all[0],
         all[1], all[2], all[3], all[4], all[5], sum[0], sum[1], bad ? "  MISMATCH" : "");

  if (check(tutti_barrier(comm), "tutti_barrier", comm) ||
      check(tutti_comm_destroy(comm), "tutti_comm_destroy", NULL))
    return 1;
  return bad;
}
