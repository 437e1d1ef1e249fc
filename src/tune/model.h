/*
 * The machine the cost model describes: what was measured on it (or read back from a cache
 * or tuning file, or the documented fallbacks), plus any per-size algorithm rules of a
 * tuning file. A communicator holds one, the same on every rank (agree.c); the tuner
 * (algo/tuner.c) derives its alpha-beta parameters from it.
 *
 * The text form (table.c, docs/tuning.md) is what the cache file, TUTTI_TUNE_FILE and the
 * agreement at init all carry.
 */
#ifndef TUTTI_TUNE_MODEL_H
#define TUTTI_TUNE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "tutti.h"

/* What the measured figures mean (part of the host cache's key): raised whenever a figure
 * is measured differently, so caches of older builds are measured again. 2: single copy
 * from ordinary pages out of cache. 3: copy and reduce from memory over flushed buffers of
 * 4x L2 (measure.c). 4: the CPUs online (the cost of more ranks than CPUs). 5: the single
 * copy's timed passes each from its own source, read once untimed first (measure_cma.c). */
#define TUTTI_MEASURE_VERSION 5

/* Where a model's numbers came from. */
typedef enum {
  TUTTI_MODEL_FALLBACK = 0, /* the documented defaults (TUTTI_TUNE_MEASURE=0, or no measurement) */
  TUTTI_MODEL_MEASURED,     /* measured by this process now */
  TUTTI_MODEL_CACHED,       /* read from the per-user cache file of this host and boot */
  TUTTI_MODEL_FILE,         /* read from TUTTI_TUNE_FILE */
} tutti_model_source_t;

/* One rule of a tuning file: collective coll (a tutti_coll_t) on nlo..nhi ranks with
 * lo <= bytes < hi runs the algorithm called algo. */
typedef struct tutti_file_rule {
  int coll;
  int nlo, nhi;
  size_t lo, hi;
  char algo[24];
} tutti_file_rule_t;
#define TUTTI_FILE_MAX_RULES 64

/* Every quantity is 0 when it was not measured (the tuner then uses its fallback for it). */
typedef struct tutti_model {
  tutti_model_source_t source;
  int have;             /* filled in (by measurement, a file or the fallbacks) */
  int from_rank;        /* the rank whose model this is (0 after the agreement) */
  double measure_ms;    /* how long measuring took (source MEASURED) */
  char origin[160];     /* a path, or how it was measured, for tutti-info --explain */
  /* The host cache's: how many measurements its figures are the best of (agree.c), and when
   * the last one was taken (seconds since the epoch). */
  size_t samples, measured_at;
  /* Caches, from sysfs or sysconf. */
  size_t l1d_bytes, l2_bytes, l3_bytes;
  /* CPUs online on the host: where it has more ranks than these, they take turns. */
  size_t cpus;
  /* Bandwidths in bytes per second, one core: memcpy and a float32 sum c = a + b through
   * tutti__reduce, with the working set in L2 ("cached") or read from memory (buffers
   * flushed from the caches, or twice the last-level cache where they cannot be). */
  double copy_cached_bps, copy_mem_bps;
  double reduce_cached_bps, reduce_mem_bps;
  /* Two threads of one process pinned to different CPUs (an approximation of two local
   * ranks): one-way cache-line hand-off, futex wake-up, and the speed at which one reads a
   * buffer (in cache) the other just wrote. */
  double handoff_s, wake_s, xcore_bps;
  /* process_vm_readv on this process: bytes per second from a buffer of ordinary (not huge)
   * pages into another, both out of cache, and one 8-byte call. */
  double cma_bps, cma_call_s;
  /* TCP over loopback between two threads: one-way latency of 8 bytes, streaming speed. */
  double tcp_alpha_s, tcp_bps;
  /* The link between hosts, measured at init of a job that spans hosts (link.c) or given
   * (TUTTI_TUNE_NET, a tuning file): one-way latency of a small message and streaming speed
   * through the transport. 0: not known, the tuner charges crossing hosts the loopback
   * figures above. */
  double net_alpha_s, net_bps;
  int nrules;
  tutti_file_rule_t rules[TUTTI_FILE_MAX_RULES];
} tutti_model_t;

/* The fallbacks (model.c): the parameters the tuner used before it measured anything,
 * fitted on the development machine (2-core AMD EPYC, 32 MiB L3; see tuner.c). */
void tutti__model_fallback(tutti_model_t *m);

/* "fallback", "measured", "cached", "file": the word of the text form. */
const char *tutti__model_source_word(int s);

/* ---- agree.c: the model of a communicator -------------------------------------------- */

struct tutti_comm;
struct tutti_config;
/* The model one process would use (rank 0 at init, tutti-info): the host cache or a new
 * measurement, or the fallbacks (TUTTI_TUNE_MEASURE), overlaid by TUTTI_TUNE_FILE when that
 * file exists (saved there when it does not). A TUTTI_TUNE_FILE that does not parse fails
 * with TUTTI_ERR_INVALID_ARGUMENT and the reason in err. */
tutti_result_t tutti__model_obtain(const struct tutti_config *cfg, tutti_model_t *m, char *err,
                                   size_t errlen);
/* Fills comm->cfg.model with rank 0's model on every rank (a binomial-tree broadcast over the
 * transports, right after they connect), unless it is inherited already. A rank 0 that
 * cannot obtain one makes every rank fail with its reason. */
tutti_result_t tutti__model_agree(struct tutti_comm *comm);

/* ---- measure.c / measure_sync.c -------------------------------------------------------- */

/* The parts of measuring this machine (agree.c runs them, a few tens of ms in all), each
 * filling its fields of m (0 where it could not) and returning 0 or -1. */
void tutti__measure_caches(tutti_model_t *m);
int tutti__measure_memory(tutti_model_t *m);
int tutti__measure_threads(tutti_model_t *m);
int tutti__measure_tcp(tutti_model_t *m);
/* The single copy's bandwidth per reader with two readers at once (measure_cma.c), copying
 * into dst0 and dst1 (1 MiB each, distinct): fills cma_bps, or returns -1 and leaves it.
 * tutti__measure_memory runs it where the copy works. */
int tutti__measure_cma(tutti_model_t *m, char *dst0, char *dst1);
/* Helpers of the measurements: a CPU this process may run on other than the current one, or
 * -1; pinning the calling thread to cpu (nothing for -1); evicting a buffer from every cache
 * level (0, or -1 where the architecture has no user-mode flush; bytes 0 asks only that). */
int tutti__measure_other_cpu(void);
void tutti__measure_pin(int cpu);
int tutti__measure_flush(const char *p, size_t bytes);
/* This thread's CPU time in nanoseconds (user and kernel): what the bandwidth passes are
 * timed in, so preemption by other jobs does not count against the machine. */
int64_t tutti__measure_cpu_ns(void);

/* ---- link.c: the link between hosts ----------------------------------------------------- */

/* What rank 0 timed against a rank of another host (seconds; 0 where not timed): each
 * transfer is one way, timed from its header to the partner's small reply. */
typedef struct tutti_link_times {
  double rtt_s;       /* the best round trip of a small message */
  double lead_bytes;  /* a transfer of lead_bytes took lead_s */
  double lead_s;
  double body_bytes;  /* one of lead_bytes + body_bytes took long_s (0: not timed) */
  double long_s;
  int npairs;         /* how many such pairs the times are the best of */
} tutti_link_times_t;
/* The link's one-way latency (half the best round trip) and streaming speed: body_bytes over
 * long_s - lead_s (latency, reply, start-up and a token bucket's burst cancel), or, with no
 * long transfer, lead_bytes over lead_s less a round trip. Returns 0, or -1 with the reason
 * in why (the figures are then unusable and the caller keeps the loopback ones). */
int tutti__link_estimate(const tutti_link_times_t *t, double *alpha_s, double *bps, char *why,
                         size_t whylen);
/* Run by rank 0 and by the first rank of another host (the partner) before the model is
 * sent to all (agree.c), when the communicator spans hosts: rank 0 tells the partner whether
 * to measure (not when go is 0 on rank 0, m->net_bps is already given, or TUTTI_TUNE_NET=0
 * on rank 0), then times a few
 * ping-pongs and one to four pairs of one-way transfers (4 MiB and ~35 ms on a 1 Gbit/s
 * link; about 20 ms at 10 Gbit/s) and writes
 * net_alpha_s and net_bps into m. Every wait has the communicator's deadline; a transport
 * failure fails (the agreement would fail too); figures that make no sense are logged and
 * left out. Other ranks return at once. */
tutti_result_t tutti__link_measure(struct tutti_comm *comm, tutti_model_t *m, int go);

/* ---- table.c: the text form ------------------------------------------------------------ */

/* Writes m as text into buf (len bytes, NUL-terminated); key, when not NULL, becomes the
 * table's "key" line (the cache file's host identity). Returns the length, or -1 if buf is
 * too small. */
int tutti__table_write(const tutti_model_t *m, const char *key, char *buf, size_t len);
/* Parses text into m (fields not given stay as they were). key_out (keylen bytes), when not
 * NULL, receives the "key" line's value or "". Returns 0, or -1 with a sentence naming the
 * line and what is wrong in err. */
int tutti__table_parse(const char *text, tutti_model_t *m, char *key_out, size_t keylen,
                       char *err, size_t errlen);
/* Reads a whole file (at most 64 KiB) into a malloc'd NUL-terminated string, or NULL with
 * the reason in err. */
char *tutti__table_slurp(const char *path, char *err, size_t errlen);
/* Writes text to path atomically (a temporary file renamed over it). 0, or -1 with err. */
int tutti__table_store(const char *path, const char *text, char *err, size_t errlen);

/* ---- host_cache.c: the per-user cache of this host and boot ------------------------------ */

/* The identity a cache file must match: CPU model, cache sizes, kernel release, boot id. */
void tutti__host_key(char *buf, size_t len);
/* The cache file's path ($XDG_CACHE_HOME/tutti/machine, else ~/.cache/tutti/machine), or -1
 * when neither is known. */
int tutti__host_cache_path(char *buf, size_t len);
/* The same directory's file called name (online.c's remembered picks: "picks"), or -1. */
int tutti__host_cache_file(const char *name, char *buf, size_t len);
/* mkdir -p of the directories above path, private to the user: 0, or -1 (errno set). */
int tutti__make_parents(char *path);
/* Loads m from the cache file when it exists, parses and matches this host's key: 1 loaded,
 * 0 not (missing, stale or broken; broken ones are logged). */
int tutti__host_cache_load(tutti_model_t *m);
/* Saves m as this host's cache file (best effort: failures are logged, never fatal). */
void tutti__host_cache_save(const tutti_model_t *m);

#endif
