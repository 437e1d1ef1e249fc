/*
 * Measuring the link between hosts at init. The model measured on one machine knows TCP only
 * over loopback (GB/s, microseconds), which makes crossing hosts look nearly free; a job
 * that spans hosts needs the real link's figures to choose between flat and hierarchical
 * algorithms. Rank 0 times a rank of another host through the communicator's own transport
 * (so striping over TUTTI_NSOCKS streams, the kernel's buffers and any shaping count) and
 * puts the figures into the model it then sends to every rank (agree.c), so all ranks use
 * the same ones.
 *
 * What is timed, rank 0 driving and the partner answering, each exchange a header telling the
 * partner what comes next and a small reply at its end:
 *   ROUNDS ping-pongs of 8 bytes: alpha is half the best round trip;
 *   pairs of one-way transfers, a lead of L bytes alone and L + B bytes; the time per byte is
 *   B over the difference of their times, in which the latency, the reply, TCP's start-up and
 *   any token bucket's burst cancel (a shaped link lets its burst, tbf's 1 ms of the rate,
 *   through at any speed, and the bucket refills during every reply: both transfers of a pair
 *   must be longer than the burst, or the shorter one rides it and the link looks up to twice
 *   as fast, as a 10 Gbit/s link did with 512 KiB and 2 MiB).
 * The first pair (1 MiB, then 3 MiB: ~35 ms at 1 Gbit/s) sizes the others: where it was quick,
 * pairs with L 2 ms and B 4 ms of the rate it found (at most 8 MiB each) follow while the
 * measurement is under REPEAT_NS, and their best times count (a descheduled rank makes a
 * transfer slower, never faster). On a slow link (the first transfer took over SLOW_S) it
 * stops after it and takes its plain rate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/topo.h"
#include "transport/transport.h"
#include "tune/model.h"

#define ROUNDS 6
#define LEAD_BYTES ((size_t)1 << 20)
#define BODY_BYTES ((size_t)2 << 20)
#define MAX_BYTES ((size_t)8 << 20)
#define SLOW_S 0.25
#define REPEATS 4
#define REPEAT_NS 20000000 /* 20 ms */

enum { OP_END = 0, OP_PING = 1, OP_DATA = 2 };

typedef struct hdr {
  uint32_t op;
  uint32_t pad;
  uint64_t bytes; /* OP_DATA: what follows */
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
      if (h.bytes > 2 * MAX_BYTES) {
        res = tutti__error(comm, TUTTI_ERR_INTERNAL, "measuring the link to rank 0: rank 0 "
                           "announced %llu bytes, more than the measurement sends",
                           (unsigned long long)h.bytes);
        break;
      }
      size_t need = (size_t)h.bytes;
      if (need > cap) {
        free(buf);
        cap = need;
        if (!(buf = malloc(cap))) {
          res = tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory measuring the link to "
                             "rank 0");
          break;
        }
      }
      if ((res = xfer(comm, 0, 0, buf, need, deadline)) != TUTTI_SUCCESS) break;
    }
    if ((res = xfer(comm, 1, 0, &ack, sizeof ack, deadline)) != TUTTI_SUCCESS) break;
  }
  free(buf);
  return res;
}

/* Rank 0: one exchange of bytes (0: a ping), timed from the header to the reply. */
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
  double r = 0;
  if (t->long_s > 0) { /* a pair */
    /* The long transfer's own rate, less a round trip, is never far below the link's (only
     * by the headers, or above it by a burst): a difference much faster than that, or none,
     * means the lead was delayed (another job ran), and that rate is the better figure. */
    double dt = t->long_s - t->lead_s;
    double plain = t->long_s > t->rtt_s ? (t->lead_bytes + t->body_bytes) / (t->long_s - t->rtt_s)
                                        : 0;
    r = dt > 0 && t->body_bytes > 0 ? t->body_bytes / dt : 0;
    if (!(r > 0) || r > 1.2 * plain) r = plain;
    if (!(r > 0)) {
      snprintf(why, whylen, "%.0f bytes took no longer than a round trip (%.3f ms)",
               t->lead_bytes + t->body_bytes, t->rtt_s * 1e3);
      return -1;
    }
  } else if (t->lead_s > t->rtt_s) { /* a slow link: the lead alone, less a round trip */
    r = t->lead_bytes / (t->lead_s - t->rtt_s);
  } else {
    snprintf(why, whylen, "the %.0f-byte transfer (%.3f ms) took no longer than a round trip "
             "(%.3f ms)", t->lead_bytes, t->lead_s * 1e3, t->rtt_s * 1e3);
    return -1;
  }
  /* Faster than 1 TB/s is a clock that did not move, not a link. */
  if (r > 1e12) {
    snprintf(why, whylen, "%.0f bytes took %.0f ns", t->body_bytes, t->body_bytes / r * 1e9);
    return -1;
  }
  *alpha_s = t->rtt_s / 2;
  *bps = r;
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
  char *buf = calloc(1, 2 * MAX_BYTES);
  int have_buf = buf != NULL;
  tutti_link_times_t t = {0};
  tutti_result_t res = TUTTI_SUCCESS;
  double rtt = 0;
  for (int i = 0; buf && i < ROUNDS && res == TUTTI_SUCCESS; i++) {
    double s;
    res = timed(comm, peer, buf, 0, deadline, &s);
    /* The first round trip pays for waking the partner and the connection's first use. */
    if (i > 0 && (rtt == 0 || s < rtt)) rtt = s;
  }
  /* The first pair sizes the others; their best times replace its figures. */
  tutti_link_times_t first = {0}, best = {0};
  size_t lead = LEAD_BYTES, body = BODY_BYTES;
  for (int k = 0; buf && res == TUTTI_SUCCESS && k < REPEATS &&
                  (k == 0 || tutti__now_ns() - t0 < REPEAT_NS);
       k++) {
    double a = 0, b = 0;
    res = timed(comm, peer, buf, lead, deadline, &a);
    if (res == TUTTI_SUCCESS && (k > 0 || a < SLOW_S))
      res = timed(comm, peer, buf, lead + body, deadline, &b);
    if (res != TUTTI_SUCCESS) break;
    tutti_link_times_t *p = k == 0 ? &first : &best;
    p->lead_bytes = (double)lead;
    p->body_bytes = (double)body;
    if (k < 2 || a < p->lead_s) p->lead_s = a;
    if (k < 2 || b < p->long_s) p->long_s = b;
    p->npairs++;
    if (k > 0) continue;
    if (!(a < SLOW_S)) break;
    if (b > a) {
      double r = (double)body / (b - a);
      lead = (size_t)(r * 2e-3) > LEAD_BYTES ? (size_t)(r * 2e-3) : LEAD_BYTES;
      body = (size_t)(r * 4e-3) > BODY_BYTES ? (size_t)(r * 4e-3) : BODY_BYTES;
      lead = lead < MAX_BYTES ? lead : MAX_BYTES;
      body = body < MAX_BYTES ? body : MAX_BYTES;
    }
  }
  t = best.npairs ? best : first;
  t.rtt_s = rtt;
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
         "%.1f us; %.0f KiB in %.2f ms, %.0f KiB more in %.2f ms more, best of %d); measured in "
         "%.1f ms", peer, alpha * 1e6, bps / 1e9, t.rtt_s * 1e6, t.lead_bytes / 1024,
         t.lead_s * 1e3, t.body_bytes / 1024, (t.long_s - t.lead_s) * 1e3, t.npairs,
         (double)(tutti__now_ns() - t0) / 1e6);
  }
  return TUTTI_SUCCESS;
}
