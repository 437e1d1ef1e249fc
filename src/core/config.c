/* The one table of TUTTI_* variables: name, default, documentation, and its parser. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/config_parse.h"
#include "core/internal.h"
#include "tune/online.h"

#define STR_(x) #x
#define STR(x) STR_(x) /* a constant's value in a help text */

static const tutti_config_var_t config_vars[] = {
    {"TUTTI_DEBUG", "warn", "log level: none, warn, info or trace"},
    {"TUTTI_DEBUG_SUBSYS", "", "comma list of subsystems to log (boot,shm,net,coll); empty: all"},
    {"TUTTI_DEBUG_FILE", "", "append logs to this file instead of stderr; %h: host name, "
                             "%p: pid (e.g. /tmp/tutti.%h.%p.log)"},
    {"TUTTI_TRANSPORT", "auto", "auto (shm within a host, tcp across), shm, or tcp"},
    {"TUTTI_ALGO", "auto", "algorithm for every collective: auto or a name from tutti-info"},
    {"TUTTI_TIMEOUT", "600", "seconds before a stuck operation fails with TUTTI_ERR_TIMEOUT"},
    {"TUTTI_INIT_TIMEOUT", "", "seconds the rendezvous of tutti_comm_init* waits for every rank "
                               "before failing with TUTTI_ERR_TIMEOUT naming the missing ones; "
                               "empty: 300 or TUTTI_TIMEOUT, whichever is smaller"},
    {"TUTTI_SOCKET_IFNAME", "", "network interface to listen on; empty: loopback for the "
                                "unique id, the route to the rendezvous for data"},
    {"TUTTI_CHUNK_SIZE", "262144", "bytes per pipelined chunk of the ring, chain and "
                                   "single-copy reductions; unset: a quarter of the measured "
                                   "L2, a power of two from 64 KiB to 1 MiB (this default "
                                   "where L2 is unknown)"},
    {"TUTTI_NSOCKS", "1", "TCP sockets per peer pair (1 to 16); a pair's byte stream is "
                          "striped over them in 128 KiB pieces, for links one stream cannot fill"},
    {"TUTTI_SHM_QUEUE_SIZE", "1048576", "bytes of the largest directed shared-memory queue; "
                                        "each local rank's queue pool is 4 of them"},
    {"TUTTI_SPIN_US", "50", "microseconds to busy-wait before sleeping (when not oversubscribed)"},
    {"TUTTI_CMA", "1", "1: ranks of one host read each other's buffers directly "
                       "(process_vm_readv) where the kernel allows it; 0: always copy through "
                       "shared-memory queues"},
    {"TUTTI_MEMBARRIER", "1", "1: where a host's ranks do not outnumber its CPUs and every "
                              "one can register for the kernel's expedited global memory "
                              "barrier, one-shot posts publish with a plain store and a rank "
                              "about to sleep on a post issues the barrier; 0: every post is a "
                              "sequentially consistent store"},
    {"TUTTI_REPORT_SIGNAL", "1", "1: SIGUSR1 logs what each communicator waits for (only if the "
                                 "program has no SIGUSR1 handler of its own); 0: leave SIGUSR1 alone"},
    {"TUTTI_TUNE", "", "algorithm per collective and size range, overriding the cost model, "
                       "e.g. allreduce:0-64k:recursive_doubling,64k-:ring;allgather:0-1m:"
                       "recursive_doubling (sizes as tutti-bench counts them, k/m/g suffixes)"},
    {"TUTTI_DETERMINISTIC", "0", "1: every reduction folds the ranks in rank order, so results "
                                 "are bitwise the same whatever the algorithm, size or chunking"},
    {"TUTTI_TUNE_MEASURE", "1", "1: the tuner's parameters come from this host's cache file "
                                "(~/.cache/tutti/machine), or are measured at init (rank 0, "
                                "tens of ms) and cached; force: measure now and refresh the "
                                "cache; 0: documented fallbacks (docs/tuning.md)"},
    {"TUTTI_TUNE_ONLINE", "1", "1: the first calls of each size of 4 KiB or more (the model "
                               "picking) try the model's best candidates, up to "
                               STR(TUTTI_ONLINE_MAX_CAND) ", and keep the fastest by the "
                               "slowest rank's time if " STR(TUTTI_ONLINE_MARGIN_PCT) "% faster "
                               "than the model's pick (docs/tuning.md); 0: the model's pick; "
                               "rank 0's setting holds"},
    {"TUTTI_TUNE_REMEMBER", "1", "1: the sizes online selection settled are kept in this "
                                 "host's cache (~/.cache/tutti/picks, by rank 0 at "
                                 "tutti_comm_destroy), and a later job of the same shape "
                                 "starts them settled (re-checked like any other); 0: every "
                                 "job tries afresh; rank 0's setting holds"},
    {"TUTTI_TUNE_FILE", "", "tuning table (machine parameters and per-size algorithm rules, "
                            "docs/tuning.md) rank 0 loads at init, or saves its measurement "
                            "to if the file does not exist; tutti-tune writes one"},
    {"TUTTI_TUNE_NET", "1", "the tuner's figures for the link between hosts: 1: measured at "
                            "init when the job spans hosts (rank 0 with a rank of another "
                            "host, about 4 MiB, 35-50 ms at 1 Gbit/s); 0: not measured (the tcp "
                            "loopback figures stand for it); GBPS[,ALPHA_US]: given, e.g. "
                            "0.118,60"},
    {"TUTTI_HOST_ID", "", "this process's host identity: ranks with the same id are one host "
                          "(they must share /dev/shm); empty: the host name plus the kernel's "
                          "boot id"},
    {"TUTTI_SECRET", "", "hex job secret for tutti_comm_init_env; tutti-run sets a random one"},
    /* Read by tutti_comm_init_env (bootstrap/env.c), not parsed here: listed so that
     * tutti-info and docs/env.md show every variable the library reads. */
    {"TUTTI_RANK", "", "this rank, for tutti_comm_init_env (else RANK, OMPI_COMM_WORLD_RANK, "
                       "PMI_RANK, PMIX_RANK or SLURM_PROCID)"},
    {"TUTTI_WORLD_SIZE", "", "number of ranks (else WORLD_SIZE, OMPI_COMM_WORLD_SIZE, "
                             "PMI_SIZE or SLURM_NTASKS)"},
    {"TUTTI_ADDR", "", "host:port of the rendezvous rank 0 hosts (else MASTER_ADDR and "
                       "MASTER_PORT; under srun derived from the step, docs/launching.md)"},
    {"LOCAL_RANK", "", "the launcher's local rank (or OMPI_COMM_WORLD_LOCAL_RANK, "
                       "MPI_LOCALRANKID, SLURM_LOCALID), checked against the rendezvous"},
};

const tutti_config_var_t *tutti__config_table(int *count) {
  *count = (int)(sizeof config_vars / sizeof config_vars[0]);
  return config_vars;
}

static const char *value_of(tutti_config_lookup_fn get, void *ctx, const char *name) {
  const char *v = get(name, ctx);
  if (v && *v) return v;
  int n;
  const tutti_config_var_t *t = tutti__config_table(&n);
  for (int i = 0; i < n; i++)
    if (!strcmp(t[i].name, name)) return t[i].def;
  return "";
}

/* Accepts decimal digits with an optional k/m/g suffix (powers of 1024). A sign or leading
 * space is refused (strtoull would read "-64" as 2^64 - 64), and so is a value whose suffix
 * takes it past SIZE_MAX, which would otherwise wrap to a small size. */
static int parse_size(const char *s, size_t *out) {
  if (*s < '0' || *s > '9') return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || v > SIZE_MAX) return -1;
  unsigned shift = 0;
  switch (*end) {
  case 'k': case 'K': shift = 10; end++; break;
  case 'm': case 'M': shift = 20; end++; break;
  case 'g': case 'G': shift = 30; end++; break;
  default: break;
  }
  if (*end != '\0' || v > (unsigned long long)(SIZE_MAX >> shift)) return -1;
  *out = (size_t)v << shift;
  return 0;
}

/* Times become int64 nanosecond deadlines (now + seconds * 1e9): NaN, infinity or more than
 * about 30 years would overflow that conversion, so they are refused. */
#define MAX_TIME_VALUE 1e9

static int parse_double(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end != '\0' || !(v >= 0 && v <= MAX_TIME_VALUE)) return -1;
  *out = v;
  return 0;
}

tutti_result_t tutti__config_parse(tutti_config_lookup_fn get, void *ctx, tutti_config_t *cfg,
                                   char *err, size_t errlen) {
  memset(cfg, 0, sizeof *cfg);
  const char *v = value_of(get, ctx, "TUTTI_TRANSPORT");
  if (!strcasecmp(v, "auto")) cfg->transport = TUTTI_TRANSPORT_AUTO;
  else if (!strcasecmp(v, "shm")) cfg->transport = TUTTI_TRANSPORT_SHM;
  else if (!strcasecmp(v, "tcp")) cfg->transport = TUTTI_TRANSPORT_TCP;
  else goto bad_transport;

  snprintf(cfg->algo, sizeof cfg->algo, "%s", value_of(get, ctx, "TUTTI_ALGO"));
  snprintf(cfg->ifname, sizeof cfg->ifname, "%s", value_of(get, ctx, "TUTTI_SOCKET_IFNAME"));
  if (parse_double(value_of(get, ctx, "TUTTI_TIMEOUT"), &cfg->timeout_s) || cfg->timeout_s <= 0) {
    snprintf(err, errlen, "TUTTI_TIMEOUT=%s is not a positive number of seconds up to 1e9",
             value_of(get, ctx, "TUTTI_TIMEOUT"));
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  /* A job that never forms is usually a launch mistake: it should not wait as long as a
   * collective may legitimately take. */
  v = value_of(get, ctx, "TUTTI_INIT_TIMEOUT");
  if (!*v) {
    cfg->init_timeout_s = cfg->timeout_s < 300 ? cfg->timeout_s : 300;
  } else if (parse_double(v, &cfg->init_timeout_s) || cfg->init_timeout_s <= 0) {
    snprintf(err, errlen, "TUTTI_INIT_TIMEOUT=%s is not a positive number of seconds up to "
             "1e9", v);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  const char *chunk = get("TUTTI_CHUNK_SIZE", ctx);
  cfg->chunk_auto = !chunk || !*chunk;
  if (parse_size(value_of(get, ctx, "TUTTI_CHUNK_SIZE"), &cfg->chunk_bytes) ||
      cfg->chunk_bytes < 64) {
    snprintf(err, errlen, "TUTTI_CHUNK_SIZE=%s is not a size of at least 64 bytes",
             value_of(get, ctx, "TUTTI_CHUNK_SIZE"));
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  size_t nsocks;
  if (parse_size(value_of(get, ctx, "TUTTI_NSOCKS"), &nsocks) || nsocks < 1 || nsocks > 16) {
    snprintf(err, errlen, "TUTTI_NSOCKS=%s is not a number of sockets from 1 to 16",
             value_of(get, ctx, "TUTTI_NSOCKS"));
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  cfg->nsocks = (int)nsocks;
  if (parse_size(value_of(get, ctx, "TUTTI_SHM_QUEUE_SIZE"), &cfg->shm_queue_bytes) ||
      cfg->shm_queue_bytes < 4096 || (cfg->shm_queue_bytes & (cfg->shm_queue_bytes - 1))) {
    snprintf(err, errlen, "TUTTI_SHM_QUEUE_SIZE=%s is not a power of two of at least 4096",
             value_of(get, ctx, "TUTTI_SHM_QUEUE_SIZE"));
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  if (parse_double(value_of(get, ctx, "TUTTI_SPIN_US"), &cfg->spin_us)) {
    snprintf(err, errlen, "TUTTI_SPIN_US=%s is not a number of microseconds from 0 to 1e9",
             value_of(get, ctx, "TUTTI_SPIN_US"));
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  struct { const char *name; int *out; } flags[] = {
      {"TUTTI_CMA", &cfg->cma},
      {"TUTTI_MEMBARRIER", &cfg->asym_fence},
      {"TUTTI_TUNE_ONLINE", &cfg->tune_online},
      {"TUTTI_TUNE_REMEMBER", &cfg->tune_remember},
      {"TUTTI_REPORT_SIGNAL", &cfg->report_signal},
      {"TUTTI_DETERMINISTIC", &cfg->deterministic},
  };
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
    v = value_of(get, ctx, flags[i].name);
    if (strcmp(v, "0") && strcmp(v, "1")) {
      snprintf(err, errlen, "%s=%s is not 0 or 1", flags[i].name, v);
      return TUTTI_ERR_INVALID_ARGUMENT;
    }
    *flags[i].out = v[0] == '1';
  }
  v = value_of(get, ctx, "TUTTI_TUNE_MEASURE");
  if (!strcmp(v, "0") || !strcmp(v, "1")) cfg->tune_measure = v[0] == '1';
  else if (!strcmp(v, "force")) cfg->tune_measure = 2;
  else {
    snprintf(err, errlen, "TUTTI_TUNE_MEASURE=%s is not 0, 1 or force", v);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  v = value_of(get, ctx, "TUTTI_TUNE_NET");
  cfg->tune_net = 1;
  if (!strcmp(v, "0") || !strcmp(v, "1")) {
    cfg->tune_net = v[0] == '1';
  } else {
    char *end;
    errno = 0;
    double g = strtod(v, &end), a = 0;
    int ok = !errno && end != v && g > 0 && g < 1e6;
    if (ok && *end == ',') {
      char *a_text = end + 1;
      a = strtod(a_text, &end);
      ok = end != a_text && a > 0 && a < 1e9;
    }
    if (!ok || *end) {
      snprintf(err, errlen, "TUTTI_TUNE_NET=%s is not 0, 1 or GBPS[,ALPHA_US] (positive "
               "numbers, e.g. 0.118,60)", v);
      return TUTTI_ERR_INVALID_ARGUMENT;
    }
    cfg->net_bps = g * 1e9;
    cfg->net_alpha_s = a * 1e-6;
  }
  v = value_of(get, ctx, "TUTTI_TUNE_FILE");
  if (strlen(v) >= sizeof cfg->tune_file) {
    snprintf(err, errlen, "TUTTI_TUNE_FILE is longer than %zu characters",
             sizeof cfg->tune_file - 1);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  snprintf(cfg->tune_file, sizeof cfg->tune_file, "%s", v);
  v = value_of(get, ctx, "TUTTI_HOST_ID");
  if (strlen(v) >= sizeof cfg->host_id) {
    snprintf(err, errlen, "TUTTI_HOST_ID is longer than %zu characters",
             sizeof cfg->host_id - 1);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  snprintf(cfg->host_id, sizeof cfg->host_id, "%s", v);
  if (tutti__tune_parse(value_of(get, ctx, "TUTTI_TUNE"), cfg->tune, TUTTI_TUNE_MAX_RULES,
                        &cfg->ntune, err, errlen) != TUTTI_SUCCESS)
    return TUTTI_ERR_INVALID_ARGUMENT;
  return TUTTI_SUCCESS;

bad_transport:
  snprintf(err, errlen, "TUTTI_TRANSPORT=%s is not one of auto, shm, tcp", v);
  return TUTTI_ERR_INVALID_ARGUMENT;
}

static const char *env_lookup(const char *name, void *ctx) {
  (void)ctx;
  return getenv(name);
}

tutti_result_t tutti__config_load(tutti_config_t *cfg, char *err, size_t errlen) {
  return tutti__config_parse(env_lookup, NULL, cfg, err, errlen);
}
