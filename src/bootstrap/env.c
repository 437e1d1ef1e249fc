/* Rank, world size, local rank and rendezvous address from tutti's, torchrun's, Open MPI's,
 * MPICH's (Hydra's PMI), PMIx's or Slurm's variables; the first family with a rank wins, and
 * its local-rank variable is later checked against the hosts the rendezvous found. Under srun
 * without an address, the address comes from the step (docs/launching.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"

static int parse_int(const char *s, long lo, long hi, int *out) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end != '\0' || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

/* "host:port" with the port after the last colon. */
static int parse_addr(const char *s, tutti_env_info_t *out) {
  const char *colon = strrchr(s, ':');
  int port;
  if (!colon || colon == s || (size_t)(colon - s) >= sizeof out->host) return -1;
  if (parse_int(colon + 1, 1, 65535, &port)) return -1;
  memcpy(out->host, s, (size_t)(colon - s));
  out->host[colon - s] = '\0';
  out->port = (uint16_t)port;
  return 0;
}

/* The first host of a Slurm host list: "n1,n2" -> n1, "node[03-04,7],gpu1" -> node03,
 * "rack[1-2]-n[5-6]" -> rack1-n5. 0 on success. */
int tutti__env_first_host(const char *list, char *out, size_t outlen) {
  size_t o = 0;
  int in_bracket = 0, skipping = 0;
  for (const char *p = list; *p; p++) {
    if (!in_bracket && *p == ',') break;
    if (*p == '[') {
      if (in_bracket) return -1;
      in_bracket = 1, skipping = 0;
      continue;
    }
    if (*p == ']') {
      if (!in_bracket) return -1;
      in_bracket = 0;
      continue;
    }
    if (in_bracket && (*p == ',' || *p == '-')) skipping = 1; /* only the range's start */
    if (in_bracket && skipping) continue;
    if (o + 1 >= outlen) return -1;
    out[o++] = *p;
  }
  if (in_bracket || o == 0) return -1;
  out[o] = '\0';
  return 0;
}

/* A port the ranks of one Slurm step agree on without talking: the step's reserved port
 * (srun --resv-ports), else one from a hash of the job and step ids in 10000-32767, below
 * Linux's ephemeral range, so it is not some connection's local port already. */
static int slurm_port(const char *resv, const char *job, const char *step) {
  int port;
  if (resv && *resv) {
    char first[8];
    size_t n = strcspn(resv, "-,");
    if (n < sizeof first) {
      memcpy(first, resv, n);
      first[n] = '\0';
      if (parse_int(first, 1, 65535, &port) == 0) return port;
    }
  }
  uint32_t h = 2166136261u; /* FNV-1a over "job.step" */
  for (const char *p = job; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
  h = (h ^ '.') * 16777619u;
  for (const char *p = step; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
  return 10000 + (int)(h % 22768);
}

/* Under srun (SLURM_PROCID is this rank, and the job and step ids are set): rank 0 runs on the
 * step's first node, so that is the host, else the node srun was started from. */
static int slurm_addr(tutti_lookup_fn get, void *ctx, tutti_env_info_t *out) {
  const char *procid = get("SLURM_PROCID", ctx), *job = get("SLURM_JOB_ID", ctx),
             *step = get("SLURM_STEP_ID", ctx);
  int r;
  if (!procid || parse_int(procid, 0, TUTTI_MAX_RANKS - 1, &r) || r != out->rank || !job ||
      !*job || !step || !*step)
    return -1;
  const char *list = get("SLURM_STEP_NODELIST", ctx);
  if (!list || !*list) list = get("SLURM_JOB_NODELIST", ctx);
  const char *launch = get("SLURM_LAUNCH_NODE_IPADDR", ctx);
  if (!(list && *list && tutti__env_first_host(list, out->host, sizeof out->host) == 0)) {
    if (!launch || !*launch || strlen(launch) >= sizeof out->host) return -1;
    snprintf(out->host, sizeof out->host, "%s", launch);
  }
  out->port = (uint16_t)slurm_port(get("SLURM_STEP_RESV_PORTS", ctx), job, step);
  return 0;
}

/* The rendezvous address: TUTTI_ADDR, else MASTER_ADDR and MASTER_PORT, else Slurm's step. */
static tutti_result_t find_addr(tutti_lookup_fn get, void *ctx, tutti_env_info_t *out,
                                char *err, size_t errlen) {
  const char *a = get("TUTTI_ADDR", ctx);
  if (a && *a) {
    if (parse_addr(a, out) == 0) return TUTTI_SUCCESS;
    snprintf(err, errlen, "TUTTI_ADDR=%s is not host:port", a);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  const char *h = get("MASTER_ADDR", ctx), *p = get("MASTER_PORT", ctx);
  int port;
  if (h && *h && p && *p) {
    if (strlen(h) >= sizeof out->host || parse_int(p, 1, 65535, &port)) {
      snprintf(err, errlen, "MASTER_ADDR=%s MASTER_PORT=%s is not a usable address", h, p);
      return TUTTI_ERR_INVALID_ARGUMENT;
    }
    snprintf(out->host, sizeof out->host, "%s", h);
    out->port = (uint16_t)port;
    return TUTTI_SUCCESS;
  }
  if (slurm_addr(get, ctx, out) == 0) return TUTTI_SUCCESS;
  snprintf(err, errlen, "no rendezvous address: set TUTTI_ADDR=host:port or MASTER_ADDR and "
                        "MASTER_PORT (under srun it is derived from the step's node list)");
  return TUTTI_ERR_INVALID_ARGUMENT;
}

tutti_result_t tutti__env_parse(tutti_lookup_fn get, void *ctx, tutti_env_info_t *out,
                                char *err, size_t errlen) {
  /* size2: where the family's own size variable is missing (PMIx sets only the rank). */
  static const struct {
    const char *rank, *size, *size2, *local, *source;
  } families[] = {
      {"TUTTI_RANK", "TUTTI_WORLD_SIZE", NULL, "LOCAL_RANK", "tutti"},
      {"RANK", "WORLD_SIZE", NULL, "LOCAL_RANK", "torchrun"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", NULL, "OMPI_COMM_WORLD_LOCAL_RANK",
       "openmpi"},
      {"PMI_RANK", "PMI_SIZE", NULL, "MPI_LOCALRANKID", "mpich"},
      {"PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_LOCAL_RANK", "pmix"},
      {"SLURM_PROCID", "SLURM_NTASKS", NULL, "SLURM_LOCALID", "slurm"},
  };
  memset(out, 0, sizeof *out);
  out->local_rank = -1;
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
    const char *r = get(families[i].rank, ctx), *s = get(families[i].size, ctx);
    if (!r || !*r) continue;
    if ((!s || !*s) && families[i].size2) s = get(families[i].size2, ctx);
    if (parse_int(s, 1, TUTTI_MAX_RANKS, &out->size) ||
        parse_int(r, 0, out->size - 1, &out->rank)) {
      snprintf(err, errlen, "%s=%s and %s=%s are not a rank within a world size",
               families[i].rank, r, families[i].size, s ? s : "(unset)");
      return TUTTI_ERR_INVALID_ARGUMENT;
    }
    out->source = families[i].source;
    out->local_var = families[i].local;
    const char *l = get(families[i].local, ctx);
    if (l && *l && parse_int(l, 0, out->rank, &out->local_rank)) {
      /* A local rank is never above the global one: ranks below it fill the host first. */
      snprintf(err, errlen, "%s=%s is not a local rank from 0 to %s=%d", families[i].local, l,
               families[i].rank, out->rank);
      return TUTTI_ERR_INVALID_ARGUMENT;
    }
    return find_addr(get, ctx, out, err, errlen);
  }
  snprintf(err, errlen, "no rank in the environment: set TUTTI_RANK, TUTTI_WORLD_SIZE and "
                        "TUTTI_ADDR (or launch with torchrun, mpirun (Open MPI or MPICH) or "
                        "srun)");
  return TUTTI_ERR_INVALID_ARGUMENT;
}

int tutti__env_local_mismatch(const tutti_rdv_entry_t *table, int nranks, char *err,
                              size_t errlen) {
  for (int r = 0; r < nranks; r++) {
    if (!table[r].local_claim) continue;
    int index = 0, on_host = 0;
    for (int q = 0; q < nranks; q++) {
      int same = !strcmp(table[q].host, table[r].host) &&
                 !strcmp(table[q].boot_id, table[r].boot_id);
      on_host += same;
      index += same && q < r;
    }
    if (table[r].local_claim - 1 != index) {
      snprintf(err, errlen, "rank %d (pid %d on %.64s) was started as local rank %d by its "
               "launcher (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or "
               "SLURM_LOCALID), but the rendezvous found it is local rank %d of the %d ranks on "
               "that host: the launcher's variables belong to another job or another numbering",
               r, (int)table[r].pid, table[r].host, table[r].local_claim - 1, index, on_host);
      return 1;
    }
  }
  return 0;
}
