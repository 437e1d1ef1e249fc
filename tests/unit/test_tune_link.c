/* Unit tests of the link between hosts in the model (tune/link.c, TUTTI_TUNE_NET): the
 * estimate from what rank 0 timed, the variable's forms, and that the figures reach the
 * tuner's pick. The timed exchange itself runs in the cluster tests (it needs two hosts). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/tuner.h"
#include "core/internal.h"
#include "harness.h"
#include "tune/model.h"

static int near(double a, double b, double rel) { return fabs(a - b) <= rel * fabs(b); }

/* What the protocol times on a link of one-way latency alpha and rate bps whose token bucket
 * holds burst bytes (full at the start of each transfer: it refills during the replies):
 * each transfer is a header, the bytes less the burst at the rate, and a reply. */
static tutti_link_times_t times_of(double alpha, double bps, double burst) {
  tutti_link_times_t t = {0};
  t.rtt_s = 2 * alpha;
  t.lead_bytes = 1 << 20;
  t.body_bytes = 2 << 20;
  t.lead_s = 2 * alpha + (t.lead_bytes - burst) / bps;
  t.long_s = 2 * alpha + (t.lead_bytes + t.body_bytes - burst) / bps;
  t.npairs = 1;
  return t;
}

/* The estimate recovers a 1 Gbit/s link's figures, and a 10 Gbit/s link's behind a 1 ms
 * token bucket and a long path: the difference cancels the burst and the latency, where the
 * long transfer's plain rate would be off by both. */
TEST(estimate_recovers_the_link) {
  double alpha, bps;
  char why[200];
  tutti_link_times_t t = times_of(30e-6, 0.119e9, 125000);
  ASSERT_EQ(tutti__link_estimate(&t, &alpha, &bps, why, sizeof why), 0);
  ASSERT(near(alpha, 30e-6, 1e-9));
  ASSERT(near(bps, 0.119e9, 1e-9));
  t = times_of(2e-3, 1.2e9, 1.25e6);
  ASSERT_EQ(tutti__link_estimate(&t, &alpha, &bps, why, sizeof why), 0);
  ASSERT(near(alpha, 2e-3, 1e-9));
  ASSERT(near(bps, 1.2e9, 1e-9));
  double plain = (t.lead_bytes + t.body_bytes) / t.long_s;
  ASSERT(plain < 0.9 * 1.2e9);
}

/* A lead delayed by 5 ms (another job ran) would make the difference 1.3x too fast: the
 * long transfer's own rate is taken instead. */
TEST(estimate_survives_a_delayed_lead) {
  double alpha, bps;
  char why[200];
  tutti_link_times_t t = times_of(30e-6, 0.119e9, 125000);
  t.lead_s += 0.005;
  ASSERT_EQ(tutti__link_estimate(&t, &alpha, &bps, why, sizeof why), 0);
  ASSERT(near(bps, 0.119e9, 0.05));
  t.lead_s += 0.030; /* longer than the long transfer: no difference at all */
  ASSERT_EQ(tutti__link_estimate(&t, &alpha, &bps, why, sizeof why), 0);
  ASSERT(near(bps, 0.119e9, 0.05));
}

/* A slow link times the lead alone: its rate less a round trip. */
TEST(estimate_of_a_slow_link) {
  double alpha, bps;
  char why[200];
  tutti_link_times_t t = times_of(50e-6, 1e6, 0);
  t.long_s = t.body_bytes = 0;
  ASSERT_EQ(tutti__link_estimate(&t, &alpha, &bps, why, sizeof why), 0);
  ASSERT(near(bps, 1e6, 1e-9));
}

/* Nothing timed, or transfers no slower than a ping: refused with a reason, no figures. */
TEST(estimate_refuses_nonsense) {
  double alpha, bps;
  char why[200] = "";
  tutti_link_times_t t = {0};
  ASSERT_EQ(tutti__link_estimate(&t, &alpha, &bps, why, sizeof why), -1);
  ASSERT(why[0] != '\0');
  ASSERT(alpha == 0 && bps == 0);
  t = times_of(30e-6, 1e9, 0);
  t.long_s = t.rtt_s;
  t.lead_s = t.rtt_s / 2;
  why[0] = '\0';
  ASSERT_EQ(tutti__link_estimate(&t, &alpha, &bps, why, sizeof why), -1);
  ASSERT(strstr(why, "no longer") != NULL);
  ASSERT(alpha == 0 && bps == 0);
  t = times_of(30e-6, 1e9, 0);
  t.long_s = 0;
  t.lead_s = t.rtt_s / 2;
  ASSERT_EQ(tutti__link_estimate(&t, &alpha, &bps, why, sizeof why), -1);
  ASSERT(strstr(why, "round trip") != NULL);
}

static tutti_result_t load(tutti_config_t *cfg, char *err, size_t len) {
  return tutti__config_load(cfg, err, len);
}

/* TUTTI_TUNE_NET: 1 (the default) measures, 0 does not, GBPS[,ALPHA_US] gives figures that
 * the model rank 0 obtains carries; anything else is refused with a sentence. */
TEST(tune_net_values) {
  tutti_config_t cfg;
  char err[400];
  unsetenv("TUTTI_TUNE_NET");
  unsetenv("TUTTI_TUNE_FILE");
  setenv("TUTTI_TUNE_MEASURE", "0", 1);
  ASSERT_EQ(load(&cfg, err, sizeof err), TUTTI_SUCCESS);
  ASSERT(cfg.tune_net == 1 && cfg.net_bps == 0);
  setenv("TUTTI_TUNE_NET", "0", 1);
  ASSERT_EQ(load(&cfg, err, sizeof err), TUTTI_SUCCESS);
  ASSERT_EQ(cfg.tune_net, 0);
  setenv("TUTTI_TUNE_NET", "0.118,60", 1);
  ASSERT_EQ(load(&cfg, err, sizeof err), TUTTI_SUCCESS);
  ASSERT(near(cfg.net_bps, 0.118e9, 1e-12) && near(cfg.net_alpha_s, 60e-6, 1e-12));
  tutti_model_t m;
  ASSERT_EQ(tutti__model_obtain(&cfg, &m, err, sizeof err), TUTTI_SUCCESS);
  ASSERT(near(m.net_bps, 0.118e9, 1e-12) && near(m.net_alpha_s, 60e-6, 1e-12));
  setenv("TUTTI_TUNE_NET", "1.25", 1); /* a rate alone keeps the loopback latency */
  ASSERT_EQ(load(&cfg, err, sizeof err), TUTTI_SUCCESS);
  ASSERT(near(cfg.net_bps, 1.25e9, 1e-12) && cfg.net_alpha_s == 0);
  const char *bad[] = {"fast", "-1", "0.1,", "0.1,x", "0.1,60,7", "0,60"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("TUTTI_TUNE_NET", bad[i], 1);
    err[0] = '\0';
    ASSERT_EQ(load(&cfg, err, sizeof err), TUTTI_ERR_INVALID_ARGUMENT);
    ASSERT(strstr(err, "TUTTI_TUNE_NET") != NULL);
  }
  unsetenv("TUTTI_TUNE_NET");
}

/* The reason for measuring: with loopback's figures (3 GB/s, 8 us) crossing hosts looks
 * nearly free (the flat ring won a 16 MiB all-reduce on 3 hosts x 2 with the costs of the
 * time); with a 1 Gbit/s link's the hierarchical algorithm wins (the host link carries 2(H-1)/H of the data, not
 * the ring's 2(n-1)/n). Before the link was measured, the tuner of such a job had only the
 * first model: it picked the ring (63-66% of the host-link bound where hier reached 82-85%). */
TEST(link_figures_choose_hier) {
  tutti_model_t m = {0};
  m.have = 1;
  m.l2_bytes = 512 << 10;
  m.copy_cached_bps = 40e9;
  m.copy_mem_bps = 10e9;
  m.reduce_cached_bps = 20e9;
  m.reduce_mem_bps = 5.4e9;
  m.handoff_s = 0.1e-6;
  m.tcp_alpha_s = 8e-6;
  m.tcp_bps = 3.1e9;
  tutti_tune_query_t q = {0};
  q.coll = TUTTI_COLL_ALLREDUCE;
  q.bytes = 16 << 20;
  q.nranks = 6;
  q.network = 1;
  q.chunk_bytes = 262144;
  q.model = &m;
  q.nhosts = 3;
  q.max_local = 2;
  tutti_pick_why_t why;
  const tutti_algo_t *ring = tutti__algo_find("ring");
  double loopback = tutti__tune_predict(ring, &q);
  m.net_bps = 0.119e9;
  m.net_alpha_s = 30e-6;
  /* The link's figures reach the model: crossing hosts now costs 26x more per byte. */
  ASSERT(tutti__tune_predict(ring, &q) > 10 * loopback);
  const tutti_coll_t colls[] = {TUTTI_COLL_ALLREDUCE, TUTTI_COLL_ALLGATHER,
                                TUTTI_COLL_REDUCE_SCATTER};
  for (size_t i = 0; i < sizeof colls / sizeof colls[0]; i++) {
    q.coll = colls[i];
    const tutti_algo_t *a = tutti__tune_pick(&q, NULL, 0, "auto", &why);
    ASSERT_STR_EQ(a->name, "hier");
    ASSERT_EQ(why, TUTTI_PICK_MODEL);
  }
}

/* 8 B all-reduce with one rank on each of 3 hosts: the hierarchical latency path is one
 * network round (every rank to the two others) where recursive doubling takes three hops
 * (fold, exchange, unfold). Measured on the namespace cluster at 1 Gbit/s: hier 86.7 us,
 * auto (then recursive doubling) 107 us; before, the model had no figure for hier there. */
TEST(one_rank_per_host_small_allreduce_is_hier) {
  tutti_model_t m = {0};
  m.have = 1;
  m.handoff_s = 0.1e-6;
  m.copy_cached_bps = 40e9;
  m.reduce_cached_bps = 20e9;
  m.tcp_alpha_s = 8e-6;
  m.tcp_bps = 3.1e9;
  m.net_bps = 0.119e9;
  m.net_alpha_s = 30e-6;
  tutti_tune_query_t q = {0};
  q.coll = TUTTI_COLL_ALLREDUCE;
  q.bytes = 8;
  q.nranks = 3;
  q.network = 1;
  q.chunk_bytes = 262144;
  q.model = &m;
  q.nhosts = 3;
  q.max_local = 1;
  tutti_pick_why_t why;
  ASSERT_STR_EQ(tutti__tune_pick(&q, NULL, 0, "auto", &why)->name, "hier");
  /* Large calls keep the flat algorithms there: hier has no model for them. */
  q.bytes = 16 << 20;
  ASSERT(tutti__tune_predict(tutti__algo_find("hier"), &q) < 0);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
