/*
 * Internal declarations shared by the library's modules: the communicator, error and
 * logging helpers, configuration, and time. Nothing here is public.
 */
#ifndef TUTTI_INTERNAL_H
#define TUTTI_INTERNAL_H

#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tutti.h"
#include "tune/model.h"
#include "tune/online.h"

#define TUTTI_HIDDEN __attribute__((visibility("hidden")))

/* ---- Results and errors -------------------------------------------------------------- */

/* Propagate a failure; at trace level each hop leaves a breadcrumb (NCCL's NCCLCHECK trail). */
#define TRY(expr)                                                                           \
  do {                                                                                      \
    tutti_result_t try_res_ = (expr);                                                       \
    if (try_res_ != TUTTI_SUCCESS) {                                                        \
      tutti__log_trail(__FILE__, __LINE__, try_res_);                                       \
      return try_res_;                                                                      \
    }                                                                                       \
  } while (0)

#define TRY_GOTO(expr, res, label)                                                          \
  do {                                                                                      \
    (res) = (expr);                                                                         \
    if ((res) != TUTTI_SUCCESS) {                                                           \
      tutti__log_trail(__FILE__, __LINE__, (res));                                          \
      goto label;                                                                           \
    }                                                                                       \
  } while (0)

/* ---- Logging ------------------------------------------------------------------------- */

enum { TUTTI_LOG_NONE = 0, TUTTI_LOG_WARN = 1, TUTTI_LOG_INFO = 2, TUTTI_LOG_TRACE = 3 };

/* The level and subsystem filter come from TUTTI_DEBUG / TUTTI_DEBUG_SUBSYS, read once. The
 * level is tested before any formatting, so disabled log lines cost one load and a compare. */
int tutti__log_enabled(int level, const char *subsys);
void tutti__log_write(int level, const char *subsys, int rank, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void tutti__log_trail(const char *file, int line, tutti_result_t res);
/* At TUTTI_DEBUG=info, once per process from rank 0 of its first communicator: one line with
 * the version, size, transport and whether single-copy reads are on. */
void tutti__log_banner(int rank, int nranks, int nlocal, const char *transport, int cma);

#define TLOG(level, subsys, rank, ...)                                                      \
  do {                                                                                      \
    if (tutti__log_enabled((level), (subsys)))                                              \
      tutti__log_write((level), (subsys), (rank), __VA_ARGS__);                            \
  } while (0)
#define WARN(subsys, rank, ...) TLOG(TUTTI_LOG_WARN, subsys, rank, __VA_ARGS__)
#define INFO(subsys, rank, ...) TLOG(TUTTI_LOG_INFO, subsys, rank, __VA_ARGS__)
#define TRACE(subsys, rank, ...) TLOG(TUTTI_LOG_TRACE, subsys, rank, __VA_ARGS__)

/* ---- Configuration ------------------------------------------------------------------- */

/* The registry's rows (transport/registry.c), as TUTTI_TRANSPORT names them and peers[r].kind
 * holds them. MEM: peers that are threads of this process; never set by TUTTI_TRANSPORT. */
enum { TUTTI_TRANSPORT_AUTO = 0, TUTTI_TRANSPORT_SHM, TUTTI_TRANSPORT_TCP, TUTTI_TRANSPORT_MEM };
/* The most transports one communicator holds at once. */
#define TUTTI_MAX_TRANSPORTS 4

/* One TUTTI_TUNE rule: collective coll (a tutti_coll_t) with lo <= bytes < hi runs the
 * algorithm at index algo of the algorithm table. */
typedef struct tutti_tune_rule {
  int coll;
  int algo;
  size_t lo, hi;
} tutti_tune_rule_t;
#define TUTTI_TUNE_MAX_RULES 16

typedef struct tutti_config {
  int transport;          /* TUTTI_TRANSPORT */
  char algo[32];          /* TUTTI_ALGO */
  double timeout_s;       /* TUTTI_TIMEOUT */
  double init_timeout_s;  /* TUTTI_INIT_TIMEOUT: the rendezvous's deadline */
  char ifname[64];        /* TUTTI_SOCKET_IFNAME */
  size_t chunk_bytes;     /* TUTTI_CHUNK_SIZE: pipelining unit of the ring and chain */
  int chunk_auto;         /* TUTTI_CHUNK_SIZE unset: chunk_bytes follows the model's L2 */
  int nsocks;             /* TUTTI_NSOCKS: TCP sockets per peer pair, striped */
  size_t shm_queue_bytes; /* TUTTI_SHM_QUEUE_SIZE: bytes per directed shm queue */
  double spin_us;         /* TUTTI_SPIN_US: busy-wait before sleeping */
  int report_signal;      /* TUTTI_REPORT_SIGNAL: SIGUSR1 logs the wait report */
  int cma;                /* TUTTI_CMA: single-copy reads from peers allowed */
  int asym_fence;         /* TUTTI_MEMBARRIER: one-shot posts without a full fence */
  tutti_tune_rule_t tune[TUTTI_TUNE_MAX_RULES]; /* TUTTI_TUNE, parsed (algo/tuner.c) */
  int ntune;
  int deterministic;      /* TUTTI_DETERMINISTIC: reductions fold ranks in rank order */
  int tune_online;        /* TUTTI_TUNE_ONLINE: try the model's best candidates per size;
                           * rank 0's setting after init (tune/agree.c) */
  int tune_remember;      /* TUTTI_TUNE_REMEMBER: settled picks kept for later jobs
                           * (tune/remember.c); rank 0's decides */
  int tune_measure;       /* TUTTI_TUNE_MEASURE: 0 fallbacks, 1 cache or measure, 2 measure */
  int tune_net;           /* TUTTI_TUNE_NET: 1 measure the link between hosts at init, 0 not */
  double net_bps, net_alpha_s; /* TUTTI_TUNE_NET=GBPS[,ALPHA_US]: given figures, else 0 */
  char tune_file[512];    /* TUTTI_TUNE_FILE: tuning table to load (or save), "" none */
  char host_id[64];       /* TUTTI_HOST_ID: this process's host identity, "" hostname+boot id */
  /* The machine model of the communicator, the same on every rank (tune/agree.c); filled
   * at init, inherited with the rest by communicators made from this one. */
  tutti_model_t model;
} tutti_config_t;

typedef struct tutti_config_var {
  const char *name;
  const char *def;
  const char *doc;
} tutti_config_var_t;

/* Reads every TUTTI_* variable into cfg. On a malformed value, returns
 * TUTTI_ERR_INVALID_ARGUMENT and writes the reason into err. */
tutti_result_t tutti__config_load(tutti_config_t *cfg, char *err, size_t errlen);

/* Parses a TUTTI_TUNE value into at most max rules (algo/tuner.c); on a malformed value
 * returns TUTTI_ERR_INVALID_ARGUMENT with the reason in err. */
tutti_result_t tutti__tune_parse(const char *spec, tutti_tune_rule_t *rules, int max, int *n,
                                 char *err, size_t errlen);

/* The table of every variable the library reads, for tutti-info and docs. */
const tutti_config_var_t *tutti__config_table(int *count);

/* ---- Time ---------------------------------------------------------------------------- */

/* Monotonic nanoseconds. */
int64_t tutti__now_ns(void);
/* The same clock at tick resolution (1-4 ms), several times cheaper to read: for deadlines
 * and call start times, read on every call, where milliseconds do not matter. */
int64_t tutti__coarse_ns(void);
static inline int64_t tutti__deadline_after(double seconds) {
  return tutti__now_ns() + (int64_t)(seconds * 1e9);
}

/* ---- Communicator -------------------------------------------------------------------- */

/* What a call is, sent in every message header and compared by the receiver against its own
 * call, so ranks that disagree fail with a sentence naming the field instead of misreading
 * bytes or hanging. */
typedef struct tutti_fingerprint {
  uint8_t coll;  /* tutti_coll_t */
  uint8_t dtype;
  uint8_t op;
  uint8_t pad;
  int32_t root;
  uint64_t count; /* per-rank count; 0 for variable-count calls (lengths still compared) */
} tutti_fingerprint_t;

/* Stores fp at dst as the two words the transports' copies of it load (call_publish, the
 * mailbox headers): a load that spans several narrower stores still in the store buffer cannot
 * take its bytes from them and waits until they reach the cache, behind the last call's post to
 * a line the peers hold (perf put 45% of an n = 2 8-byte broadcast root's samples there). */
static inline void tutti__fp_store(tutti_fingerprint_t *dst, tutti_fingerprint_t fp) {
  uint64_t w[2];
  memcpy(w, &fp, sizeof w);
  memcpy(dst, w, sizeof w);
}

struct tutti_transport;
struct tutti_xfer;
struct tutti_want;

#define TUTTI_HOST_BYTES 64

/* What every rank knows about every other after bootstrap. */
typedef struct tutti_peer {
  int32_t pid;
  uint32_t ip;   /* network order */
  uint16_t port; /* network order; the peer's data listener */
  char host[TUTTI_HOST_BYTES];
  char boot_id[40];
  int local_index; /* index among the ranks of this host, or -1 for a remote host */
  int kind;        /* the registry row serving this peer (TUTTI_TRANSPORT_*), 0 for this rank */
  struct tutti_transport *tp;
  uint32_t p2p_sent, p2p_rcvd; /* point-to-point messages to / from this peer so far */
  /* The latest collective call whose message from this peer arrived (so it posted that call)
   * and whose message to it was taken: what a hang report says about each peer. */
  uint32_t seen_seq, sent_seq;
  struct tutti_xfer *sendq_head, *sendq_tail; /* posted, unfinished sends to this peer */
  struct tutti_xfer *recvq_head, *recvq_tail; /* posted, unfinished receives from it */
  int active; /* in comm->active: it may have posted operations (progress.c) */
} tutti_peer_t;

struct tutti_comm {
  int rank;
  int nranks;
  tutti_config_t cfg;
  uint64_t job_id;
  uint8_t secret[32];  /* the job secret (TUTTI_SECRET_BYTES): authenticates data connections */
  tutti_peer_t *peers;
  int nlocal;          /* ranks on this host, this one included */
  int oversubscribed;  /* more local ranks than CPUs: yield instead of spinning */
  /* Oversubscribed only: a running mean of how long the wait loop's idle waits last, which
   * decides whether the next one yields first or sleeps at once (transport/progress.c). */
  int64_t idle_wait_ns;
  int cma;             /* every rank is on this host and may read the others' memory */
  /* The live transports (transport/registry.c), each serving the peers whose tp it is. */
  struct tutti_transport *tps[TUTTI_MAX_TRANSPORTS];
  int ntps;
  struct tutti_transport *mbox;  /* the transport whose mailboxes serve every peer, or NULL */
  struct tutti_transport *calls; /* the transport publishing calls on this host, or NULL */
  int thread_ranks;    /* the peers are threads of this process: sleep rather than yield */
  uint32_t seq;        /* collectives started on this communicator */
  uint32_t call_seq;   /* the collective running now (its seq), or 0 between calls */
  /* During online selection's agreement after call agree_seq (call_seq is 0 then, so the
   * transports see no call): the call a failure there is reported as, since it fails it. */
  uint32_t agree_seq;
  /* Set while init agrees on the tuning model (tune/agree.c): a peer that already left init
   * and failed its first call must not fail this rank's init, whose data is on its way. */
  int in_agreement;
  int post_wait; /* 1 + the peer the wait loop's condition (a one-shot mailbox) waits on, or 0 */
  /* With post_wait: the earlier rooted call that peer has not started (mbox.c's
   * settle_pending) and this rank's fingerprint of it, or 0 where it waits on a mailbox. */
  uint32_t start_wait;
  tutti_fingerprint_t start_wait_fp;
  uint32_t verify_seq; /* the oldest rooted call some local peer had not published, or 0 */
  int64_t call_start_ns;
  /* The running call only copies into its output (all-gather, broadcast), which is larger
   * than the last-level cache: the shared-memory transport streams received bytes past the
   * cache (shm.c), saving the read of each output line an ordinary store makes first. */
  int recv_nt;
  unsigned report_seen; /* SIGUSR1 reports already written (forensics.c) */
  int listen_fd;       /* the data listener, kept open for tutti_comm_shrink */
  int retired_fd;      /* the listener of the communicator this one was shrunk from, or -1:
                        * kept open so that a rank calling shrink there too late times out
                        * instead of taking a refusal for a death (shrink.c) */
  tutti_fingerprint_t fp; /* the call whose messages are being posted */
  /* The API call in progress, for messages. Atomic because the caller's thread names its
   * call while the progress thread may be reporting an error of an earlier request; written
   * with TUTTI_SET_OP. */
  const char *_Atomic op_name;
  atomic_flag error_lock; /* guards last_error: both threads may fail at once */
  atomic_int aborted;  /* set by tutti_comm_abort, possibly from another thread */
  atomic_int work_pending; /* new tasks for the progress thread (engine.c) */
  struct tutti_engine *engine; /* non-blocking requests and the progress thread, or NULL */
  struct tutti_userop *userops; /* premul-sum operations created on this communicator */
  int nuserops;
  tutti_result_t failed; /* first fatal error; the communicator refuses work after it */
  int culprit;         /* 1 + the rank whose failure this one follows from, or 0 if unknown */
  char last_error[768];
  size_t error_first_len; /* length of the first failure's sentence in last_error, 0 if none */
  struct tutti_want *wants; /* nranks entries, used by the wait loop */
  /* The peers that may have posted operations (nranks entries, nactive used): the wait loop
   * scans these, so a wake-up costs the same at 4,096 ranks as at 2 (progress.c). */
  int *active;
  int nactive;
  struct tutti_xfer *cma_ops; /* 2 * nranks transfers for the single-copy algorithms */
  struct tutti_xfer **cma_pending; /* nranks of them still awaited (tutti__wait_any) */
  void *cma_descs;     /* nranks buffer descriptors (algo/cma.c) */
  uint64_t *cma_tokens; /* nranks completion tokens */
  /* The last pick per collective (algo/algo.c): the inputs of a pick other than the size
   * are fixed for the communicator's life, and a pick is ~100 ns of cost functions. online:
   * the size's online-selection slot where online selection settled it (re-checks count its
   * calls), else NULL. */
  struct {
    size_t bytes;
    const struct tutti_algo *algo;
    tutti_online_slot_t *online;
  } pick_cache[16];
  tutti_online_t online; /* online selection's sizes and trials (tune/online.c) */
  struct tutti_p2p *p2p; /* matched point-to-point receives (p2p_match.c), or NULL */
  struct tutti_topo *topo; /* hosts and local ranks (core/topo.c), built at init */
  void *scratch;       /* reused working memory of the algorithms */
  size_t scratch_bytes;
  /* This call's time spent mapping memory in for its first use (tutti__first_use): a cost
   * once per buffer, which online trials leave out of the algorithm's time (task.c). */
  int64_t first_use_ns;
  struct tutti_memreg *_Atomic memreg; /* registered buffers (memreg.c), made on first use */
};

/* Records an error of comm as a sentence "OP (rank R of N): REASON" and returns res. The
 * first failure (any result but TUTTI_ERR_INVALID_ARGUMENT) stays in last_error; a later
 * error is appended after it ("; later: ..."), replacing the previous such note. An argument
 * error before any failure is replaced by the next error. */
tutti_result_t tutti__error(struct tutti_comm *comm, tutti_result_t res, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for an error that, like an argument error, leaves comm as usable as before (a
 * refused call): it never becomes the communicator's first failure. */
tutti_result_t tutti__error_soft(struct tutti_comm *comm, tutti_result_t res, const char *fmt,
                                 ...) __attribute__((format(printf, 3, 4)));

/* Starts (open 1) or ends (open 0) keeping the first error this thread records, for the
 * group this thread has open (engine.c's tutti_group_start / _end); ending returns it, or
 * TUTTI_SUCCESS if none. */
tutti_result_t tutti__group_errors(int open);

/* Records why this thread's communicator creation failed (tutti_last_init_error). */
void tutti__init_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Marks comm failed with res (after tutti__error recorded why) and tells the peers through
 * every transport, so that ranks waiting on this one fail promptly instead of timing out
 * (transport/registry.c: it loops over the live transports). */
void tutti__comm_fail(struct tutti_comm *comm, tutti_result_t res);

/* "rank 3 (pid 812 on host a)" into buf. */
const char *tutti__peer_desc(const struct tutti_comm *comm, int peer, char *buf, size_t len);

/* Returns at least bytes of scratch memory owned by comm, reused across calls. */
tutti_result_t tutti__scratch(struct tutti_comm *comm, size_t bytes, void **out);

/* Names the API call in progress (comm->op_name). A relaxed store: a reader wants a name, not
 * an order, and a sequentially consistent one (a locked exchange on x86) drains the store
 * buffer at every call's entry, waiting for the last call's posts to reach the peers (perf put
 * 30% of an n = 2 8-byte broadcast root's samples there). With tutti__fp_store, that broadcast
 * ran 4.5% faster, not 30: the wait moves to the next store the full buffer holds up. */
#define TUTTI_SET_OP(comm, name) \
  atomic_store_explicit(&(comm)->op_name, (name), memory_order_relaxed)

/* prefault.c: maps [p, p + len) into this process now, so that its page faults do not land
 * in later, timed calls; tutti__first_use also adds the time it took to comm->first_use_ns. */
void tutti__prefault(void *p, size_t len);
void tutti__first_use(struct tutti_comm *comm, void *p, size_t len);

#endif
