/*
 * tutti-sim: runs the real algorithm code at 1,024 ranks (or any n) as threads of this
 * process over the in-memory transport, for every collective and every algorithm that can
 * run it, checks each rank's result, and prints per call what crossed the transport: messages
 * and bytes per rank (the most any rank sent, and the mean), distinct peers each rank sent to
 * (peers) and received from (rpeers), the most of either, the critical path (the longest chain of
 * dependent messages, and the most bytes along one), an alpha-beta time replayed from the
 * messages themselves (sim), and the tuner's cost model for the same alpha and beta (model).
 * Ends with "N passed, M failed" and exits non-zero when any failed.
 *
 *   tutti-sim [-n N[,N...]] [-c COLL[,...]] [-a ALGO[,...]] [--count C] [--alpha S]
 *             [--bw BYTES_PER_S] [--chunk BYTES] [--stack KIB] [--timeout S] [--quiet]
 *   tutti-sim --model [-n N[,N...]] [--count C] ...     the model alone, nothing run
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "algo/tuner.h"
#include "sim.h"
#include "transport/mem.h"

#define MAX_LIST 32

typedef struct opts {
  int ns[MAX_LIST], nn;
  const char *colls, *algos;
  size_t count;
  double alpha, bw, timeout;
  size_t stack, chunk;
  int quiet, model_only, chunk_set;
} opts_t;

/* One (collective, algorithm) pair, and what a run of it found. */
typedef struct sim_case {
  const sim_coll_t *coll;
  const tutti_algo_t *algo;
  tutti_result_t res;
  long wrong;
  int wrong_rank;
  char why[200];
  double wall_s;
  tutti_mem_stats_t max;
  double avg_msgs;
} sim_case_t;

typedef struct shared {
  const opts_t *o;
  int n;
  tutti_comm_t *comms;
  sim_case_t *cases;
  int ncases, first; /* the cases to run: first .. ncases-1 */
  pthread_barrier_t bar;
  pthread_mutex_t mu;
  int stop; /* a call failed with an error: the group is spent, start a new one */
  int64_t t0;
} shared_t;

typedef struct rank_arg {
  shared_t *s;
  int rank;
} rank_arg_t;

static int in_list(const char *list, const char *name) {
  if (!list) return 1;
  size_t len = strlen(name);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == len && !strncmp(p, name, len)) return 1;
    if (!e) break;
    p = e + 1;
  }
  return 0;
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Makes comm run algo for coll (as TUTTI_ALGO would). 0 where algo cannot run it here. */
static int force(tutti_comm_t comm, const tutti_algo_t *a, tutti_coll_t coll, size_t count) {
  if (!a->fn[coll]) return 0;
  tutti_coll_args_t args = {.coll = coll, .count = count, .esize = 4};
  tutti_tune_query_t q;
  tutti_pick_why_t why;
  tutti__tune_query(comm, &args, &q);
  if (tutti__tune_pick(&q, NULL, 0, a->name, &why) != a || why != TUTTI_PICK_FORCED) return 0;
  snprintf(comm->cfg.algo, sizeof comm->cfg.algo, "%s", a->name);
  memset(comm->pick_cache, 0, sizeof comm->pick_cache);
  return 1;
}

static void fold_stats(shared_t *s, sim_case_t *c) {
  memset(&c->max, 0, sizeof c->max);
  double msgs = 0;
  for (int r = 0; r < s->n; r++) {
    tutti_mem_stats_t st;
    tutti__mem_stats(s->comms[r], &st);
    tutti_mem_stats_t *m = &c->max;
#define MAX_OF(f) if (st.f > m->f) m->f = st.f
    MAX_OF(msgs_sent); MAX_OF(bytes_sent); MAX_OF(msgs_rcvd); MAX_OF(bytes_rcvd);
    MAX_OF(peers_sent); MAX_OF(peers_rcvd); MAX_OF(queues_out); MAX_OF(steps);
    MAX_OF(path_bytes); MAX_OF(model_s);
#undef MAX_OF
    msgs += (double)st.msgs_sent;
  }
  c->avg_msgs = msgs / s->n;
}

static void *rank_main(void *p) {
  rank_arg_t *ra = p;
  shared_t *s = ra->s;
  int rank = ra->rank;
  tutti_comm_t comm = s->comms[rank];
  for (int i = s->first; i < s->ncases; i++) {
    sim_case_t *c = &s->cases[i];
    tutti__mem_stats_reset(comm);
    tutti__mem_set_model(comm, s->o->alpha, 1.0 / s->o->bw);
    force(comm, c->algo, c->coll->coll, s->o->count);
    if (rank == 0) s->t0 = now_ns();
    pthread_barrier_wait(&s->bar);
    long wrong;
    tutti_result_t res = sim_run(comm, rank, s->n, c->coll->coll, s->o->count, &wrong);
    if (res != TUTTI_SUCCESS || wrong >= 0) {
      pthread_mutex_lock(&s->mu);
      if (c->res == TUTTI_SUCCESS && c->wrong < 0) {
        c->res = res;
        c->wrong = wrong;
        c->wrong_rank = rank;
        snprintf(c->why, sizeof c->why, "%s", res ? tutti_comm_last_error(comm) : "");
      }
      if (res != TUTTI_SUCCESS) s->stop = 1;
      pthread_mutex_unlock(&s->mu);
    }
    pthread_barrier_wait(&s->bar);
    if (rank == 0) {
      c->wall_s = (double)(now_ns() - s->t0) * 1e-9;
      fold_stats(s, c);
    }
    pthread_barrier_wait(&s->bar); /* rank 0 read every rank's counters */
    if (s->stop) break;
  }
  return NULL;
}

/* Runs cases first .. ncases-1 on a group of n thread ranks; returns the index after the
 * last case run (a call that failed with an error spends the group). */
static int run_group(shared_t *s) {
  tutti_config_t cfg;
  char err[256];
  if (tutti__config_load(&cfg, err, sizeof err) != TUTTI_SUCCESS) {
    fprintf(stderr, "tutti-sim: %s\n", err);
    exit(2);
  }
  cfg.timeout_s = s->o->timeout;
  if (s->o->chunk_set) cfg.chunk_bytes = s->o->chunk;
  if (tutti__comm_init_threads_cfg(s->comms, s->n, &cfg) != TUTTI_SUCCESS) {
    fprintf(stderr, "tutti-sim: cannot make %d thread communicators\n", s->n);
    exit(2);
  }
  pthread_t *th = calloc((size_t)s->n, sizeof *th);
  rank_arg_t *args = calloc((size_t)s->n, sizeof *args);
  if (!th || !args) exit(2);
  pthread_barrier_init(&s->bar, NULL, (unsigned)s->n);
  s->stop = 0;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, s->o->stack);
  for (int r = 0; r < s->n; r++) {
    args[r] = (rank_arg_t){s, r};
    if (pthread_create(&th[r], &attr, rank_main, &args[r]) != 0) {
      fprintf(stderr, "tutti-sim: cannot start thread %d of %d\n", r, s->n);
      exit(2);
    }
  }
  pthread_attr_destroy(&attr);
  for (int r = 0; r < s->n; r++) pthread_join(th[r], NULL);
  pthread_barrier_destroy(&s->bar);
  int next = s->ncases;
  for (int i = s->first; i < s->ncases; i++)
    if (s->cases[i].res != TUTTI_SUCCESS) {
      next = i + 1;
      break;
    }
  for (int r = 0; r < s->n; r++) tutti_comm_destroy(s->comms[r]);
  free(th);
  free(args);
  return next;
}

/* The tuner's prediction for a at n ranks, with the simulator's alpha and beta (and no
 * reduction cost: the sim's clock has none), or a negative number where it has no model. */
static double model_s(const opts_t *o, const tutti_algo_t *a, tutti_coll_t coll, int n) {
  if (!a->cost) return -1;
  tutti_tune_query_t q = {0};
  q.coll = coll;
  q.bytes = tutti__tune_bytes(coll, o->count, 4, n);
  q.nranks = n;
  q.one_host = 1;
  q.chunk_bytes = o->chunk;
  q.cma = a->needs_cma;
  tutti_cost_params_t p = {"sim", o->alpha, 1.0 / o->bw, 0, 0, 1.0 / o->bw};
  return a->cost(&q, &p);
}

static void print_header(void) {
  printf("%-15s %-18s %5s %6s %-6s %9s %9s %9s %9s %5s %6s %8s %9s %10s %10s\n", "coll", "algo",
         "n", "count", "result", "wall_ms", "msgs_max", "msgs_avg", "B_max", "peers", "rpeers",
         "steps", "path_B", "sim_us", "model_us");
}

static void print_case(const opts_t *o, int n, const sim_case_t *c) {
  const char *r = c->res != TUTTI_SUCCESS ? "ERROR" : c->wrong >= 0 ? "WRONG" : "ok";
  double m = model_s(o, c->algo, c->coll->coll, n);
  char model[32] = "-";
  if (m >= 0) snprintf(model, sizeof model, "%.1f", m * 1e6);
  printf("%-15s %-18s %5d %6zu %-6s %9.1f %9llu %9.1f %9llu %5d %6d %8llu %9llu %10.1f %10s\n",
         c->coll->name, c->algo->name, n, o->count, r, c->wall_s * 1e3,
         (unsigned long long)c->max.msgs_sent, c->avg_msgs,
         (unsigned long long)c->max.bytes_sent, c->max.peers_sent, c->max.peers_rcvd,
         (unsigned long long)c->max.steps, (unsigned long long)c->max.path_bytes,
         c->max.model_s * 1e6, model);
  if (c->res != TUTTI_SUCCESS)
    printf("    rank %d: %s: %s\n", c->wrong_rank, tutti_result_string(c->res), c->why);
  else if (c->wrong >= 0)
    printf("    rank %d: wrong result at element %ld\n", c->wrong_rank, c->wrong);
}

/* Every (collective, algorithm) pair selected that can run at n ranks. */
static int make_cases(const opts_t *o, int n, sim_case_t *cases) {
  int nc, na, k = 0;
  const sim_coll_t *colls = sim_colls(&nc);
  const tutti_algo_t *algos = tutti__algo_table(&na);
  tutti_comm_t probe[2];
  tutti_config_t cfg;
  char err[256];
  if (tutti__config_load(&cfg, err, sizeof err) != TUTTI_SUCCESS ||
      tutti__comm_init_threads_cfg(probe, 2, &cfg) != TUTTI_SUCCESS)
    exit(2);
  /* What can run depends on n only through the tuner's query, which a communicator of two
   * thread ranks (single-copy reads decided as for n) answers for n once its size is set to
   * n (no message is sent). */
  int real_n = probe[0]->nranks;
  probe[0]->nranks = n;
  probe[0]->nlocal = n;
  for (int ci = 0; ci < nc; ci++) {
    if (!in_list(o->colls, colls[ci].name)) continue;
    for (int ai = 0; ai < na; ai++) {
      if (!in_list(o->algos, algos[ai].name)) continue;
      if (!force(probe[0], &algos[ai], colls[ci].coll, o->count)) continue;
      cases[k++] = (sim_case_t){.coll = &colls[ci], .algo = &algos[ai], .wrong = -1};
    }
  }
  probe[0]->nranks = real_n;
  probe[0]->nlocal = real_n;
  tutti_comm_destroy(probe[0]);
  tutti_comm_destroy(probe[1]);
  return k;
}

static void usage(void) {
  fprintf(stderr, "usage: tutti-sim [-n N[,N...]] [-c COLL[,...]] [-a ALGO[,...]] [--count C] "
          "[--alpha SECONDS] [--bw BYTES_PER_SECOND] [--chunk BYTES] [--stack KIB] "
          "[--timeout SECONDS] "
          "[--quiet] [--model]\n");
  exit(2);
}

static void parse(int argc, char **argv, opts_t *o) {
  *o = (opts_t){.count = 4, .alpha = 5e-6, .bw = 12.5e9, .timeout = 300, .stack = 256 << 10};
  tutti_config_t cfg;
  char err[256];
  if (tutti__config_load(&cfg, err, sizeof err) != TUTTI_SUCCESS) {
    fprintf(stderr, "tutti-sim: %s\n", err);
    exit(2);
  }
  o->chunk = cfg.chunk_bytes;
  o->ns[0] = 1024;
  o->nn = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--quiet")) { o->quiet = 1; continue; }
    if (!strcmp(a, "--model")) { o->model_only = 1; continue; }
    if (!v) usage();
    i++;
    if (!strcmp(a, "-n")) {
      o->nn = 0;
      for (char *p = (char *)v; *p && o->nn < MAX_LIST;) {
        o->ns[o->nn++] = (int)strtol(p, &p, 10);
        if (*p == ',') p++;
        else if (*p) usage();
      }
    } else if (!strcmp(a, "-c")) o->colls = v;
    else if (!strcmp(a, "-a")) o->algos = v;
    else if (!strcmp(a, "--count")) o->count = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--alpha")) o->alpha = atof(v);
    else if (!strcmp(a, "--bw")) o->bw = atof(v);
    else if (!strcmp(a, "--stack")) o->stack = strtoull(v, NULL, 10) << 10;
    else if (!strcmp(a, "--timeout")) o->timeout = atof(v);
    else if (!strcmp(a, "--chunk")) {
      o->chunk = strtoull(v, NULL, 10);
      o->chunk_set = 1;
    }
    else usage();
  }
  for (int i = 0; i < o->nn; i++)
    if (o->ns[i] < 1 || o->ns[i] > 65536) usage();
  if (!(o->bw > 0) || o->alpha < 0 || !(o->timeout > 0) || o->stack < (64 << 10) || !o->chunk)
    usage();
}

/* The model alone: predicted microseconds of every algorithm with a model, per n. */
static void print_model(const opts_t *o) {
  int nc, na;
  const sim_coll_t *colls = sim_colls(&nc);
  const tutti_algo_t *algos = tutti__algo_table(&na);
  printf("model: alpha %.2f us, %.2f GB/s, %zu float32 per rank (reduction cost not "
         "counted)\n%-15s %-18s", o->alpha * 1e6, o->bw / 1e9, o->count, "coll", "algo");
  for (int i = 0; i < o->nn; i++) printf(" %10d", o->ns[i]);
  printf("\n");
  for (int ci = 0; ci < nc; ci++)
    for (int ai = 0; ai < na; ai++) {
      if (!in_list(o->colls, colls[ci].name) || !in_list(o->algos, algos[ai].name)) continue;
      if (!algos[ai].fn[colls[ci].coll] || !algos[ai].cost || algos[ai].needs_cma ||
          algos[ai].needs_mbox || model_s(o, &algos[ai], colls[ci].coll, 8) < 0)
        continue;
      printf("%-15s %-18s", colls[ci].name, algos[ai].name);
      for (int i = 0; i < o->nn; i++)
        printf(" %10.1f", model_s(o, &algos[ai], colls[ci].coll, o->ns[i]) * 1e6);
      printf("\n");
    }
}

int main(int argc, char **argv) {
  opts_t o;
  parse(argc, argv, &o);
  if (o.model_only) {
    print_model(&o);
    return 0;
  }
  int passed = 0, failed = 0;
  printf("tutti-sim: %zu float32 per rank; sim and model: alpha %.2f us, %.2f GB/s per link\n",
         o.count, o.alpha * 1e6, o.bw / 1e9);
  print_header();
  for (int ni = 0; ni < o.nn; ni++) {
    int n = o.ns[ni];
    shared_t s = {.o = &o, .n = n};
    s.cases = calloc(64, sizeof *s.cases);
    s.comms = calloc((size_t)n, sizeof *s.comms);
    if (!s.cases || !s.comms) return 2;
    pthread_mutex_init(&s.mu, NULL);
    s.ncases = make_cases(&o, n, s.cases);
    int64_t t0 = now_ns();
    for (s.first = 0; s.first < s.ncases;) s.first = run_group(&s);
    double secs = (double)(now_ns() - t0) * 1e-9;
    for (int i = 0; i < s.ncases; i++) {
      const sim_case_t *c = &s.cases[i];
      int ok = c->res == TUTTI_SUCCESS && c->wrong < 0;
      ok ? passed++ : failed++;
      if (!o.quiet || !ok) print_case(&o, n, c);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("n = %d: %d calls in %.1f s, peak RSS %.0f MiB\n", n, s.ncases, secs,
           (double)ru.ru_maxrss / 1024);
    pthread_mutex_destroy(&s.mu);
    free(s.cases);
    free(s.comms);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
