/* Hang forensics: the per-peer wait report and its SIGUSR1 trigger. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "core/colls.h"
#include "core/forensics.h"
#include "kernels/kernels.h"
#include "transport/transport.h"

#define HDR_BYTES sizeof(tutti_msg_hdr_t)
#define P2P_BIT 0x80000000u

/* A signal can only be counted: the handler may run on any thread at any moment, so the
 * report itself is written later by a thread that owns a communicator. The count is the one
 * piece of process-wide state here, as a signal disposition is process-wide. */
static atomic_uint report_requests;

static void on_sigusr1(int sig) {
  (void)sig;
  atomic_fetch_add_explicit(&report_requests, 1, memory_order_relaxed);
}

static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static void install(void) {
  struct sigaction old;
  if (sigaction(SIGUSR1, NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
      (old.sa_flags & SA_SIGINFO))
    return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigusr1;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
}

void tutti__forensics_install(const tutti_config_t *cfg) {
  if (cfg->report_signal) pthread_once(&install_once, install);
}

unsigned tutti__forensics_signals(void) {
  return atomic_load_explicit(&report_requests, memory_order_relaxed);
}

int tutti__forensics_requested(unsigned *seen) {
  unsigned n = tutti__forensics_signals();
  if (n == *seen) return 0;
  *seen = n;
  return 1;
}

void tutti__forensics_attach(struct tutti_comm *comm) {
  tutti__forensics_install(&comm->cfg);
  comm->report_seen = tutti__forensics_signals();
}

/* "call #812 (allreduce)" or "send/recv message #3" for the tag of a message. */
static const char *call_name(uint32_t tag, const tutti_fingerprint_t *fp, char *buf,
                             size_t len) {
  if (tag & P2P_BIT)
    snprintf(buf, len, "send/recv message #%u", tag & ~P2P_BIT);
  else
    snprintf(buf, len, "call #%u (%s)", tag, tutti__coll_name((tutti_coll_t)fp->coll));
  return buf;
}

static const char *size_str(uint64_t bytes, char *buf, size_t len) {
  if (bytes >= (1u << 20)) snprintf(buf, len, "%.1f MiB", (double)bytes / (1 << 20));
  else if (bytes >= 1024) snprintf(buf, len, "%.1f KiB", (double)bytes / 1024);
  else snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
  return buf;
}

int tutti__forensics_peer(const struct tutti_comm *comm, int peer, char *buf, size_t len) {
  const tutti_peer_t *p = &comm->peers[peer];
  char who[128], call[96], sz[32];
  tutti__peer_desc(comm, peer, who, sizeof who);
  /* Before running CALL_DEPTH calls past a rooted call, a rank waits for its local peers
   * to start it, to compare the roots (mbox.c's settle_pending). */
  if (comm->post_wait == peer + 1 && comm->start_wait) {
    snprintf(buf, len, "%s never started call #%u (%s, root %d here), which this rank "
             "finished %u calls ago and must compare with every local peer's before running "
             "further ahead (its last message here was for call #%u)",
             who, comm->start_wait,
             tutti__coll_name((tutti_coll_t)comm->start_wait_fp.coll),
             (int)comm->start_wait_fp.root, comm->call_seq - comm->start_wait, p->seen_seq);
    return 1;
  }
  /* A one-shot call waits on the peer's mailbox, not on a queued receive. */
  if (comm->post_wait == peer + 1) {
    snprintf(buf, len, "%s never posted call #%u (%s, one-shot: its mailbox part; its last "
             "message here was for call #%u)", who, comm->call_seq,
             tutti__coll_name((tutti_coll_t)comm->fp.coll), p->seen_seq);
    return 1;
  }
  const tutti_xfer_t *op = p->recvq_head;
  if (op) {
    call_name(op->hdr.seq, &op->hdr.fp, call, sizeof call);
    if (op->done < HDR_BYTES) {
      /* Collective messages from one peer arrive in call order, so if its latest message here
       * is older than the call awaited, the peer has not reached that call. */
      if (!(op->hdr.seq & P2P_BIT) && p->seen_seq < op->hdr.seq)
        snprintf(buf, len, "%s never posted %s, %s (its last message here was for call #%u)",
                 who, call, size_str(op->len, sz, sizeof sz), p->seen_seq);
      else
        snprintf(buf, len, "%s has not sent %s, %s", who, call,
                 size_str(op->len, sz, sizeof sz));
    } else {
      snprintf(buf, len, "%s started %s but %s of it have not arrived", who, call,
               size_str(HDR_BYTES + op->len - op->done, sz, sizeof sz));
    }
    return 1;
  }
  op = p->sendq_head;
  if (op) {
    call_name(op->hdr.seq, &op->hdr.fp, call, sizeof call);
    snprintf(buf, len, "%s does not take %s more of %s (it is not receiving: stopped, busy "
             "elsewhere, or in another call; its last message here was for call #%u)",
             who, size_str(HDR_BYTES + op->len - op->done, sz, sizeof sz), call, p->seen_seq);
    return 1;
  }
  snprintf(buf, len, "%s: nothing pending (last call with a message from it #%u, to it #%u)",
           who, p->seen_seq, p->sent_seq);
  return 0;
}

static void line(int always, int rank, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void line(int always, int rank, const char *fmt, ...) {
  if (!always && !tutti__log_enabled(TUTTI_LOG_WARN, "report")) return;
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tutti__log_write(TUTTI_LOG_WARN, "report", rank, "%s", msg);
}

/* A report longer than a screen hides the culprit; peers with nothing pending are summed up. */
#define MAX_LINES 24

void tutti__forensics_log(const struct tutti_comm *comm, const char *why, int always) {
  int r = comm->rank;
  char who[128], buf[512];
  line(always, r, "---- wait report (%s): %s of %d ----", why,
       tutti__peer_desc(comm, r, who, sizeof who), comm->nranks);
  if (comm->call_seq) {
    const tutti_fingerprint_t *fp = &comm->fp;
    double secs = (double)(tutti__now_ns() - comm->call_start_ns) / 1e9;
    line(always, r, "in %s call #%u (%s, count %llu, %s, op %s, root %d) for %.1f s; %u calls "
         "before it", comm->op_name ? comm->op_name : "?", comm->call_seq,
         tutti__coll_name((tutti_coll_t)fp->coll), (unsigned long long)fp->count,
         tutti__dtype_name(fp->dtype), fp->op < TUTTI_NUM_OPS ? tutti__op_name(fp->op) : "user",
         (int)fp->root, secs, comm->call_seq - 1);
  } else {
    line(always, r, "not in a collective; %u calls so far%s", comm->seq,
         comm->failed ? " (the communicator has failed)" : "");
  }
  int shown = 0, idle = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < comm->nranks; i++) {
      if (i == r) continue;
      int pending = tutti__forensics_peer(comm, i, buf, sizeof buf);
      if (pending != !pass) continue;
      if (shown < MAX_LINES) {
        line(always, r, "  %s %s", pending ? "waiting:" : "        ", buf);
        shown++;
      } else {
        idle++;
      }
    }
  if (idle) line(always, r, "  (%d more peers not shown)", idle);
  if (comm->failed) line(always, r, "first error: %s", comm->last_error);
}

void tutti__forensics_poll(struct tutti_comm *comm) {
  unsigned n = atomic_load_explicit(&report_requests, memory_order_relaxed);
  if (n == comm->report_seen) return;
  comm->report_seen = n;
  tutti__forensics_log(comm, "SIGUSR1", 1);
}
