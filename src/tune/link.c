/*
 * Measuring the link between hosts at init. The model measured on one machine knows TCP only
 * over loopback (GB/s, microseconds), which makes crossing hosts look nearly free; a job
 * that spans hosts needs the real link's figures to choose between flat and hierarchical
 * algorithms. Rank 0 times a rank of another host through the communicator's own transport
 * (so striping over TUTTI_NSOCKS streams, the kernel's buffers and any shaping count) and
 * puts the figures into the model it then sends to every rank (agree.c), so all ranks use
 * the same ones.
 *
 * What is timed, rank 0 driving and the partner answering, each message a header telling the
 * partner what comes next:
 *   ROUNDS ping-pongs of 8 bytes: alpha is half the best round trip;
 *   three one-way transfers (WARM, SMALL, BIG bytes), each answered by 8 bytes. The warm one
 *   opens TCP's window and empties a token bucket (a shaped link lets its burst, tbf's 64 KiB
 *   to 1 MiB, through at any speed); the other two then run at the link's steady rate, and
 *   the difference of their times divided by the difference of their sizes is the time per
 *   byte with the latency, the reply and the start-up cancelled.
 * About 3.5 MiB in all: 30 ms on a 1 Gbit/s link; a faster link repeats the pair (below),
 * about 10 ms at 10 Gbit/s. On a slow link (the warm transfer alone took over SLOW_S) rank 0
 * stops there and takes the warm transfer's rate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/topo.h"
#include "transport/transport.h"
#include "tune/model.h"

#define ROUNDS 6
#define WARM_BYTES ((size_t)1 << 20)
#define SMALL_BYTES ((size_t)512 << 10)
#define BIG_BYTES ((size_t)2 << 20)
#define SLOW_S 0.25
#define REPEATS 4
#define REPEAT_NS 20000000 /* 20 ms */

enum { OP_END = 0, OP_PING = 1, OP_DATA = 2 };

typedef struct hdr {
  uint32_t op;
  uint32_t pad;
  uint64_t bytes;
} hdr_t;

/* The first rank whose host is not rank 0's, or -1 (one host). */
static int partner_of(struct tutti_comm *comm) {
  tutti_topo_t *t = tutti__topo(comm);
  if (!t || t->nhosts < 2) return -1;
  for (int r = 1; r < comm->nranks; r++)
    if (t->host_of[r] != t->host_of[0]) return r;
  return -1;
}

static tutti_result_t xfer(struct tutti_comm *comm, int send, int peer, void *buf, size_t len,
                           int64_t deadline) {
  tutti_xfer_t x;
  tutti_result_t res = send ? tutti__isend_tag(comm, &x, peer, buf, len, 0)
                            : tutti__irecv_tag(comm, &x, peer, buf, len, 0);
  return res == TUTTI_SUCCESS ? tutti__wait(comm, &x, deadline) : res;
}

/* The partner: answers until rank 0 says it is done. */
static tutti_result_t answer(struct tutti_comm *comm, int64_t deadline) {
  char *buf = NULL;
  size_t cap = 0;
  tutti_result_t res = TUTTI_SUCCESS;
  for (;;) {
    hdr_t h;
    uint64_t ack = 0;
    if ((res = xfer(comm, 0, 0, &h, sizeof h, deadline)) != TUTTI_SUCCESS) break;
    if (h.op == OP_END) break;
    if (h.op == OP_DATA) {
      if (h.bytes > BIG_BYTES * 4) {
        res = tutti__error(comm, TUTTI_ERR_INTERNAL, "measuring the link to rank 0: rank 0 "
                           "announced %llu bytes, more than the measurement sends",
                           (unsigned long long)h.bytes);
        break;
      }
      if (h.bytes > cap) {
        free(buf);
        cap = (size_t)h.bytes;
        if (!(buf = malloc(cap))) {
          res = tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory measuring the link to "
                             "rank 0");
          break;
        }
      }
      if ((res = xfer(comm, 0, 0, buf, (size_t)h.bytes, deadline)) != TUTTI_SUCCESS) break;
    }
    if ((res = xfer(comm, 1, 0, &ack, sizeof ack, deadline)) != TUTTI_SUCCESS) break;
  }
  free(buf);
  return res;
}

/* Rank 0: one exchange (a ping when bytes is 0), timed from the header to the reply. */
static tutti_result_t timed(struct tutti_comm *comm, int peer, char *buf, size_t bytes,
                            int64_t deadline, double *s) {
  hdr_t h = {bytes ? OP_DATA : OP_PING, 0, bytes};
  uint64_t ack;
  int64_t t0 = tutti__now_ns();
  tutti_result_t res = xfer(comm, 1, peer, &h, sizeof h, deadline);
  if (res == TUTTI_SUCCESS && bytes) res = xfer(comm, 1, peer, buf, bytes, deadline);
  if (res == TUTTI_SUCCESS) res = xfer(comm, 0, peer, &ack, sizeof ack, deadline);
  *s = (double)(tutti__now_ns() - t0) / 1e9;
  return res;
}

int tutti__link_estimate(const tutti_link_times_t *t, double *alpha_s, double *bps, char *why,
                         size_t whylen) {
  *alpha_s = *bps = 0;
  if (!(t->rtt_s > 0)) {
    snprintf(why, whylen, "no round trip was timed");
    return -1;
  }
  *alpha_s = t->rtt_s / 2;
  if (!(t->small_s > 0) || !(t->big_s > 0)) { /* a slow link: the warm transfer only */
    if (!(t->warm_s > t->rtt_s)) {
      snprintf(why, whylen, "the %.0f-byte transfer (%.3f ms) took no longer than a round "
               "trip (%.3f ms)", t->warm_bytes, t->warm_s * 1e3, t->rtt_s * 1e3);
      return -1;
    }
    *bps = t->warm_bytes / (t->warm_s - t->rtt_s);
    return 0;
  }
  /* The big transfer's plain rate is a lower bound (it includes the latency and the reply);
   * the difference of the two sizes is exact when both ran undisturbed. Whether they did
   * shows in the time the difference leaves for the rest, the intercept: about a round trip
   * on an undisturbed link. A small transfer delayed by another job makes the difference
   * too fast and the intercept too long (by more than the delay); then the plain rate is the
   * better figure. The slack (half a millisecond) is a delay that moves the rate a few
   * percent at 1 Gbit/s. */
  double plain = t->big_bytes / t->big_s;
  double dt = t->big_s - t->small_s, db = t->big_bytes - t->small_bytes;
  double diff = dt > 0 && db > 0 ? db / dt : 0;
  double icpt = diff > 0 ? t->small_s - t->small_bytes / diff : 0;
  int steady = diff > plain && icpt <= 2 * t->rtt_s + 0.5e-3;
  *bps = steady ? diff : plain;
  return 0;
}

tutti_result_t tutti__link_measure(struct tutti_comm *comm, tutti_model_t *m, int go) {
  int peer = partner_of(comm);
  if (peer < 0 || (comm->rank != 0 && comm->rank != peer)) return TUTTI_SUCCESS;
  int64_t deadline = tutti__deadline_after(comm->cfg.timeout_s);
  if (comm->rank == peer) return answer(comm, deadline);

  /* Rank 0. Figures given (a file, TUTTI_TUNE_NET) or measuring turned off: nothing to do
   * but release the partner. */
  hdr_t end = {OP_END, 0, 0};
  if (!go || m->net_bps > 0 || !comm->cfg.tune_net)
    return xfer(comm, 1, peer, &end, sizeof end, deadline);
  int64_t t0 = tutti__now_ns();
  char *buf = calloc(1, BIG_BYTES);
  int have_buf = buf != NULL;
  tutti_link_times_t t = {0};
  t.warm_bytes = (double)WARM_BYTES;
  t.small_bytes = (double)SMALL_BYTES;
  t.big_bytes = (double)BIG_BYTES;
  tutti_result_t res = TUTTI_SUCCESS;
  for (int i = 0; buf && i < ROUNDS && res == TUTTI_SUCCESS; i++) {
    double s;
    res = timed(comm, peer, buf, 0, deadline, &s);
    /* The first round trip pays for waking the partner and the connection's first use. */
    if (i > 0 && (t.rtt_s == 0 || s < t.rtt_s)) t.rtt_s = s;
  }
  if (buf && res == TUTTI_SUCCESS) res = timed(comm, peer, buf, WARM_BYTES, deadline, &t.warm_s);
  /* The pair again while it is cheap (a fast link: up to REPEATS pairs within REPEAT_NS of
   * the start), keeping each size's best: on a shared machine one descheduling of either
   * rank during a 2 ms transfer would otherwise make a 10 Gbit/s link look ten times
   * slower. A 1 Gbit/s link's first pair already takes the budget. */
  for (int k = 0; buf && res == TUTTI_SUCCESS && t.warm_s < SLOW_S && k < REPEATS &&
                  (k == 0 || tutti__now_ns() - t0 < REPEAT_NS);
       k++) {
    double s, b = 0;
    res = timed(comm, peer, buf, SMALL_BYTES, deadline, &s);
    if (res == TUTTI_SUCCESS) res = timed(comm, peer, buf, BIG_BYTES, deadline, &b);
    if (res == TUTTI_SUCCESS && (k == 0 || s < t.small_s)) t.small_s = s;
    if (res == TUTTI_SUCCESS && (k == 0 || b < t.big_s)) t.big_s = b;
  }
  free(buf);
  if (res == TUTTI_SUCCESS) res = xfer(comm, 1, peer, &end, sizeof end, deadline);
  if (res != TUTTI_SUCCESS) return res;
  char why[200];
  double alpha, bps;
  if (!have_buf) {
    WARN("tune", 0, "no memory to measure the link to rank %d: the tuner charges crossing "
         "hosts the loopback figures", peer);
  } else if (tutti__link_estimate(&t, &alpha, &bps, why, sizeof why)) {
    WARN("tune", 0, "measuring the link to rank %d: %s; the tuner charges crossing hosts the "
         "loopback figures", peer, why);
  } else {
    m->net_alpha_s = alpha;
    m->net_bps = bps;
    size_t at = strlen(m->origin);
    snprintf(m->origin + at, sizeof m->origin - at, "; link to rank %d measured", peer);
    INFO("tune", 0, "link to rank %d (another host): %.1f us one way, %.3f GB/s (round trip "
         "%.1f us; %.0f KiB in %.2f ms, %.0f KiB in %.2f ms); measured in %.1f ms", peer,
         alpha * 1e6, bps / 1e9, t.rtt_s * 1e6, t.small_bytes / 1024, t.small_s * 1e3,
         t.big_bytes / 1024, t.big_s * 1e3, (double)(tutti__now_ns() - t0) / 1e6);
  }
  return TUTTI_SUCCESS;
}
