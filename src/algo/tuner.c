/*
 * The alpha-beta cost model and the pick (tuner.h); TUTTI_TUNE parsing is tune_parse.c.
 *
 * The model charges alpha per message on the critical path, beta_copy per byte a rank sends
 * (or receives) on it and beta_reduce per byte it combines; pipelined algorithms pay for the
 * pipeline's fill. It is coarse on purpose: it only has to order the algorithms correctly on
 * either side of their crossovers.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/hier.h"
#include "algo/patterns.h"
#include "algo/tuner.h"
#include "core/topo.h"

/*
 * FALLBACKS. The model's parameters come from the machine it runs on (tune/: measured at
 * init or read from the host cache or TUTTI_TUNE_FILE; tutti__model_params below). These
 * are what it uses for any quantity that was not measured (TUTTI_TUNE_MEASURE=0, a failed
 * measurement, tutti-info without a job, the unit tests), fitted on the development machine
 * (2-core AMD EPYC, AVX2, 32 MiB L3) with tutti-bench, TUTTI_ALGO=ring, n = 2, on a quiet
 * machine (bench/tuner_check.py, medians of 3 alternated runs):
 *   local alpha      8-byte all-gather 0.26 us (one exchange), 8-byte all-reduce 0.59 us
 *                    (two): 0.25 us
 *   local beta_copy  64 MiB all-gather 7.4 ms (32 MiB received: 4.5 GB/s), 16 MiB all-gather
 *                    1.18 ms (7.1 GB/s), 16 MiB all-reduce 2.63 ms: 5 GB/s
 *   beta_reduce      a float32 c = a + b pass, 7 GB/s on one core
 *   network alpha    8-byte all-gather 277 us, 128-byte all-reduce 187 us: 100 us (loopback
 *                    wake-ups under load)
 *   network beta_copy 8 MiB all-gather 11.0 ms (0.38 GB/s), 8 MiB all-reduce 20.0 ms: 0.4 GB/s
 * UNPIPELINED is not a fit but a count: recursive doubling, Rabenseifner and Bruck move whole
 * blocks at once, and above a chunk a block no longer stays in cache between its receive and
 * its reduction, so each byte is written to memory and read back: three passes over memory
 * where the pipelined algorithms make two. (The n = 4 sweep in docs/design.md had them 1.5x
 * to 2.1x slower than the ring at 32 MiB where the plain model said 1.0x and 1.4x.)
 */
static const tutti_cost_params_t params[2] = {
    {"local", 0.25e-6, 1.0 / 5.0e9, 1.0 / 7.0e9, 0, 1.0 / 10.0e9},
    {"network", 100.0e-6, 1.0 / 0.4e9, 1.0 / 7.0e9, 0, 1.0 / 0.4e9},
};
#define UNPIPELINED 1.5
/* A futex wake-up between two CPUs where none was measured (the development VM: 1-8 us). */
#define FALLBACK_WAKE 1.0e-6

/* A measured quantity where there is one, else the fallback. */
static double or_else(const tutti_model_t *m, size_t off, double fallback) {
  double v = 0;
  if (m) memcpy(&v, (const char *)m + off, sizeof v);
  return v > 0 ? v : fallback;
}
#define MEASURED(m, field, fallback) or_else(m, offsetof(tutti_model_t, field), fallback)

void tutti__model_params(const tutti_model_t *m, int network, size_t footprint,
                         tutti_cost_params_t *out) {
  *out = params[network ? 1 : 0];
  if (!m) return;
  /* Within L2, copies and reductions run at cache speed; beyond it, at memory speed (one
   * threshold: L2 is private and reliably reported, the L3 a process may use is neither). */
  int cached = m->l2_bytes && footprint <= m->l2_bytes;
  double copy = cached ? m->copy_cached_bps : m->copy_mem_bps;
  double reduce = cached ? m->reduce_cached_bps : m->reduce_mem_bps;
  /* A reduction reads its received operand and the rank's own and writes the result. */
  if (reduce > 0) out->beta_reduce = 1.0 / reduce;
  if (network) {
    /* The link between hosts where it was measured or given (tune/link.c); else the
     * loopback figures, which stand for it on one host (TUTTI_TRANSPORT=tcp). */
    out->alpha = MEASURED(m, tcp_alpha_s, out->alpha);
    if (m->tcp_bps > 0) out->beta_copy = 1.0 / m->tcp_bps;
    out->alpha = MEASURED(m, net_alpha_s, out->alpha);
    if (m->net_bps > 0) out->beta_copy = 1.0 / m->net_bps;
    out->beta_in = out->beta_copy;
    return;
  }
  /* A message through a same-host queue: the sender's index line and the header's line cross to
   * the receiver's core; each byte is copied twice, into the queue and out of it, or once
   * where the receiver reduces it in the queue. */
  if (m->handoff_s > 0) out->alpha = 2 * m->handoff_s;
  if (copy > 0) {
    out->beta_copy = 2.0 / copy;
    out->beta_in = 1.0 / copy;
  }
}

/*
 * Ranks per CPU on the most crowded host: 1 where every rank has a CPU (or the CPUs are not
 * known). The same on every rank: the model and the topology are.
 */
static double crowding(const tutti_tune_query_t *q) {
  const tutti_model_t *m = q->model;
  if (!m || !m->cpus || (size_t)q->max_local <= m->cpus) return 1;
  return (double)q->max_local / (double)m->cpus;
}

/*
 * Where ranks outnumber CPUs they take turns: a CPU does the work of k = crowding() ranks, so
 * every byte costs k times more, and a rank that waits for a message has usually given its
 * CPU up, so each message on the critical path also costs a wake-up (measured). The model
 * then favours the algorithms with fewer steps and fewer bytes in all (single copy, one-shot)
 * over the pipelined ones, as measured at n = 4 on 2 CPUs (docs/tuning.md, "Crowding").
 */
static void crowd_local(const tutti_tune_query_t *q, tutti_cost_params_t *c) {
  double k = crowding(q);
  if (k <= 1) return;
  c->wake = MEASURED(q->model, wake_s, FALLBACK_WAKE);
  c->alpha += c->wake;
  c->beta_copy *= k;
  c->beta_reduce *= k;
  c->beta_in *= k;
}

/* The parameters for q's bytes at link class network, crowding included. */
static void params_for(const tutti_tune_query_t *q, int network, size_t footprint,
                       tutti_cost_params_t *out) {
  tutti__model_params(q->model, network, footprint, out);
  if (!network) crowd_local(q, out);
}

/* The per-byte factor of an algorithm that moves msg bytes per message without chunking. */
static double unpipelined(const tutti_tune_query_t *q, double msg) {
  return msg > (double)q->chunk_bytes ? UNPIPELINED : 1.0;
}

const tutti_cost_params_t *tutti__cost_params(int network) { return &params[network ? 1 : 0]; }

size_t tutti__tune_bytes(tutti_coll_t coll, size_t count, size_t esize, int nranks) {
  return tutti__coll_bytes(coll, count, esize, nranks);
}

void tutti__tune_query(const struct tutti_comm *comm, const tutti_coll_args_t *a,
                       tutti_tune_query_t *q) {
  q->coll = a->coll;
  q->bytes = tutti__tune_bytes(a->coll, a->count, a->esize, comm->nranks);
  q->nranks = comm->nranks;
  q->one_host = comm->nlocal == comm->nranks;
  /* The topology is the same on every rank (built from the bootstrap table at init). */
  q->nhosts = comm->topo ? comm->topo->nhosts : 1;
  q->max_local = comm->topo ? comm->topo->max_local : comm->nranks;
  q->network = tutti__transport_cost_class(comm) == TUTTI_COST_NETWORK;
  q->chunk_bytes = comm->cfg.chunk_bytes;
  q->cma = comm->cma;
  q->mbox_bytes = tutti__mbox_capacity(comm);
  q->model = comm->cfg.model.have ? &comm->cfg.model : NULL;
}

/* ---- The model ---------------------------------------------------------------------- */

static double log2_ceil(int n) {
  int l = 0;
  while ((1 << l) < n) l++;
  return l;
}
static double log2_floor(int n) {
  int l = 0;
  while ((2 << l) <= n) l++;
  return l;
}
/* Chunks of a pipelined transfer: ceil(bytes / chunk), at least 1. */
static double chunks(double bytes, double chunk) {
  double k = (double)(size_t)(bytes / chunk);
  if (k * chunk < bytes) k += 1;
  return k < 1 ? 1 : k;
}

double tutti__cost_ring(const tutti_tune_query_t *q, const tutti_cost_params_t *c) {
  double n = q->nranks, m = (double)q->bytes, C = (double)q->chunk_bytes;
  if (q->nranks == 1) return 0;
  double blk = m / n, k = chunks(blk, C);
  switch (q->coll) {
  case TUTTI_COLL_ALLREDUCE:
    return 2 * (n - 1) * k * c->alpha +
           (n - 1) * blk * (c->beta_in + c->beta_reduce + c->beta_copy);
  case TUTTI_COLL_ALLGATHER: return (n - 1) * (k * c->alpha + blk * c->beta_copy);
  case TUTTI_COLL_REDUCE_SCATTER:
    return (n - 1) * (k * c->alpha + blk * (c->beta_in + c->beta_reduce));
  case TUTTI_COLL_BROADCAST:
  case TUTTI_COLL_REDUCE: { /* a pipelined chain: n-1 hops to fill, then one per chunk */
    int reduce = q->coll == TUTTI_COLL_REDUCE;
    double piece = m < C ? m : C, red = reduce ? c->beta_reduce : 0;
    double hop = c->alpha + piece * ((reduce ? c->beta_in : c->beta_copy) + red);
    /* The chain visits the hosts in turn: H-1 of its hops cross a host link, the others
     * stay on a host; the steady state runs at the slowest hop's pace. */
    double fill = (n - 2) * hop;
    if (q->nhosts > 1) {
      tutti_cost_params_t s;
      params_for(q, 0, 2 * q->bytes, &s);
      double local = s.alpha + piece * ((reduce ? s.beta_in : s.beta_copy) + red);
      fill = (q->nhosts - 1) * hop + (n - q->nhosts - 1) * local;
    }
    return fill + chunks(m, C) * hop;
  }
  case TUTTI_COLL_BARRIER: return log2_ceil(q->nranks) * c->alpha;
  default: return -1;
  }
}

/* The non-power-of-two fold: the whole vector to the partner, combined where it arrives, and
 * back. */
static double fold_cost(const tutti_tune_query_t *q, const tutti_cost_params_t *c, double back) {
  double m = (double)q->bytes;
  if (tutti__pow2_floor(q->nranks) == q->nranks) return 0;
  return 2 * c->alpha + m * (c->beta_in + c->beta_reduce) + back * c->beta_copy;
}

double tutti__cost_rd(const tutti_tune_query_t *q, const tutti_cost_params_t *c) {
  double n = q->nranks, m = (double)q->bytes;
  if (q->nranks == 1) return 0;
  switch (q->coll) {
  case TUTTI_COLL_ALLREDUCE:
    return log2_floor(q->nranks) *
               (c->alpha + unpipelined(q, m) * m * (c->beta_copy + c->beta_reduce)) +
           fold_cost(q, c, m);
  case TUTTI_COLL_ALLGATHER: {
    /* Bruck: ceil(log2 n) steps, (n-1)/n of the result received. No UNPIPELINED factor:
     * blocks are received straight into their final places and nothing is combined, so no
     * byte is written to memory and read back (the n = 2 and 4 sweep of tuner_0557 had it
     * at 0.86-1.07x the ring's time from 1 to 64 MiB, where the factor said 1.5x). A block
     * larger than a chunk still travels as chunk-sized pieces through the queue, each a
     * message as the ring's chunks are (where ranks take turns, each can cost a wake-up):
     * charged one alpha a step, it was predicted 8.5 ms at n = 4 on 2 CPUs, 64 MiB, where it
     * ran 16-18 ms like the ring (17-19), and the model picked it over one-shot (12-13 ms)
     * in every bench-tuner table of session 23 (bench/results/2026-12-07-s24). */
    double got = (n - 1) / n * m, pieces = chunks(got, (double)q->chunk_bytes);
    double steps = log2_ceil(q->nranks);
    return (pieces > steps ? pieces : steps) * c->alpha + got * c->beta_copy;
  }
  default: return -1;
  }
}

double tutti__cost_rab(const tutti_tune_query_t *q, const tutti_cost_params_t *c) {
  double n = q->nranks, m = (double)q->bytes;
  double p = tutti__pow2_floor(q->nranks), lg = log2_floor(q->nranks);
  double part = unpipelined(q, m / 2) * (p - 1) / p * m;
  if (q->nranks == 1) return 0;
  switch (q->coll) {
  case TUTTI_COLL_ALLREDUCE:
    return 2 * lg * c->alpha + part * (c->beta_in + c->beta_reduce + c->beta_copy) +
           fold_cost(q, c, m);
  case TUTTI_COLL_REDUCE_SCATTER: /* the first step reads the input itself: no copy */
    return lg * c->alpha + part * (c->beta_in + c->beta_reduce) + fold_cost(q, c, m / n);
  default: return -1;
  }
}

double tutti__cost_tree(const tutti_tune_query_t *q, const tutti_cost_params_t *c) {
  double m = (double)q->bytes, C = (double)q->chunk_bytes, depth = log2_ceil(q->nranks);
  if (q->nranks == 1) return 0;
  switch (q->coll) {
  case TUTTI_COLL_ALLREDUCE: { /* up, then down, each pipelined over half the vector */
    double half = m / 2, piece = half < C ? half : C, k = chunks(half, C);
    return 2 * (depth + k - 1) * (2 * c->alpha + 2 * piece * c->beta_copy) + m * c->beta_reduce;
  }
  case TUTTI_COLL_BROADCAST: { /* inner nodes send every chunk to each of their children:
                                * two, but one where the root's only child is the last rank */
    double piece = m < C ? m : C, fan = q->nranks > 2 ? 2 : 1;
    return (depth + chunks(m, C) - 1) * (fan * c->alpha + fan * piece * c->beta_copy);
  }
  case TUTTI_COLL_REDUCE: {
    double piece = m < C ? m : C;
    return (depth + chunks(m, C) - 1) *
           (2 * c->alpha + 2 * piece * (c->beta_copy + c->beta_reduce));
  }
  default: return -1;
  }
}

/*
 * Hierarchical (hier_*.c): phases within the hosts charged at the local link class's
 * parameters, phases across them at c's (network). Across the hosts the L = max_local local ranks of a host each move
 * 1/L of the data at once over the host's one link, so the link's per-byte cost is paid for
 * all of them: per step a host link carries L blocks. Where every host has one rank, or
 * all ranks share a host, the flat algorithms do the same work with fewer phases: no model
 * (but for the small all-reduce's single network round).
 */
double tutti__cost_hier(const tutti_tune_query_t *q, const tutti_cost_params_t *c) {
  double H = q->nhosts, L = q->max_local, n = q->nranks, m = (double)q->bytes;
  double C = (double)q->chunk_bytes;
  /* The latency path is the exception where every host has one rank: one network round
   * (the leaders all to all) against recursive doubling's ceil(log2 H) or more rounds. */
  int small = q->coll == TUTTI_COLL_ALLREDUCE && q->bytes <= TUTTI_HIER_SMALL_BYTES &&
              q->nhosts <= TUTTI_HIER_SMALL_HOSTS;
  if (q->nhosts <= 1 || (q->nhosts == q->nranks && !small)) return -1;
  tutti_cost_params_t s;
  params_for(q, 0, 2 * q->bytes, &s);
  double sl = m / L, kl = chunks(sl, C);  /* a local rank's slice */
  double ib = sl / H, ki = chunks(ib, C); /* an index group's block */
  switch (q->coll) {
  case TUTTI_COLL_ALLREDUCE:
    /* hier_small.c: to the leader, the leaders all to all in one round, back. */
    if (small) /* hand-offs within a host only where it has more than one rank */
      return (L > 1 ? 2 * s.alpha : 0) + 2 * (L - 1) * m * s.beta_copy +
             (L + H - 2) * m * s.beta_reduce + c->alpha + (H - 1) * m * c->beta_copy;
    return (L - 1) * (2 * kl * s.alpha + sl * (s.beta_in + s.beta_copy + s.beta_reduce)) +
           (H - 1) * (2 * ki * c->alpha + ib * (2 * L * c->beta_copy + c->beta_reduce));
  case TUTTI_COLL_ALLGATHER: /* m: the result; each rank's block m/n */
    return (H - 1) * (chunks(m / n, C) * c->alpha + m / n * L * c->beta_copy) +
           (L - 1) * (kl * s.alpha + sl * s.beta_copy);
  case TUTTI_COLL_REDUCE_SCATTER: /* m: the input */
    return (L - 1) * (kl * s.alpha + sl * (s.beta_in + s.beta_reduce)) +
           (H - 1) * (chunks(m / n, C) * c->alpha + m / n * (L * c->beta_copy + c->beta_reduce));
  case TUTTI_COLL_REDUCE:
    return (L - 1) * (kl * s.alpha + sl * (s.beta_in + s.beta_reduce)) +
           (H - 1) * (ki * c->alpha + ib * (L * c->beta_copy + c->beta_reduce)) +
           c->alpha + (H - 1) * ib * L * c->beta_copy + s.alpha + m * s.beta_copy;
  case TUTTI_COLL_BROADCAST: { /* leaders' chain; each leader also feeds its host */
    double piece = m < C ? m : C;
    double hop = c->alpha + piece * c->beta_copy;
    double local = (L - 1) * (s.alpha + piece * s.beta_copy);
    return (H - 2 + chunks(m, C)) * (hop > local ? hop : local) + local;
  }
  case TUTTI_COLL_BARRIER: return 2 * s.alpha + log2_ceil(q->nhosts) * c->alpha;
  default: return -1;
  }
}

/* Whether algo can run q at all: it implements the collective, and single-copy algorithms
 * need every rank able to read the others (the same answer on every rank: comm->cma). */
static int runs(const tutti_algo_t *algo, const tutti_tune_query_t *q) {
  return algo->fn[q->coll] && (!algo->needs_cma || q->cma) &&
         (!algo->needs_mbox || (q->mbox_bytes && (q->coll == TUTTI_COLL_BROADCAST ||
                                                  q->coll == TUTTI_COLL_ALLGATHER ||
                                                  tutti__oneshot_payload(q) <= q->mbox_bytes)));
}

size_t tutti__oneshot_payload(const tutti_tune_query_t *q) {
  switch (q->coll) {
  case TUTTI_COLL_ALLGATHER: return q->bytes / (size_t)q->nranks;
  case TUTTI_COLL_BARRIER: return 0;
  default: return q->bytes;
  }
}

/* One-shot: a flag line per peer (their misses overlap), the payload copied into the mailbox
 * once (in cache: faster than a transfer), and every byte a rank needs from a peer read from
 * that peer's cache. Measured: the flag is one cache-line hand-off; each further peer's flag
 * is a miss that overlaps the others' (counted as half a hand-off); posting runs at the
 * in-cache copy speed, reading a peer's payload at the cross-core read speed. Fallbacks,
 * fitted to the quiet development machine (bench/tuner_check.py): 8 B all-reduce 0.18 us at
 * n = 2 (recursive doubling 0.33), 37 us at n = 8, 64 KiB all-gather at n = 4 12 us (Bruck
 * 20, ring 24), while the ring keeps 64 KiB all-reduce at n = 2 (5.0 us, one-shot 6.4). */
#define OS_ALPHA 0.08e-6
#define OS_PEER 0.03e-6
#define BETA_POST (1.0 / 10.0e9)
#define BETA_PEER (1.0 / 8.0e9)
/* A broadcast's readers need nothing from each other, so more readers cost the root nothing
 * while each has a CPU; where they take turns, the root waits for the last one to be run
 * before it may reuse the mailbox, one wake-up (crowding, above). (Until 2026-12-02 every
 * reader past the first was charged a wake-up here, after an older one-shot path that read
 * every peer's published call: at n = 4 on 2 CPUs, 8-byte broadcasts now take 1.7 us
 * one-shot against the chain's 3.0, where that term predicted 4x.) */

typedef struct os_params {
  double alpha, peer, beta_post, beta_peer;
  double wake; /* of alpha: where ranks take turns, the reader's wake-up */
} os_params_t;

static os_params_t oneshot_params(const tutti_tune_query_t *q) {
  const tutti_model_t *m = q->model;
  os_params_t o = {OS_ALPHA, OS_PEER, BETA_POST, BETA_PEER, 0};
  if (m && m->handoff_s > 0) {
    o.alpha = m->handoff_s;
    o.peer = m->handoff_s / 2;
  }
  if (m && m->copy_cached_bps > 0) o.beta_post = 1.0 / m->copy_cached_bps;
  if (m && m->xcore_bps > 0) o.beta_peer = 1.0 / m->xcore_bps;
  double k = crowding(q);
  if (k > 1) {
    o.wake = MEASURED(m, wake_s, FALLBACK_WAKE);
    o.alpha += o.wake;
    o.beta_post *= k;
    o.beta_peer *= k;
  }
  return o;
}

/* A message in k mailbox-sized pieces: past one piece the user's buffers may be out of
 * cache, so neither the post's nor a reader's copy is faster than floor. */
static void piece_floor(double k, double floor, os_params_t *o) {
  if (k <= 1) return;
  if (o->beta_post < floor) o->beta_post = floor;
  if (o->beta_peer < floor) o->beta_peer = floor;
}

double tutti__cost_oneshot(const tutti_tune_query_t *q, const tutti_cost_params_t *c) {
  double n = q->nranks, m = (double)q->bytes;
  os_params_t o = oneshot_params(q);
  double base = o.alpha + (n - 1) * o.peer + (double)tutti__oneshot_payload(q) * o.beta_post;
  switch (q->coll) {
  case TUTTI_COLL_ALLREDUCE:
  case TUTTI_COLL_REDUCE: return base + (n - 1) * m * (o.beta_peer + c->beta_reduce);
  case TUTTI_COLL_REDUCE_SCATTER:
    return base + (n - 1) * m / n * (o.beta_peer + c->beta_reduce);
  case TUTTI_COLL_ALLGATHER: {
    /* In mailbox-sized pieces past a mailbox (oneshot.c), every piece a call of its own that
     * every rank takes part in: a wake-up each where ranks take turns. Past a mailbox the
     * user's buffers may be out of cache, so the post and each read are one copy from memory
     * (not a queue byte's two: that put them at 1.54x what they ran at n = 2, 16-64 MiB);
     * where ranks take turns, each CPU copies for its k ranks one after the other, and the
     * queues' figure (two cores copying at once) undercounts that. Measured at n = 8 on 2
     * CPUs, 1 MiB: the pieces 220-248 us, recursive doubling 1103-1397, the ring 1422-1734
     * (the model gave them 352 and 409); n = 4: 112-124 against 289-349 and 363-546. */
    double blk = m / n, k = q->mbox_bytes ? chunks(blk, (double)q->mbox_bytes) : 1;
    double floor = c->beta_copy / 2, mem = MEASURED(q->model, copy_mem_bps, 0);
    if (mem > 0) floor = crowding(q) / mem;
    piece_floor(k, floor, &o);
    return k * (o.alpha + (n - 1) * o.peer) + blk * o.beta_post + (n - 1) * blk * o.beta_peer;
  }
  case TUTTI_COLL_BROADCAST: {
    /* In mailbox-sized pieces (oneshot.c): the root's post of one overlaps the readers' copy
     * of the one before, so past the first piece the slower of the two sets the pace. The
     * mailbox stays in cache, but the user's buffers of a message larger than a mailbox may
     * not: each copy of its pieces is then at most as fast as a local copy of the message.
     * A reader that gave its CPU up wakes once a call, not once a piece: the root runs
     * pieces ahead. (Charged a wake-up a piece, the model had the chain ahead at n = 4 on 2
     * CPUs from 1 MiB on, where the pieces ran 1.3-1.5x faster.) */
    double cap = q->mbox_bytes ? (double)q->mbox_bytes : m, piece = m < cap ? m : cap;
    double k = chunks(m, cap);
    piece_floor(k, c->beta_copy, &o);
    double post = piece * o.beta_post, read = piece * o.beta_peer;
    return o.wake + k * (o.alpha - o.wake + (n - 1) * o.peer) +
           (k - 1) * (post > read ? post : read) + post + read;
  }
  case TUTTI_COLL_BARRIER: return base;
  default: return -1;
  }
}

/*
 * Deterministic (deterministic.c): per chunk, each block's owner posts the n-1 sends of the
 * others' pieces at once (the first message a step, each further one overlapping the others:
 * half a step, as one-shot's flags), copies its own piece into its slot (in cache) and folds
 * the pieces in rank order as they arrive: rank 0's received, the others reduced where they
 * arrive (beta_in); all-reduce then exchanges the reduced blocks in n-1 sendrecv steps. The
 * steps are fewer than the ring's (k (n/2) + n - 1 against 2 (n-1) k).
 */
double tutti__cost_det(const tutti_tune_query_t *q, const tutti_cost_params_t *c) {
  double n = q->nranks, m = (double)q->bytes, blk = m / n;
  double k = chunks(blk, (double)q->chunk_bytes);
  double own = crowding(q) * (q->model && q->model->copy_cached_bps > 0
                                  ? 1.0 / q->model->copy_cached_bps : BETA_POST);
  if (q->nranks == 1) return 0;
  double rs = k * n / 2 * c->alpha + blk * c->beta_copy + (n - 2) * blk * c->beta_in +
              (n - 1) * blk * c->beta_reduce + blk * own;
  switch (q->coll) {
  case TUTTI_COLL_REDUCE_SCATTER: return rs;
  case TUTTI_COLL_ALLREDUCE: return rs + (n - 1) * (c->alpha + blk * c->beta_copy);
  default: return -1;
  }
}

/* Single copy: only completion tokens travel (rounds of n-1 small messages each); each byte
 * a rank needs from a peer moves once, by the kernel, straight from the peer's buffer.
 * Measured: the kernel's copy speed (process_vm_readv of an out-of-cache buffer) and the
 * cost of one call, paid per peer. Fallbacks, from the development VM, where that copy was
 * slow (rep movsb and a page-table walk per page: 4.2-5.0 GB/s at 16-64 MiB where memcpy
 * moved 12-18.6) and every cma all-reduce and reduce-scatter took 1.1-2.2x the ring's time:
 * its bytes cost CMA_COPY_SLOWDOWN times the transport's, and an 8-byte cma all-reduce took
 * 4.4 us at n = 2 (one-shot 0.18): CMA_FIXED per peer. */
#define CMA_COPY_SLOWDOWN 2.5
#define CMA_FIXED 2.0e-6
/* Broadcast splits each receiver's copy between the root's writes and the receiver's reads
 * (cma_copy.c), so two cores copy each receiver's bytes at once: half the time each. The root
 * also copies its own input to its output (out of place, as the chain's root does while its
 * chunks travel: one copy, half of a transport's two); leaving that out made cma look twice
 * as fast as the chain at n = 2, where both measured the same (1 and 16 MiB, 2026-12-02). */
#define CMA_BCAST_RATIO 0.5

static double cma_bytes(const tutti_tune_query_t *q, const tutti_cost_params_t *c, double n,
                        double m, double part, double beta);

double tutti__cost_cma(const tutti_tune_query_t *q, const tutti_cost_params_t *c) {
  double n = q->nranks, m = (double)q->bytes, part = (n - 1) / n * m;
  const tutti_model_t *md = q->model;
  double beta = md && md->cma_bps > 0 ? crowding(q) / md->cma_bps
                                      : CMA_COPY_SLOWDOWN * c->beta_copy;
  double fixed = MEASURED(md, cma_call_s, CMA_FIXED);
  if (!q->cma || q->nranks == 1) return -1;
  double b = cma_bytes(q, c, n, m, part, beta);
  return b < 0 ? -1 : fixed * (n - 1) + b;
}

/* r rounds of n - 1 messages each, every round's posted at once (one to each peer): each
 * message costs its alpha, but a waiting rank sleeps once a round, so a crowded host's
 * wake-up counts per round (charging it per message made cma look 1.7x slower than it ran
 * at n = 4 on 2 CPUs, 1 MiB all-gather, where it was the fastest). Of those rounds, `worked`
 * have their arrivals copied as they come (cma.h's cma_arrival_fn): the rank copies instead
 * of sleeping, so their wake-up is not charged. */
static double rounds_cost(const tutti_cost_params_t *c, double r, double worked, double n) {
  return r * (n - 1) * (c->alpha - c->wake) + (r - worked) * c->wake;
}

static double cma_bytes(const tutti_tune_query_t *q, const tutti_cost_params_t *c, double n,
                        double m, double part, double beta) {
  switch (q->coll) {
  case TUTTI_COLL_ALLREDUCE:
    if (tutti__cma_one_shot(q->nranks, q->bytes)) /* addresses, reads done; all of it */
      return rounds_cost(c, 2, 0, n) + (n - 1) * m * (beta + c->beta_reduce);
    /* addresses, slices done (each read as it is), reads done */
    return rounds_cost(c, 3, 1, n) + 2 * part * beta + part * c->beta_reduce;
  case TUTTI_COLL_REDUCE_SCATTER:
    return rounds_cost(c, 2, 0, n) + part * (beta + c->beta_reduce);
  case TUTTI_COLL_ALLGATHER: /* addresses (each block read as it comes), reads done; and its
                              * own block into place (out of place), where the queue algorithms
                              * fuse that copy with their first send (own_exchange.c) */
    return rounds_cost(c, 2, 1, n) + part * beta + m / n * c->beta_copy / 2;
  case TUTTI_COLL_BROADCAST:
    return 2 * c->alpha + (n - 1) * m * CMA_BCAST_RATIO * beta + m * c->beta_copy / 2;
  default: return -1;
  }
}

double tutti__tune_predict(const tutti_algo_t *algo, const tutti_tune_query_t *q) {
  if (!algo->cost || !runs(algo, q)) return -1;
  tutti_cost_params_t c;
  params_for(q, q->network, 2 * q->bytes, &c);
  return algo->cost(q, &c);
}

const tutti_algo_t *tutti__tune_pick(const tutti_tune_query_t *q, const tutti_tune_rule_t *rules,
                                     int nrules, const char *forced, tutti_pick_why_t *why) {
  int n;
  const tutti_algo_t *t = tutti__algo_table(&n);
  tutti_pick_why_t dummy;
  if (!why) why = &dummy;
  for (int i = 0; i < nrules; i++)
    if (rules[i].coll == (int)q->coll && q->bytes >= rules[i].lo && q->bytes < rules[i].hi &&
        rules[i].algo >= 0 && rules[i].algo < n && runs(&t[rules[i].algo], q)) {
      *why = TUTTI_PICK_TUNE;
      return &t[rules[i].algo];
    }
  if (forced && forced[0] && strcmp(forced, "auto") != 0) {
    const tutti_algo_t *f = tutti__algo_find(forced);
    if (f && runs(f, q)) {
      *why = TUTTI_PICK_FORCED;
      return f;
    }
  }
  for (int i = 0; q->model && i < q->model->nrules; i++) {
    const tutti_file_rule_t *u = &q->model->rules[i];
    const tutti_algo_t *a;
    if (u->coll == (int)q->coll && q->nranks >= u->nlo && q->nranks <= u->nhi &&
        q->bytes >= u->lo && q->bytes < u->hi && (a = tutti__algo_find(u->algo)) && runs(a, q)) {
      *why = TUTTI_PICK_FILE;
      return a;
    }
  }
  const tutti_algo_t *best = NULL, *first = NULL;
  double best_t = 0;
  for (int i = 0; i < n; i++) {
    if (!runs(&t[i], q)) continue;
    if (!first) first = &t[i];
    double p = tutti__tune_predict(&t[i], q);
    if (p >= 0 && (!best || p < best_t)) {
      best = &t[i];
      best_t = p;
    }
  }
  *why = best ? TUTTI_PICK_MODEL : TUTTI_PICK_ONLY;
  return best ? best : first;
}
