/* An outside program built against an installed tutti (pkg-config or find_package): every
 * rank contributes rank + 1 and checks the all-reduce sum n(n+1)/2. */
#include <stdio.h>
#include <tutti.h>

int main(void) {
  tutti_comm_t comm;
  int rank, size;
  if (tutti_comm_init_env(&comm) != TUTTI_SUCCESS) return 1;
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &size);
  double mine = rank + 1, sum = 0;
  tutti_result_t r = tutti_allreduce(&mine, &sum, 1, TUTTI_FLOAT64, TUTTI_SUM, comm);
  int ok = r == TUTTI_SUCCESS && sum == size * (size + 1) / 2.0;
  printf("consumer rank %d of %d: sum %g %s\n", rank, size, sum, ok ? "ok" : "WRONG");
  tutti_comm_destroy(comm);
  return ok ? 0 : 1;
}
