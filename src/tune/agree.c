/*
 * The model of a communicator: rank 0 obtains one (a tuning file, the host cache, a new
 * measurement or the fallbacks) and every rank takes rank 0's, so all ranks feed the tuner
 * the same numbers and pick the same algorithm for every call, whatever their own machines
 * or environments would have said. The agreement runs over the communicator's own
 * transports as soon as they connect (one message down a binomial tree, tag 0, which no
 * collective uses), so it does not depend on the rendezvous's wire format.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"
#include "transport/transport.h"
#include "tune/model.h"

void tutti__model_fallback(tutti_model_t *m) {
  memset(m, 0, sizeof *m);
  m->source = TUTTI_MODEL_FALLBACK;
  m->have = 1;
  snprintf(m->origin, sizeof m->origin, "the documented fallbacks (nothing measured)");
}

const char *tutti__model_source_word(int s) {
  static const char *const w[] = {"fallback", "measured", "cached", "file"};
  return s >= 0 && s <= TUTTI_MODEL_FILE ? w[s] : "?";
}

/* Test knob (docs/tuning.md): TUTTI_TUNE_TEST_SKEW=F multiplies the single-copy speed a
 * process measured or loaded by F, so a test can make one rank's view of the machine differ
 * from the others'. */
static void apply_skew(tutti_model_t *m) {
  const char *v = getenv("TUTTI_TUNE_TEST_SKEW");
  char *end;
  double f = v && *v ? strtod(v, &end) : 1;
  if (v && *v && (*end || !(f > 0) || !isfinite(f))) {
    WARN("tune", -1, "TUTTI_TUNE_TEST_SKEW=%s is not a positive factor: ignored", v);
    return;
  }
  if (f == 1) return;
  if (!m->cma_bps) m->cma_bps = 4e9; /* give the fallback something to skew */
  m->cma_bps *= f;
  snprintf(m->origin + strlen(m->origin), sizeof m->origin - strlen(m->origin),
           " (single copy skewed x%g)", f);
}

static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* How many measurements of a host and boot the cache's figures are the best of before later
 * jobs take it as it is, and the least time between two of them. One measurement taken while
 * the machine was busy (the first job of a boot often runs beside a build, or a test suite's
 * other jobs) read a float32 sum at 0.6 GB/s where a quiet one a few minutes later read 9-11,
 * and that figure steered every job's picks until the next boot. Best of a few measurements,
 * minutes apart, is what one measurement already does over its short repetitions (measure.c):
 * the best is the least disturbed. */
#define HOST_SAMPLES 3
#define SAMPLE_GAP_S 30

/* *have becomes the better of *have and fresh (higher or lower); 0 is "not measured". */
static void keep_best(double *have, double fresh, int higher) {
  if (fresh > 0 && (*have <= 0 || (higher ? fresh > *have : fresh < *have))) *have = fresh;
}

/* Takes into m, figure by figure, the better of m's measurement and an earlier one (whose
 * count of measurements m's adds to). Cache sizes and CPUs are the host key's, the same. */
static void merge_best(tutti_model_t *m, const tutti_model_t *old) {
  keep_best(&m->copy_cached_bps, old->copy_cached_bps, 1);
  keep_best(&m->copy_mem_bps, old->copy_mem_bps, 1);
  keep_best(&m->reduce_cached_bps, old->reduce_cached_bps, 1);
  keep_best(&m->reduce_mem_bps, old->reduce_mem_bps, 1);
  keep_best(&m->handoff_s, old->handoff_s, 0);
  keep_best(&m->wake_s, old->wake_s, 0);
  keep_best(&m->xcore_bps, old->xcore_bps, 1);
  keep_best(&m->cma_bps, old->cma_bps, 1);
  keep_best(&m->cma_call_s, old->cma_call_s, 0);
  keep_best(&m->tcp_alpha_s, old->tcp_alpha_s, 0);
  keep_best(&m->tcp_bps, old->tcp_bps, 1);
  m->samples = old->samples + 1;
}

/* Whether a cached model gets another measurement merged into it now (HOST_SAMPLES). */
static int wants_sample(const tutti_model_t *cached) {
  size_t now = (size_t)time(NULL);
  return cached->samples < HOST_SAMPLES &&
         (now < cached->measured_at || now - cached->measured_at >= SAMPLE_GAP_S);
}

/* Measures this machine into m (merged with merge_with's figures, when given: the host
 * cache's earlier measurements), and saves the result as the host cache when save. */
static void measure(tutti_model_t *m, int save, const tutti_model_t *merge_with) {
  int64_t t0 = tutti__now_ns(), c0 = thread_cpu_ns();
  tutti_model_t t = {0};
  tutti__measure_caches(&t);
  int ok = tutti__measure_memory(&t) == 0;
  /* The memory part never sleeps: if it had the CPU less than half its time, other jobs were
   * running here and the figures are rougher. They are kept all the same (measuring again
   * at every init of a busy machine would cost every job its measurement); the origin says
   * so, and TUTTI_TUNE_MEASURE=force measures again. */
  int64_t t1 = tutti__now_ns();
  double share = (double)(thread_cpu_ns() - c0) / (double)(t1 - t0 + 1);
  tutti__measure_threads(&t); /* a hand-off it could not time keeps its fallback */
  int64_t t2 = tutti__now_ns();
  tutti__measure_tcp(&t); /* optional: without it tcp keeps its fallbacks */
  int64_t t3 = tutti__now_ns();
  t.measure_ms = (double)(t3 - t0) / 1e6;
  /* Where the time went (bench/init_time.sh's cold runs; docs/tuning.md). */
  INFO("tune", -1, "measured in %.1f ms: caches and memory %.1f ms, hand-off and wake-up "
       "%.1f ms, tcp %.1f ms", t.measure_ms, (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6,
       (double)(t3 - t2) / 1e6);
  if (!ok) {
    WARN("tune", -1, "measuring this machine failed: the tuner uses %s",
         merge_with ? "the cached figures" : "its fallbacks");
    if (merge_with) *m = *merge_with;
    else tutti__model_fallback(m);
    return;
  }
  t.source = TUTTI_MODEL_MEASURED;
  t.have = 1;
  t.samples = 1;
  t.measured_at = (size_t)time(NULL);
  snprintf(t.origin, sizeof t.origin, "measured at init in %.1f ms%s", t.measure_ms,
           share < 0.5 ? " on a busy machine" : "");
  if (merge_with && merge_with->samples) {
    merge_best(&t, merge_with);
    snprintf(t.origin + strlen(t.origin), sizeof t.origin - strlen(t.origin),
             ", the best of each figure over %zu measurements", t.samples);
  }
  *m = t;
  if (share < 0.5)
    INFO("tune", -1, "measuring had the CPU %.0f%% of the time (other jobs run here): the "
         "figures are rough (TUTTI_TUNE_MEASURE=force measures again)", share * 100);
  if (save) tutti__host_cache_save(m);
}

/* Overlays the values and rules of the tuning file on m. */
static tutti_result_t overlay(const char *path, tutti_model_t *m, char *err, size_t errlen) {
  char why[320];
  char *text = tutti__table_slurp(path, why, sizeof why);
  tutti_model_t f = {0};
  if (!text || tutti__table_parse(text, &f, NULL, 0, why, sizeof why)) {
    free(text);
    snprintf(err, errlen, "TUTTI_TUNE_FILE=%s: %s (docs/tuning.md; tutti-tune writes one)",
             path, why);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  free(text);
  /* Every value the file gives replaces the base's; the rest stay measured or cached. The
   * values from l1d_bytes to tcp_bps are all 8-byte numbers (size_t or double). */
  _Static_assert(sizeof(size_t) == sizeof(double), "8-byte values");
  size_t given = 0;
  for (size_t off = offsetof(tutti_model_t, l1d_bytes); off < offsetof(tutti_model_t, nrules);
       off += sizeof(double)) {
    char zero[sizeof(double)] = {0};
    if (memcmp((char *)&f + off, zero, sizeof zero)) {
      memcpy((char *)m + off, (char *)&f + off, sizeof(double));
      given++;
    }
  }
  m->nrules = f.nrules;
  memcpy(m->rules, f.rules, sizeof f.rules);
  char base[64];
  snprintf(base, sizeof base, "%s", tutti__model_source_word(m->source));
  m->source = TUTTI_MODEL_FILE;
  snprintf(m->origin, sizeof m->origin, "TUTTI_TUNE_FILE %.60s (%zu values, %d rules; the "
           "rest %.10s)", path, given, f.nrules, base);
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__model_obtain(const tutti_config_t *cfg, tutti_model_t *m, char *err,
                                   size_t errlen) {
  if (cfg->tune_measure == 0) tutti__model_fallback(m);
  else if (cfg->tune_measure == 2 || !tutti__host_cache_load(m)) measure(m, 1, NULL);
  else if (wants_sample(m)) {
    tutti_model_t cached = *m;
    measure(m, 1, &cached);
  }
  apply_skew(m);
  /* Given link figures replace a file's or a measurement's (the variable is the later,
   * more specific word); TUTTI_TUNE_NET=0 drops a file's, so the loopback ones stand. */
  tutti_result_t res = TUTTI_SUCCESS;
  FILE *f = cfg->tune_file[0] ? fopen(cfg->tune_file, "r") : NULL;
  if (f) {
    fclose(f);
    res = overlay(cfg->tune_file, m, err, errlen);
  }
  if (cfg->net_bps > 0) {
    m->net_bps = cfg->net_bps;
    if (cfg->net_alpha_s > 0) m->net_alpha_s = cfg->net_alpha_s;
  } else if (!cfg->tune_net) {
    m->net_bps = m->net_alpha_s = 0;
  }
  if (f || !cfg->tune_file[0]) return res;
  /* No file yet: this machine's numbers become it (tutti-tune adds rules). */
  char text[8192], why[320];
  if (tutti__table_write(m, NULL, text, sizeof text) < 0 ||
      tutti__table_store(cfg->tune_file, text, why, sizeof why))
    WARN("tune", -1, "cannot save TUTTI_TUNE_FILE=%s: %s", cfg->tune_file, why);
  return TUTTI_SUCCESS;
}

/* What rank 0 sends: whether it has a model, and the model's text or why not. */
typedef struct wire {
  uint32_t ok;
  uint32_t len;
  uint32_t online; /* TUTTI_TUNE_ONLINE: every rank must try the same candidates */
  uint32_t remember; /* TUTTI_TUNE_REMEMBER: and start from the same remembered picks */
  tutti_remember_wire_t known;
  char text[8180];
} wire_t;

tutti_result_t tutti__model_agree(struct tutti_comm *comm) {
  tutti_model_t *m = &comm->cfg.model;
  if (m->have) return TUTTI_SUCCESS; /* inherited from the communicator this one came from */
  int64_t t_start = tutti__now_ns(); /* init's breakdown (bench/init_time.sh) logs this part */
  wire_t *w = calloc(1, sizeof *w);
  if (!w) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory for the tuning model");
  tutti_result_t res = TUTTI_SUCCESS, own = TUTTI_SUCCESS;
  char err[400] = "";
  if (comm->rank == 0) own = tutti__model_obtain(&comm->cfg, m, err, sizeof err);
  /* Rank 0 and a rank of another host time the link between them before the model goes
   * out, so every rank receives the same figures (nothing for a one-host job). */
  comm->in_agreement = 1;
  res = tutti__link_measure(comm, m, own == TUTTI_SUCCESS);
  comm->in_agreement = 0;
  if (comm->rank == 0 && res == TUTTI_SUCCESS) {
    w->ok = own == TUTTI_SUCCESS;
    w->online = (uint32_t)comm->cfg.tune_online;
    w->remember = (uint32_t)comm->cfg.tune_remember;
    tutti__remember_load(comm, &w->known);
    int k = w->ok ? tutti__table_write(m, NULL, w->text, sizeof w->text)
                  : snprintf(w->text, sizeof w->text, "%s", err);
    if (k < 0) { /* cannot happen with 64 rules; refuse rather than send half */
      own = TUTTI_ERR_INTERNAL;
      w->ok = 0;
      k = snprintf(w->text, sizeof w->text, "the tuning model does not fit its message");
    }
    w->len = (uint32_t)k;
  }
  int64_t deadline = tutti__deadline_after(comm->cfg.timeout_s);
  int n = comm->nranks, r = comm->rank;
  if (res != TUTTI_SUCCESS) {
    free(w);
    return res;
  }
  /* A rank that has its model leaves init and may fail its first call at once (ranks that
   * disagree on it, say), marking the host's segment failed while a later rank of this tree
   * still waits for the model. That failure belongs to the call, not to this init: it is
   * ignored here and seen at this rank's first call. A peer that dies is still seen. */
  comm->in_agreement = 1;
  for (int mask = 1; mask < n && res == TUTTI_SUCCESS; mask <<= 1) {
    tutti_xfer_t x;
    if (r < mask && r + mask < n) {
      res = tutti__isend_tag(comm, &x, r + mask, w, sizeof *w, 0);
      if (res == TUTTI_SUCCESS) res = tutti__wait(comm, &x, deadline);
    } else if (r >= mask && r < 2 * mask) {
      res = tutti__irecv_tag(comm, &x, r - mask, w, sizeof *w, 0);
      if (res == TUTTI_SUCCESS) res = tutti__wait(comm, &x, deadline);
    }
  }
  comm->in_agreement = 0;
  if (res == TUTTI_SUCCESS && own != TUTTI_SUCCESS)
    res = tutti__error(comm, own, "%s", w->text);
  else if (res == TUTTI_SUCCESS && r != 0) {
    char err[320];
    w->text[w->len < sizeof w->text ? w->len : sizeof w->text - 1] = '\0';
    if (!w->ok)
      res = tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "rank 0 has no tuning model: %s",
                         w->text);
    else if (tutti__table_parse(w->text, m, NULL, 0, err, sizeof err))
      res = tutti__error(comm, TUTTI_ERR_INTERNAL, "rank 0's tuning model does not parse: %s",
                         err);
  }
  if (res == TUTTI_SUCCESS) {
    comm->cfg.tune_online = (int)w->online;
    comm->cfg.tune_remember = (int)w->remember;
    tutti__remember_take(comm, &w->known);
    m->have = 1;
    m->from_rank = 0;
    INFO("tune", r, "tuning model of rank 0: %s; agreement %.3f s", m->origin,
         (double)(tutti__now_ns() - t_start) / 1e9);
  }
  free(w);
  return res;
}
