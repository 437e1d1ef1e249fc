/* tutti-info: version, transports, algorithms, configuration variables and the detected
 * host, so a user can see what tutti would do here without running a job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/algo.h"
#include "explain.h"
#include "core/internal.h"
#include "kernels/kernels.h"

static void print_algorithms(void) {
  int n;
  const tutti_algo_t *t = tutti__algo_table(&n);
  printf("\nAlgorithms (TUTTI_ALGO=auto: the tuner picks per call; see --explain):\n");
  for (int i = 0; i < n; i++) {
    printf("  %-18s %s\n                     collectives:", t[i].name, t[i].desc);
    for (int c = 0; c < TUTTI_COLL_COUNT; c++)
      if (t[i].fn[c]) printf(" %s", tutti__coll_name((tutti_coll_t)c));
    printf("\n");
  }
}

static void print_config(void) {
  int n;
  const tutti_config_var_t *v = tutti__config_table(&n);
  printf("\nEnvironment variables (current value, or the default):\n");
  for (int i = 0; i < n; i++) {
    const char *cur = getenv(v[i].name);
    if (cur && *cur && !strcmp(v[i].name, "TUTTI_SECRET")) cur = "(set, not shown)";
    printf("  %-22s = %-10s %s\n", v[i].name, cur && *cur ? cur : v[i].def[0] ? v[i].def : "\"\"",
           v[i].doc);
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    printf("usage: tutti-info\nPrints tutti's version, transports, algorithms, data types, "
           "operations, configuration and the detected host.\n"
           "       tutti-info --explain COLLECTIVE SIZE NRANKS [shm|tcp] [--hosts H]\nPrints the tuner's "
           "predicted time of every algorithm for that call and the one it picks.\n");
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "--explain")) return tutti_info_explain(argc - 2, argv + 2);
  if (argc > 1) {
    fprintf(stderr, "tutti-info: unknown argument '%s' (try --help)\n", argv[1]);
    return 2;
  }
  printf("tutti %s\n", TUTTI_VERSION_STRING);
  char host[256] = "?";
  gethostname(host, sizeof host);
  host[sizeof host - 1] = '\0';
  printf("\nHost: %s, %ld CPUs online\n", host, sysconf(_SC_NPROCESSORS_ONLN));
  printf("\nTransports:\n"
         "  shm  shared-memory queues between ranks of one host (futex wake-ups)\n"
         "  tcp  one TCP connection per peer pair, non-blocking, TCP_NODELAY\n");
  printf("\nOperations (each also non-blocking as tutti_i<name>, and groupable):\n"
         "  collectives:     allgather allreduce reduce_scatter broadcast reduce barrier\n"
         "  variable-count:  allgatherv reduce_scatterv gatherv scatterv alltoallv\n"
         "  equal-count:     alltoall gather scatter\n"
         "  point-to-point:  send recv\n"
         "  communicators:   comm_split comm_dup; premul-sum operations\n");
  printf("\nData types:");
  for (int d = 0; tutti__dtype_valid(d); d++) printf(" %s", tutti__dtype_name(d));
  printf("\nReductions:");
  for (int o = 0; tutti__op_valid(o); o++) printf(" %s", tutti__op_name(o));
  printf(" (band/bor/bxor: integer types only) premul_sum");
  printf("\n");
  print_algorithms();
  char err[256];
  tutti_config_t cfg;
  if (tutti__config_load(&cfg, err, sizeof err) != TUTTI_SUCCESS)
    printf("\nConfiguration error: %s\n", err);
  print_config();
  return 0;
}
