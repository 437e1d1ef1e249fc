/* Unit tests of the launcher variables env.c reads: MPICH's PMI, PMIx, the local-rank
 * variables, Slurm's address derivation and host lists, and the local-rank cross-check. */
#include <stdio.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "harness.h"

static const char *fake_lookup(const char *name, void *ctx) {
  for (const char **e = ctx; *e; e++) {
    size_t n = strlen(name);
    if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
  }
  return NULL;
}

static tutti_result_t parse(const char **env, tutti_env_info_t *info) {
  char err[256];
  return tutti__env_parse(fake_lookup, env, info, err, sizeof err);
}

TEST(env_mpich_pmi) {
  const char *env[] = {"PMI_RANK=3", "PMI_SIZE=4", "MPI_LOCALRANKID=1", "TUTTI_ADDR=h:9", NULL};
  tutti_env_info_t i;
  ASSERT_EQ(parse(env, &i), TUTTI_SUCCESS);
  ASSERT_EQ(i.rank, 3);
  ASSERT_EQ(i.size, 4);
  ASSERT_EQ(i.local_rank, 1);
  ASSERT_STR_EQ(i.source, "mpich");
}

TEST(env_pmix_rank_with_slurm_size) {
  const char *env[] = {"PMIX_RANK=1", "SLURM_NTASKS=2", "TUTTI_ADDR=h:9", NULL};
  tutti_env_info_t i;
  ASSERT_EQ(parse(env, &i), TUTTI_SUCCESS);
  ASSERT_EQ(i.rank, 1);
  ASSERT_EQ(i.size, 2);
  ASSERT_EQ(i.local_rank, -1);
  ASSERT_STR_EQ(i.source, "pmix");
}

TEST(env_local_rank_of_the_winning_family_only) {
  /* A stale SLURM_LOCALID inherited by a tutti-run job is not this job's. */
  const char *env[] = {"TUTTI_RANK=2", "TUTTI_WORLD_SIZE=4", "TUTTI_ADDR=h:9", "LOCAL_RANK=2",
                       "SLURM_LOCALID=0", NULL};
  tutti_env_info_t i;
  ASSERT_EQ(parse(env, &i), TUTTI_SUCCESS);
  ASSERT_EQ(i.local_rank, 2);
  const char *bad[] = {"RANK=1", "WORLD_SIZE=4", "TUTTI_ADDR=h:9", "LOCAL_RANK=3", NULL};
  ASSERT_EQ(parse(bad, &i), TUTTI_ERR_INVALID_ARGUMENT); /* local rank above the rank */
}

TEST(env_slurm_address_from_the_step) {
  const char *env[] = {"SLURM_PROCID=1", "SLURM_NTASKS=8", "SLURM_JOB_ID=4242",
                       "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=node[07-09,12],gpu1",
                       "SLURM_STEP_RESV_PORTS=12001-12004", "SLURM_LOCALID=1", NULL};
  tutti_env_info_t i;
  ASSERT_EQ(parse(env, &i), TUTTI_SUCCESS);
  ASSERT_STR_EQ(i.host, "node07");
  ASSERT_EQ(i.port, 12001);
  ASSERT_EQ(i.local_rank, 1);
  /* Without reserved ports: a port from the job and step ids, the same on every rank and
   * different for the next step. */
  const char *a[] = {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_JOB_ID=4242", "SLURM_STEP_ID=0",
                     "SLURM_LAUNCH_NODE_IPADDR=10.0.0.5", NULL};
  const char *b[] = {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_JOB_ID=4242", "SLURM_STEP_ID=0",
                     "SLURM_LAUNCH_NODE_IPADDR=10.0.0.5", NULL};
  const char *c[] = {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_JOB_ID=4242", "SLURM_STEP_ID=1",
                     "SLURM_LAUNCH_NODE_IPADDR=10.0.0.5", NULL};
  tutti_env_info_t ia, ib, ic;
  ASSERT_EQ(parse(a, &ia), TUTTI_SUCCESS);
  ASSERT_EQ(parse(b, &ib), TUTTI_SUCCESS);
  ASSERT_EQ(parse(c, &ic), TUTTI_SUCCESS);
  ASSERT_STR_EQ(ia.host, "10.0.0.5");
  ASSERT_EQ(ia.port, ib.port);
  ASSERT(ia.port != ic.port);
  ASSERT(ia.port >= 10000 && ia.port < 32768);
  /* An explicit address wins over the step's. */
  const char *d[] = {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_JOB_ID=1", "SLURM_STEP_ID=0",
                     "SLURM_STEP_NODELIST=n1", "MASTER_ADDR=m", "MASTER_PORT=7", NULL};
  ASSERT_EQ(parse(d, &ia), TUTTI_SUCCESS);
  ASSERT_STR_EQ(ia.host, "m");
  /* Not started by srun (no step id): no guess. */
  const char *e[] = {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_JOB_ID=1",
                     "SLURM_STEP_NODELIST=n1", NULL};
  ASSERT_EQ(parse(e, &ia), TUTTI_ERR_INVALID_ARGUMENT);
}

TEST(env_first_host_of_host_lists) {
  char h[64];
  ASSERT_EQ(tutti__env_first_host("a,b", h, sizeof h), 0);
  ASSERT_STR_EQ(h, "a");
  ASSERT_EQ(tutti__env_first_host("node[03-04,7],gpu1", h, sizeof h), 0);
  ASSERT_STR_EQ(h, "node03");
  ASSERT_EQ(tutti__env_first_host("rack[1-2]-n[5,6]", h, sizeof h), 0);
  ASSERT_STR_EQ(h, "rack1-n5");
  ASSERT_EQ(tutti__env_first_host("host-1", h, sizeof h), 0);
  ASSERT_STR_EQ(h, "host-1");
  ASSERT(tutti__env_first_host("node[1-2", h, sizeof h) != 0);
  ASSERT(tutti__env_first_host("", h, sizeof h) != 0);
  ASSERT(tutti__env_first_host("averyveryverylonghostname", h, 8) != 0);
}

static tutti_rdv_entry_t entry(const char *host, int claim) {
  tutti_rdv_entry_t e;
  memset(&e, 0, sizeof e);
  snprintf(e.host, sizeof e.host, "%s", host);
  snprintf(e.boot_id, sizeof e.boot_id, "boot-%s", host);
  e.local_claim = (uint16_t)claim;
  return e;
}

TEST(env_local_rank_cross_check) {
  char err[512];
  /* Two hosts, ranks placed cyclically: local ranks 0 0 1 1 (claims are local + 1). */
  tutti_rdv_entry_t t[4] = {entry("a", 1), entry("b", 1), entry("a", 2), entry("b", 2)};
  ASSERT_EQ(tutti__env_local_mismatch(t, 4, err, sizeof err), 0);
  t[3].local_claim = 0; /* no claim: nothing to check */
  ASSERT_EQ(tutti__env_local_mismatch(t, 4, err, sizeof err), 0);
  t[2].local_claim = 1; /* rank 2 says local rank 0, but rank 0 is before it on host a */
  ASSERT_EQ(tutti__env_local_mismatch(t, 4, err, sizeof err), 1);
  ASSERT(strstr(err, "rank 2 ") != NULL);
  ASSERT(strstr(err, "local rank 0") != NULL);
  ASSERT(strstr(err, "local rank 1 of the 2 ranks") != NULL);
}
int main(int argc, char **argv) { return harness_main(argc, argv); }
