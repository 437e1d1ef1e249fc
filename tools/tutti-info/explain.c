/*
 * tutti-info --explain COLLECTIVE SIZE NRANKS [shm|tcp] [--hosts H] [--net GBPS[,ALPHA_US]]:
 * every candidate's
 * predicted time from
 * the tuner's cost model and the algorithm a call would run, honouring TUTTI_TUNE, TUTTI_ALGO
 * and TUTTI_CHUNK_SIZE from the environment exactly as the library does.
 */
#include "explain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/tuner.h"
#include "bootstrap/bootstrap.h"
#include "core/internal.h"

static int usage(void) {
  fprintf(stderr, "usage: tutti-info --explain COLLECTIVE SIZE NRANKS [shm|tcp] [--hosts H] "
                  "[--net GBPS[,ALPHA_US]]\n"
                  "  COLLECTIVE: allreduce allgather reduce_scatter broadcast reduce barrier\n"
                  "  SIZE: bytes as tutti-bench counts them (k, M, G suffixes), e.g. 1M\n"
                  "  shm (default): all ranks on one host; tcp: over TCP\n"
                  "  --hosts H: the ranks spread evenly over H hosts (tcp between them)\n"
                  "  --net GBPS[,ALPHA_US]: the link between hosts runs at GBPS GB/s with\n"
                  "    ALPHA_US us one way (as TUTTI_TUNE_NET gives it; a job logs the one it\n"
                  "    measured at TUTTI_DEBUG=info)\n");
  return 2;
}

static int parse_size(const char *s, size_t *out) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || *s == '-') return -1;
  int shift = *end == 'k' || *end == 'K' ? 10 : *end == 'm' || *end == 'M' ? 20
            : *end == 'g' || *end == 'G' ? 30 : 0;
  end += shift != 0;
  end += *end == 'B' || *end == 'b';
  if (*end || v > (~0ULL >> shift)) return -1;
  *out = (size_t)(v << shift);
  return 0;
}

static const char *why_text(tutti_pick_why_t w) {
  switch (w) {
  case TUTTI_PICK_TUNE: return "a TUTTI_TUNE rule";
  case TUTTI_PICK_FORCED: return "TUTTI_ALGO";
  case TUTTI_PICK_MODEL: return "the cost model: lowest predicted time";
  case TUTTI_PICK_FILE: return "a rule of TUTTI_TUNE_FILE";
  default: return "the only algorithm that implements it";
  }
}

/* What the model was given, and from where. */
void tutti_info_print_model(const tutti_model_t *m) {
  printf("machine (%s: %s):\n", tutti__model_source_word(m->source), m->origin);
  if (m->source == TUTTI_MODEL_FALLBACK && !m->copy_mem_bps) {
    printf("  nothing measured: every parameter is the documented fallback (algo/tuner.c)\n");
  } else {
    printf("  %zu CPUs; caches: L1d %zu KiB, L2 %zu KiB, L3 %zu KiB\n", m->cpus,
           m->l1d_bytes >> 10, m->l2_bytes >> 10, m->l3_bytes >> 10);
    printf("  copy %.1f GB/s in cache, %.1f GB/s from memory; float32 sum %.1f / %.1f GB/s\n",
           m->copy_cached_bps / 1e9, m->copy_mem_bps / 1e9, m->reduce_cached_bps / 1e9,
           m->reduce_mem_bps / 1e9);
    printf("  two threads on two CPUs: hand-off %.3f us, futex wake-up %.2f us, cross-core read "
           "%.1f GB/s\n", m->handoff_s * 1e6, m->wake_s * 1e6, m->xcore_bps / 1e9);
    printf("  single copy (process_vm_readv): %.1f GB/s, %.2f us a call%s\n", m->cma_bps / 1e9,
           m->cma_call_s * 1e6, m->cma_bps ? "" : " (not measured: fallback)");
    printf("  tcp loopback: %.1f us one way, %.2f GB/s%s\n", m->tcp_alpha_s * 1e6,
           m->tcp_bps / 1e9, m->tcp_bps ? "" : " (not measured: fallback)");
  }
  if (m->net_bps > 0)
    printf("  link between hosts: %.1f us one way, %.3f GB/s\n", m->net_alpha_s * 1e6,
           m->net_bps / 1e9);
  else
    printf("  link between hosts: not known (a job measures it at init): tcp loopback's "
           "figures\n");
  if (m->nrules) printf("  %d algorithm rules from the tuning file\n", m->nrules);
}

/* What a job of q's shape started here would take from the picks earlier jobs left
 * (TUTTI_TUNE_REMEMBER; src/tune/remember.c). */
static void print_remembered(const tutti_tune_query_t *q, int chunk_auto,
                             const tutti_algo_t *const *cand, int k) {
  char shape[256], path[1024];
  tutti_remember_wire_t w;
  tutti__remember_shape(q, chunk_auto, shape, sizeof shape);
  if (tutti__remember_read(shape, &w, path, sizeof path)) {
    printf("remembered picks (TUTTI_TUNE_REMEMBER=1): none for this host yet\n");
    return;
  }
  for (uint32_t i = 0; i < w.n; i++) {
    if (w.e[i].coll != (uint32_t)q->coll || w.e[i].bytes != q->bytes) continue;
    int among = 0;
    for (int c = 0; c < k; c++) among |= !strncmp(cand[c]->name, w.e[i].algo, sizeof w.e[i].algo);
    printf("remembered (TUTTI_TUNE_REMEMBER=1, %s, shape %s): an earlier job settled on %.*s; ",
           path, shape, (int)sizeof w.e[i].algo, w.e[i].algo);
    if (among)
      printf("a job of this shape runs it from its first call and skips the trials unless a "
             "rank's buffers are registered; first re-check after %u calls\n",
             tutti__online_known_gap(w.e[i].gap));
    else
      printf("it is not among this size's candidates now, so the trials run\n");
    return;
  }
  printf("remembered picks (TUTTI_TUNE_REMEMBER=1, %s): none for shape %s at this size\n", path,
         shape);
}

int tutti_info_explain(int argc, char **argv) {
  if (argc < 3 || argc > 8) return usage();
  const char *net = NULL;
  tutti_tune_query_t q = {0};
  int coll = -1, tcp = 0;
  long hosts = 1;
  for (int c = 0; c < TUTTI_COLL_COUNT; c++)
    if (!strcmp(argv[0], tutti__coll_name((tutti_coll_t)c))) coll = c;
  char *end;
  long n = strtol(argv[2], &end, 10);
  if (coll < 0 || parse_size(argv[1], &q.bytes) || *end || n < 1 || n > TUTTI_MAX_RANKS)
    return usage();
  for (int i = 3; i < argc; i++) {
    if (!strcmp(argv[i], "tcp") || !strcmp(argv[i], "shm")) {
      tcp = !strcmp(argv[i], "tcp");
    } else if (!strcmp(argv[i], "--hosts") && i + 1 < argc) {
      hosts = strtol(argv[++i], &end, 10);
      if (*end || hosts < 1 || hosts > n) return usage();
    } else if (!strcmp(argv[i], "--net") && i + 1 < argc) {
      net = argv[++i];
    } else {
      return usage();
    }
  }
  char err[512];
  tutti_config_t cfg;
  if (net && setenv("TUTTI_TUNE_NET", net, 1)) return usage();
  if (tutti__config_load(&cfg, err, sizeof err) != TUTTI_SUCCESS) {
    fprintf(stderr, "tutti-info: %s\n", err);
    return 1;
  }
  q.coll = (tutti_coll_t)coll;
  q.nranks = (int)n;
  /* Ranks spread evenly: the first n % H hosts hold one more (what a block placement of n
   * ranks over H hosts gives). */
  q.nhosts = (int)hosts;
  q.max_local = (int)((n + hosts - 1) / hosts);
  q.network = tcp || hosts > 1;
  q.one_host = hosts == 1 && !q.network;
  q.chunk_bytes = cfg.chunk_bytes;
  /* Whether the kernel lets ranks read each other is known only inside a job (it is checked
   * at init); here it is assumed allowed on shm unless TUTTI_CMA=0. */
  q.cma = !q.network && cfg.cma;
  q.mbox_bytes = q.network ? 0 : TUTTI_MBOX_BYTES;
  /* The model rank 0 of a job started here would use and send the others. */
  if (tutti__model_obtain(&cfg, &cfg.model, err, sizeof err) != TUTTI_SUCCESS) {
    fprintf(stderr, "tutti-info: %s\n", err);
    return 1;
  }
  q.model = &cfg.model;
  if (cfg.chunk_auto) q.chunk_bytes = tutti__chunk_for_cache(cfg.model.l2_bytes, q.chunk_bytes);
  tutti_cost_params_t p;
  tutti__model_params(q.model, q.network, 2 * q.bytes, &p);
  printf("%s of %zu bytes on %d ranks over %s (chunk %zu bytes)\n", argv[0], q.bytes, q.nranks,
         p.transport, q.chunk_bytes);
  if (hosts > 1) {
    tutti_cost_params_t s;
    tutti__model_params(q.model, 0, 2 * q.bytes, &s);
    printf("topology: %ld hosts, at most %d ranks per host; within a host shm (alpha %.2f us, "
           "beta_copy %.3f ns/B), across hosts tcp (below)\n", hosts, q.max_local,
           s.alpha * 1e6, s.beta_copy * 1e9);
  }
  tutti_info_print_model(&cfg.model);
  printf("model parameters (%s, this size): alpha %.2f us, beta_copy %.3f ns/B (%.2f GB/s), "
         "beta_reduce %.3f ns/B (%.2f GB/s)\n\n",
         p.transport, p.alpha * 1e6, p.beta_copy * 1e9, 1e-9 / p.beta_copy,
         p.beta_reduce * 1e9, 1e-9 / p.beta_reduce);
  if (!tcp && q.model && q.model->cpus && (size_t)q.max_local > q.model->cpus)
    printf("crowded: %d ranks on %zu CPUs take turns: every byte costs %.2fx, every message a "
           "wake-up (%.2f us) more (docs/tuning.md)\n\n", q.max_local, q.model->cpus,
           (double)q.max_local / (double)q.model->cpus, q.model->wake_s * 1e6);
  int na;
  const tutti_algo_t *t = tutti__algo_table(&na);
  printf("  %-20s %14s\n", "candidate", "predicted (us)");
  for (int i = 0; i < na; i++) {
    if (!t[i].fn[coll]) continue;
    double s = tutti__tune_predict(&t[i], &q);
    if (s >= 0)
      printf("  %-20s %14.2f\n", t[i].name, s * 1e6);
    else
      printf("  %-20s %14s\n", t[i].name, "(no model)");
  }
  tutti_pick_why_t why;
  const tutti_algo_t *pick = tutti__tune_pick(&q, cfg.tune, cfg.ntune, cfg.algo, &why);
  if (!pick) {
    printf("\nno algorithm implements %s\n", argv[0]);
    return 1;
  }
  printf("\npick: %s (%s)\n", pick->name, why_text(why));
  if (tutti__online_applies(cfg.tune_online, (int)why, (int)coll, q.bytes)) {
    const tutti_algo_t *cand[TUTTI_ONLINE_MAX_CAND];
    int k = tutti__online_candidates(&q, pick, cand);
    double pred = tutti__tune_predict(pick, &q);
    int reps = tutti__online_check_reps(&q, pred), trials = tutti__online_trial_reps(&q, pred);
    if (k > 1) {
      int turn = tutti__online_turn(trials);
      printf("online selection (TUTTI_TUNE_ONLINE=1): a job's first %d calls of this size%s "
             "run %s once, then", 1 + k * trials, trials > turn ? " (at most)" : "", pick->name);
      for (int i = 0; i < k; i++) printf("%s %s", i ? "," : "", cand[i]->name);
      printf(" in turns of %d call%s from the last listed to the first, %d each%s,", turn,
             turn > 1 ? "s" : "", trials,
             trials > reps ? " (more ranks than CPUs: more trials)"
             : trials > tutti__online_reps(q.bytes) ? " (short calls: more trials)" : "");
      if (trials > turn)
        printf(" dropping after the first turns those more than %.1fx slower than the fastest "
               "(settling there if one is left),", TUTTI_ONLINE_PRUNE);
      printf(" and keep the fastest by the slowest rank's time if it beats %s's by more than "
             "%.0f%%; then, %d calls on, the pick and the next other candidate alternate for %d "
             "calls, and a challenger that is faster by as much takes over if it is again %d "
             "calls later (re-checks twice as far apart each time)\n",
             pick->name, 100 * TUTTI_ONLINE_MARGIN, TUTTI_ONLINE_RECHECK, 2 * reps,
             TUTTI_ONLINE_CONFIRM);
      if (cfg.tune_remember) print_remembered(&q, cfg.chunk_auto, cand, k);
    }
  }
  return 0;
}
