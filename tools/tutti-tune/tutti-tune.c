/*
 * tutti-tune: sweeps every algorithm the model could pick on this machine, per collective,
 * rank count and size, and writes a tuning table (docs/tuning.md) with this machine's
 * measured parameters and, per size class, the fastest algorithm, for TUTTI_TUNE_FILE. A
 * cluster tunes once per node type and points every job at the file.
 *
 * Method: for each rank count, the tool forks that many ranks on this host (one unique id,
 * tutti_comm_init_rank). Rank 0 decides everything and all ranks follow the same sequence:
 * per round, per size, per algorithm (the order rotated every round, so algorithms
 * alternate), one warm-up call, then as many timed calls as fit a time slice (the count
 * agreed from the slowest rank's warm-up). A cell's time is the slowest rank's mean per
 * call; the table keeps the median over rounds. Algorithms are forced through the
 * communicator's own TUTTI_ALGO setting between calls (this tool links the static library
 * and reaches inside, like tutti-info).
 *
 * --check scores the tuner instead of writing a table: "auto" (the model with online
 * selection, as a job runs it) takes its turn among the forced algorithms in every round, in
 * the same processes, so a process that runs fast or slow as a whole (as this project's VMs
 * do, by 2-4x) runs every contender of a cell alike. Each size's trial calls run before the
 * rounds (untimed: they are a job's first dozen calls of that size); its re-checks run in the
 * timed calls, as they would in a job. The report gives per cell auto's median, its pick,
 * the fastest forced algorithm's median and the ratio.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "algo/algo.h"
#include "algo/tuner.h"
#include "core/internal.h"
#include "tune/model.h"
#include "tune/online.h"

#define MAX_SIZES 16
#define MAX_ALGOS 16
#define MAX_ROUNDS 9
#define MAX_NS 4

static const tutti_coll_t default_colls[] = {TUTTI_COLL_ALLREDUCE, TUTTI_COLL_ALLGATHER,
                                             TUTTI_COLL_REDUCE_SCATTER, TUTTI_COLL_BROADCAST};

typedef struct opts {
  int ns[MAX_NS], nns;
  size_t sizes[MAX_SIZES];
  int nsizes;
  tutti_coll_t colls[8];
  int ncolls;
  int rounds;
  double slice_ms;
  const char *out;
  int check; /* --check: score auto against the forced algorithms, write no table */
} opts_t;

/* Results of one rank count, written by rank 0 into shared memory the parent reads. */
typedef struct results {
  int ok;
  char algo[MAX_ALGOS][24];
  int nalgo;
  /* seconds per call, [coll][size][algo][round]; < 0: the algorithm cannot run there */
  double t[8][MAX_SIZES][MAX_ALGOS][MAX_ROUNDS];
  char pick[8][MAX_SIZES][24]; /* --check: what auto runs after the rounds */
  char err[256];
} results_t;

static size_t count_of(tutti_coll_t c, size_t bytes, int n) {
  size_t per = bytes / 4; /* float32 */
  return c == TUTTI_COLL_ALLGATHER || c == TUTTI_COLL_REDUCE_SCATTER ? per / (size_t)n : per;
}

static tutti_result_t call(tutti_comm_t comm, tutti_coll_t c, float *s, float *r, size_t count) {
  switch (c) {
  case TUTTI_COLL_ALLREDUCE: return tutti_allreduce(s, r, count, TUTTI_FLOAT32, TUTTI_SUM, comm);
  case TUTTI_COLL_ALLGATHER: return tutti_allgather(s, r, count, TUTTI_FLOAT32, comm);
  case TUTTI_COLL_REDUCE_SCATTER:
    return tutti_reduce_scatter(s, r, count, TUTTI_FLOAT32, TUTTI_SUM, comm);
  case TUTTI_COLL_BROADCAST: return tutti_broadcast(s, r, count, TUTTI_FLOAT32, 0, comm);
  default: return TUTTI_ERR_INVALID_ARGUMENT;
  }
}

/* Forces algo ("auto": the tuner) for the next calls of comm. */
static void force(tutti_comm_t comm, const char *algo) {
  snprintf(comm->cfg.algo, sizeof comm->cfg.algo, "%s", algo);
  memset(comm->pick_cache, 0, sizeof comm->pick_cache);
}

/* The slowest rank's value of x (under the tuner's own pick). */
static tutti_result_t slowest(tutti_comm_t comm, double *x) {
  char saved[32];
  snprintf(saved, sizeof saved, "%s", comm->cfg.algo);
  force(comm, "auto");
  tutti_result_t r = tutti_allreduce(x, x, 1, TUTTI_FLOAT64, TUTTI_MAX, comm);
  force(comm, saved);
  return r;
}

/* Whether algo really runs c at this size (forcing one that cannot falls back silently). */
static int runs_here(tutti_comm_t comm, const char *algo, tutti_coll_t c, size_t count) {
  tutti_coll_args_t a = {.coll = c, .count = count, .dtype = TUTTI_FLOAT32, .esize = 4};
  force(comm, algo);
  return !strcmp(tutti__algo_select(comm, &a)->name, algo);
}

/* Seconds per call of c with the current algorithm, the slowest rank's. */
static tutti_result_t time_cell(tutti_comm_t comm, tutti_coll_t c, float *s, float *r,
                                size_t count, double slice_s, double *out) {
  int64_t t0 = tutti__now_ns();
  TRY(call(comm, c, s, r, count));
  double warm = (double)(tutti__now_ns() - t0) / 1e9;
  TRY(slowest(comm, &warm));
  int iters = warm > 0 ? (int)(slice_s / warm) : 1;
  iters = iters < 1 ? 1 : iters > 200 ? 200 : iters;
  t0 = tutti__now_ns();
  for (int i = 0; i < iters; i++) TRY(call(comm, c, s, r, count));
  *out = (double)(tutti__now_ns() - t0) / 1e9 / iters;
  return slowest(comm, out);
}

/* --check: runs every cell under auto until online selection has agreed on its pick (or
 * the model's pick stands: sizes and collectives it does not revise), so that the rounds
 * time what a job runs after its first calls of a size. */
static tutti_result_t settle_auto(tutti_comm_t comm, const opts_t *o, int n, float *s,
                                  float *r) {
  force(comm, "auto");
  for (int ci = 0; ci < o->ncolls; ci++)
    for (int si = 0; si < o->nsizes; si++) {
      size_t count = count_of(o->colls[ci], o->sizes[si], n);
      size_t bytes = tutti__tune_bytes(o->colls[ci], count, 4, n);
      /* the warm-up, every candidate's trials and the call that agrees; a size online
       * selection leaves to the model never settles, and stops there too */
      int most = 2 + TUTTI_ONLINE_MAX_CAND * TUTTI_ONLINE_MAX_REPS;
      for (int i = 0; count && i < most && !tutti__online_settled(comm, (int)o->colls[ci], bytes);
           i++)
        TRY(call(comm, o->colls[ci], s, r, count));
    }
  return TUTTI_SUCCESS;
}

/* --check: the algorithm auto runs in each cell now (rank 0's view; every rank agrees): the
 * settled pick, read from its slot (selecting would count a call and could start a
 * re-check), else the model's. */
static void record_picks(tutti_comm_t comm, const opts_t *o, int n, results_t *res) {
  force(comm, "auto");
  for (int ci = 0; ci < o->ncolls; ci++)
    for (int si = 0; si < o->nsizes; si++) {
      size_t count = count_of(o->colls[ci], o->sizes[si], n);
      tutti_coll_args_t a = {.coll = o->colls[ci], .count = count, .dtype = TUTTI_FLOAT32,
                             .esize = 4};
      tutti_online_slot_t *slot =
          tutti__online_settled(comm, (int)o->colls[ci], tutti__tune_bytes(a.coll, count, 4, n));
      snprintf(res->pick[ci][si], sizeof res->pick[ci][si], "%s",
               !count ? "-" : slot ? slot->pick->name : tutti__algo_select(comm, &a)->name);
    }
}

static tutti_result_t sweep(tutti_comm_t comm, const opts_t *o, int n, results_t *res) {
  size_t max = 0;
  for (int i = 0; i < o->nsizes; i++) max = o->sizes[i] > max ? o->sizes[i] : max;
  float *s = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  float *r = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (s == MAP_FAILED || r == MAP_FAILED) return TUTTI_ERR_SYSTEM;
  for (size_t i = 0; i < max / 4; i++) s[i] = (float)(i % 7);
  memset(r, 0, max);
  tutti_result_t rc = TUTTI_SUCCESS;
  if (o->check) rc = settle_auto(comm, o, n, s, r);
  for (int round = 0; round < o->rounds && rc == TUTTI_SUCCESS; round++)
    for (int ci = 0; ci < o->ncolls && rc == TUTTI_SUCCESS; ci++)
      for (int si = 0; si < o->nsizes && rc == TUTTI_SUCCESS; si++) {
        size_t count = count_of(o->colls[ci], o->sizes[si], n);
        for (int k = 0; k < res->nalgo && rc == TUTTI_SUCCESS; k++) {
          int ai = (k + round) % res->nalgo; /* alternate the order every round */
          double *cell = &res->t[ci][si][ai][round];
          *cell = -1;
          if (!count) continue;
          if (!strcmp(res->algo[ai], "auto")) {
            force(comm, "auto");
          } else if (!tutti__algo_find(res->algo[ai])->fn[o->colls[ci]] ||
                     !runs_here(comm, res->algo[ai], o->colls[ci], count)) {
            continue;
          }
          rc = time_cell(comm, o->colls[ci], s, r, count, o->slice_ms / 1e3, cell);
        }
      }
  if (o->check && rc == TUTTI_SUCCESS) record_picks(comm, o, n, res);
  munmap(s, max);
  munmap(r, max);
  return rc;
}

static void rank_main(const tutti_unique_id_t *id, int n, int rank, const opts_t *o,
                      results_t *res) {
  tutti_comm_t comm;
  tutti_result_t rc = tutti_comm_init_rank(&comm, n, id, rank);
  if (rc == TUTTI_SUCCESS) {
    rc = sweep(comm, o, n, res);
    if (rc != TUTTI_SUCCESS && rank == 0)
      snprintf(res->err, sizeof res->err, "%s", tutti_comm_last_error(comm));
    tutti_comm_destroy(comm);
  } else if (rank == 0) {
    snprintf(res->err, sizeof res->err, "init: %s", tutti_result_string(rc));
  }
  if (rank == 0) res->ok = rc == TUTTI_SUCCESS;
  _exit(rc == TUTTI_SUCCESS ? 0 : 1);
}

static int run_ranks(int n, const opts_t *o, results_t *res) {
  tutti_unique_id_t id;
  if (tutti_get_unique_id(&id) != TUTTI_SUCCESS) return -1;
  pid_t kids[64];
  for (int r = 0; r < n; r++) {
    fflush(NULL);
    kids[r] = fork();
    if (kids[r] < 0) return -1;
    if (kids[r] == 0) rank_main(&id, n, r, o, res);
  }
  int bad = 0;
  for (int r = 0; r < n; r++) {
    int st;
    if (waitpid(kids[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) bad = 1;
  }
  return bad || !res->ok ? -1 : 0;
}

static double median(double *v, int k) {
  for (int i = 1; i < k; i++)
    for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

/* The median over the rounds of one algorithm's time in one cell, and its fastest round in
 * *fastest (if not NULL); -1 for both where it never ran there. */
static double cell_median(const opts_t *o, const results_t *res, int ci, int si, int ai,
                          double *fastest) {
  double v[MAX_ROUNDS];
  int k = 0;
  for (int rd = 0; rd < o->rounds; rd++)
    if (res->t[ci][si][ai][rd] >= 0) v[k++] = res->t[ci][si][ai][rd];
  double med = k ? median(v, k) : -1; /* median() sorts v */
  if (fastest) *fastest = k ? v[0] : -1;
  return med;
}

/* Adds the rules of one rank count to m, and a comment line per cell to notes. */
static void pick_rules(const opts_t *o, int n, results_t *res, tutti_model_t *m, FILE *notes) {
  for (int ci = 0; ci < o->ncolls; ci++) {
    int last = -1;
    for (int si = 0; si < o->nsizes; si++) {
      int best = -1;
      double best_t = 0;
      fprintf(notes, "# %s n=%d %zu B:", tutti__coll_name(o->colls[ci]), n, o->sizes[si]);
      for (int ai = 0; ai < res->nalgo; ai++) {
        double med = cell_median(o, res, ci, si, ai, NULL);
        if (med < 0) continue;
        fprintf(notes, " %s %.1f us", res->algo[ai], med * 1e6);
        if (best < 0 || med < best_t) {
          best = ai;
          best_t = med;
        }
      }
      fprintf(notes, "%s%s\n", best >= 0 ? " -> " : "", best >= 0 ? res->algo[best] : "");
      if (best < 0 || m->nrules == TUTTI_FILE_MAX_RULES) continue;
      /* Size classes: each swept size stands for [size/2, size*2), the first starting at
       * the smallest size swept and the last open; neighbours with one winner merge. */
      size_t lo = si == 0 ? o->sizes[0] : (o->sizes[si - 1] + o->sizes[si]) / 2;
      size_t hi = si + 1 == o->nsizes ? (size_t)-1 : (o->sizes[si] + o->sizes[si + 1]) / 2;
      tutti_file_rule_t *prev = m->nrules ? &m->rules[m->nrules - 1] : NULL;
      if (last >= 0 && prev && !strcmp(prev->algo, res->algo[best])) {
        prev->hi = hi;
      } else {
        tutti_file_rule_t u = {.coll = (int)o->colls[ci], .nlo = n, .nhi = n, .lo = lo, .hi = hi};
        snprintf(u.algo, sizeof u.algo, "%s", res->algo[best]);
        m->rules[m->nrules++] = u;
      }
      last = best;
    }
  }
}

/* --check: one markdown row per cell of one rank count; counts cells and hits, by medians
 * over the rounds and by each contender's fastest round (noise on a shared machine only ever
 * adds time, so the fastest round is the least disturbed). */
static void check_rows(const opts_t *o, int n, results_t *res, FILE *to, int *cells, int *hits,
                       int *hits_min) {
  for (int ci = 0; ci < o->ncolls; ci++)
    for (int si = 0; si < o->nsizes; si++) {
      double med[MAX_ALGOS], lo[MAX_ALGOS];
      int best = -1, best_lo = -1, autoi = -1, picki = -1;
      for (int ai = 0; ai < res->nalgo; ai++) {
        med[ai] = cell_median(o, res, ci, si, ai, &lo[ai]);
        if (!strcmp(res->algo[ai], "auto")) {
          autoi = ai;
          continue;
        }
        if (!strcmp(res->algo[ai], res->pick[ci][si])) picki = ai;
        if (med[ai] >= 0 && (best < 0 || med[ai] < med[best])) best = ai;
        if (lo[ai] >= 0 && (best_lo < 0 || lo[ai] < lo[best_lo])) best_lo = ai;
      }
      if (best < 0 || autoi < 0 || med[autoi] < 0) continue;
      double ratio = med[autoi] / med[best], ratio_lo = lo[autoi] / lo[best_lo];
      (*cells)++;
      *hits += ratio <= 1.10;
      *hits_min += ratio_lo <= 1.10;
      fprintf(to, "| %s | %d | %zu | %s | %.4g | %s | %.4g | %.2f | %s | %.2f | %s | ",
              tutti__coll_name(o->colls[ci]), n, o->sizes[si], res->pick[ci][si],
              med[autoi] * 1e6, res->algo[best], med[best] * 1e6, ratio,
              ratio <= 1.10 ? "**hit**" : "miss", ratio_lo, ratio_lo <= 1.10 ? "**hit**" : "miss");
      if (picki >= 0 && med[picki] >= 0) fprintf(to, "%.2f |", med[picki] / med[best]);
      else fprintf(to, "- |");
      for (int ai = 0; ai < res->nalgo; ai++)
        if (ai != autoi && med[ai] >= 0) fprintf(to, " %s %.4g", res->algo[ai], med[ai] * 1e6);
      fprintf(to, " |\n");
    }
}

static int parse_size(const char *s, size_t *out) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  int shift = *end == 'k' || *end == 'K' ? 10 : *end == 'm' || *end == 'M' ? 20 : 0;
  if (end == s || (end[shift != 0] && end[shift != 0] != ',') || v == 0) return -1;
  *out = (size_t)v << shift;
  return 0;
}

static int usage(FILE *to) {
  fprintf(to,
          "usage: tutti-tune [-o FILE] [--ns 2,4] [--sizes 64k,256k,1m,4m,16m,64m]\n"
          "                  [--colls allreduce,allgather,reduce_scatter,broadcast]\n"
          "                  [--rounds 3] [--slice-ms 20] [--check]\n"
          "Sweeps the algorithms on this host and writes a tuning table for TUTTI_TUNE_FILE\n"
          "(default FILE: $TUTTI_TUNE_FILE, else tutti-tune.table).\n"
          "--check: writes no table; times the tuner's own choice (auto, online selection\n"
          "settled first) in turn with every forced algorithm in the same processes and\n"
          "prints a markdown report: per cell auto / fastest forced, a hit within 10%%.\n");
  return to == stdout ? 0 : 2;
}

static int parse_opts(int argc, char **argv, opts_t *o) {
  static const size_t sizes[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  *o = (opts_t){.ns = {2, 4}, .nns = 2, .nsizes = 6, .ncolls = 4, .rounds = 3, .slice_ms = 20};
  memcpy(o->sizes, sizes, sizeof sizes);
  memcpy(o->colls, default_colls, sizeof default_colls);
  o->out = getenv("TUTTI_TUNE_FILE") && *getenv("TUTTI_TUNE_FILE") ? getenv("TUTTI_TUNE_FILE")
                                                                     : "tutti-tune.table";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--check")) {
      o->check = 1;
      continue;
    }
    if (!v) return -1;
    i++;
    if (!strcmp(a, "-o")) {
      o->out = v;
    } else if (!strcmp(a, "--rounds")) {
      o->rounds = atoi(v);
      if (o->rounds < 1 || o->rounds > MAX_ROUNDS) return -1;
    } else if (!strcmp(a, "--slice-ms")) {
      o->slice_ms = atof(v);
      if (!(o->slice_ms > 0)) return -1;
    } else if (!strcmp(a, "--ns")) {
      o->nns = 0;
      for (const char *s = v; *s && o->nns < MAX_NS; s += strcspn(s, ","), s += *s == ',') {
        int n = atoi(s);
        if (n < 2 || n > 64) return -1;
        o->ns[o->nns++] = n;
      }
    } else if (!strcmp(a, "--sizes")) {
      o->nsizes = 0;
      for (const char *s = v; *s && o->nsizes < MAX_SIZES; s += strcspn(s, ","), s += *s == ',')
        if (parse_size(s, &o->sizes[o->nsizes++])) return -1;
    } else if (!strcmp(a, "--colls")) {
      o->ncolls = 0;
      char name[32];
      for (const char *s = v; *s && o->ncolls < 8; s += strcspn(s, ","), s += *s == ',') {
        snprintf(name, sizeof name, "%.*s", (int)strcspn(s, ","), s);
        int c = 0;
        while (c < TUTTI_COLL_COUNT && strcmp(tutti__coll_name((tutti_coll_t)c), name)) c++;
        if (c == TUTTI_COLL_COUNT) return -1;
        o->colls[o->ncolls++] = (tutti_coll_t)c;
      }
    } else {
      return -1;
    }
  }
  return o->nns && o->nsizes && o->ncolls ? 0 : -1;
}

int main(int argc, char **argv) {
  opts_t o;
  if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) return usage(stdout);
  if (parse_opts(argc, argv, &o)) return usage(stderr);
  /* The sweep forces each algorithm; rules of an older table or TUTTI_TUNE must not
   * interfere, and the output file is written here, not by the ranks. */
  unsetenv("TUTTI_TUNE");
  unsetenv("TUTTI_TUNE_FILE");
  unsetenv("TUTTI_ALGO");
  /* Nor picks remembered from earlier jobs (docs/tuning.md): auto must be timed as a fresh
   * job's, and its trials here, between forced algorithms' calls, are no job's to keep
   * (session 28: the sweep's --check left recursive doubling for n = 4 64 KiB all-reduce,
   * where one-shot ran 2x faster, and every later auto run of the sweep took it). */
  setenv("TUTTI_TUNE_REMEMBER", "0", 1);
  tutti_config_t cfg;
  char err[512];
  if (tutti__config_load(&cfg, err, sizeof err) != TUTTI_SUCCESS) {
    fprintf(stderr, "tutti-tune: %s\n", err);
    return 1;
  }
  tutti_model_t *m = &cfg.model;
  if (tutti__model_obtain(&cfg, m, err, sizeof err) != TUTTI_SUCCESS) {
    fprintf(stderr, "tutti-tune: %s\n", err);
    return 1;
  }
  m->nrules = 0;
  results_t *res = mmap(NULL, sizeof *res, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                        -1, 0);
  if (res == MAP_FAILED) return 1;
  char notes_buf[16384] = "";
  FILE *notes = fmemopen(notes_buf, sizeof notes_buf - 1, "w");
  int na, cells = 0, hits = 0, hits_min = 0;
  const tutti_algo_t *t = tutti__algo_table(&na);
  if (o.check) {
    printf("| collective | n | bytes | pick | auto us | best | best us | auto/best | result | "
           "fastest rounds: auto/best | result | pick forced/best | all forced (us) |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    fflush(stdout);
  }
  for (int k = 0; k < o.nns; k++) {
    memset(res, 0, sizeof *res);
    for (int i = 0; i < na && res->nalgo < MAX_ALGOS - o.check; i++)
      if (t[i].cost) snprintf(res->algo[res->nalgo++], sizeof res->algo[0], "%s", t[i].name);
    if (o.check) snprintf(res->algo[res->nalgo++], sizeof res->algo[0], "auto");
    fprintf(stderr, "tutti-tune: n = %d, %d sizes, %d collectives, %d algorithms, %d rounds\n",
            o.ns[k], o.nsizes, o.ncolls, res->nalgo, o.rounds);
    if (run_ranks(o.ns[k], &o, res)) {
      fprintf(stderr, "tutti-tune: the sweep at n = %d failed: %s\n", o.ns[k],
              res->err[0] ? res->err : "a rank died");
      return 1;
    }
    if (o.check) {
      check_rows(&o, o.ns[k], res, stdout, &cells, &hits, &hits_min);
      fflush(stdout);
    } else {
      pick_rules(&o, o.ns[k], res, m, notes);
    }
  }
  fclose(notes);
  if (o.check) {
    printf("\n**%d of %d cells within 10%%** by medians (auto's median over %d rounds / the "
           "fastest forced algorithm's, timed in turns in the same processes); %d of %d by "
           "each one's fastest round\n", hits, cells, o.rounds, hits_min, cells);
    return 0;
  }
  char text[16384];
  int len = tutti__table_write(m, NULL, text, sizeof text);
  if (len < 0 || (size_t)len + strlen(notes_buf) + 1 > sizeof text) {
    fprintf(stderr, "tutti-tune: the table does not fit\n");
    return 1;
  }
  strcat(text, notes_buf);
  if (tutti__table_store(o.out, text, err, sizeof err)) {
    fprintf(stderr, "tutti-tune: %s\n", err);
    return 1;
  }
  fputs(text, stdout);
  fprintf(stderr, "tutti-tune: wrote %s (%d rules); use it with TUTTI_TUNE_FILE=%s\n", o.out,
          m->nrules, o.out);
  return 0;
}
