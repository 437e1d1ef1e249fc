/*
 * coll_check: the collective matrix test, one program run on every rank under tutti-run.
 *
 * For every collective x dtype x op (reducing collectives) x count x {out of place, in place}
 * x root (broadcast, reduce) it fills the inputs from (rank, index, case seed), runs the call
 * and compares every element bit for bit with a reference computed independently in ref.c from
 * every rank's regenerated input. It also checks the guard regions around every buffer, that
 * sendbuf is left alone, that reduce leaves non-root receive buffers alone, and, for
 * all-reduce, all-gather and broadcast with random floats, that all ranks hold the same bits
 * and that a repeated call gives the same bits again.
 *
 *   tutti-run -n 4 coll_check [--quick] [--max-count N] [--colls allreduce,broadcast]
 *                             [--hosts 0,0,1,2,2,2]
 *
 * --hosts gives each rank (by TUTTI_RANK) a fake host through TUTTI_HOST_ID, so that the
 * ranks of one machine form several "hosts" (tcp between them, shm within): the
 * hierarchical algorithms and the host-ordered ring run in an ordinary test.
 *
 * TUTTI_TEST_QUICK=1 in the environment is the same as --quick.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ref.h"
#include "tutti.h"

typedef enum {
  C_ALLGATHER,
  C_ALLREDUCE,
  C_REDUCE_SCATTER,
  C_BROADCAST,
  C_REDUCE,
  NUM_COLLS
} coll_t;
static const char *const coll_names[NUM_COLLS] = {"allgather", "allreduce", "reduce_scatter",
                                                  "broadcast", "reduce"};

#define BIG_COUNT ((size_t)1048579)
static const size_t counts[] = {0, 1, 7, 1023, BIG_COUNT};
#define NUM_COUNTS (sizeof counts / sizeof counts[0])

#define GUARD 256           /* bytes of canary before and after every buffer        */
#define GUARD_BYTE 0xA5     /* the guard canary                                     */
#define RECV_BYTE 0x5A      /* what a receive buffer holds before the call          */
#define MAX_REPORTS 30      /* mismatch lines printed per rank before going quiet   */

static struct {
  int quick;
  size_t max_count;
  int colls[NUM_COLLS];
} opt;

static tutti_comm_t comm;
static int rank, nranks;
static long n_cases, n_failed, n_reports;

/* Stops the program when a tutti call fails: the communicator can no longer be trusted. */
static void check_call(tutti_result_t rc, const char *what, const char *detail) {
  if (rc == TUTTI_SUCCESS) return;
  fprintf(stderr, "coll_check rank %d: %s (%s) returned %s: %s\n", rank, what, detail,
          tutti_result_string(rc), comm ? tutti_comm_last_error(comm) : "(no communicator)");
  exit(1);
}

/* ---- Guarded buffers ------------------------------------------------------------------ */

typedef struct {
  unsigned char *mem; /* GUARD canary bytes, then the data, then GUARD canary bytes */
  size_t bytes;
} gbuf_t;

static unsigned char *gbuf_new(gbuf_t *g, size_t bytes) {
  g->bytes = bytes;
  g->mem = malloc(bytes + 2 * GUARD);
  if (!g->mem) {
    fprintf(stderr, "coll_check rank %d: out of memory (%zu bytes)\n", rank, bytes);
    exit(1);
  }
  memset(g->mem, GUARD_BYTE, GUARD);
  memset(g->mem + GUARD + bytes, GUARD_BYTE, GUARD);
  return g->mem + GUARD;
}

/* Returns NULL when both guards are intact, else which one was overwritten. */
static const char *gbuf_damage(const gbuf_t *g) {
  if (!g->mem) return NULL;
  for (size_t i = 0; i < GUARD; i++) {
    if (g->mem[i] != GUARD_BYTE) return "guard before the buffer";
    if (g->mem[GUARD + g->bytes + i] != GUARD_BYTE) return "guard after the buffer";
  }
  return NULL;
}

static void gbuf_free(gbuf_t *g) {
  free(g->mem);
  g->mem = NULL;
}

/* ---- One case ------------------------------------------------------------------------- */

typedef struct {
  coll_t coll;
  ref_case_t ref;
  size_t count; /* the count argument of the call */
  int inplace;
  int root;     /* -1 for collectives without one */
  size_t esize;
  gbuf_t sbuf, rbuf; /* in place, only the one that holds both is allocated */
  unsigned char *saved; /* out of place, and in-place reduce-scatter: sbuf's data as filled */
  unsigned char *send, *recv;
} tcase_t;

static int is_reducing(coll_t c) { return c != C_ALLGATHER && c != C_BROADCAST; }

static size_t send_elems(const tcase_t *t) {
  return t->coll == C_REDUCE_SCATTER ? (size_t)nranks * t->count : t->count;
}
static size_t recv_elems(const tcase_t *t) {
  return t->coll == C_ALLGATHER ? (size_t)nranks * t->count : t->count;
}

static void case_setup(tcase_t *t) {
  size_t es = t->esize, slot = t->count * es;
  memset(&t->sbuf, 0, sizeof t->sbuf);
  memset(&t->rbuf, 0, sizeof t->rbuf);
  if (!t->inplace) {
    t->send = gbuf_new(&t->sbuf, send_elems(t) * es);
    t->recv = gbuf_new(&t->rbuf, recv_elems(t) * es);
  } else if (t->coll == C_ALLGATHER) { /* sendbuf == recvbuf + rank * sendcount */
    t->recv = gbuf_new(&t->rbuf, recv_elems(t) * es);
    t->send = t->recv + (size_t)rank * slot;
  } else if (t->coll == C_REDUCE_SCATTER) { /* recvbuf == sendbuf + rank * recvcount */
    t->send = gbuf_new(&t->sbuf, send_elems(t) * es);
    t->recv = t->send + (size_t)rank * slot;
  } else {
    t->recv = gbuf_new(&t->rbuf, t->count * es);
    t->send = t->recv;
  }
}

/* Puts every buffer back to its state before the call: inputs generated, receive areas that
 * are not also input filled with RECV_BYTE. */
static void fill_inputs(tcase_t *t) {
  if (t->rbuf.mem) memset(t->rbuf.mem + GUARD, RECV_BYTE, t->rbuf.bytes);
  ref_fill(&t->ref, rank, 0, send_elems(t), t->send);
}

static tutti_result_t run_call(const tcase_t *t) {
  tutti_dtype_t dt = t->ref.dtype;
  switch (t->coll) {
  case C_ALLGATHER: return tutti_allgather(t->send, t->recv, t->count, dt, comm);
  case C_ALLREDUCE: return tutti_allreduce(t->send, t->recv, t->count, dt, t->ref.op, comm);
  case C_REDUCE_SCATTER:
    return tutti_reduce_scatter(t->send, t->recv, t->count, dt, t->ref.op, comm);
  case C_BROADCAST: return tutti_broadcast(t->send, t->recv, t->count, dt, t->root, comm);
  case C_REDUCE: return tutti_reduce(t->send, t->recv, t->count, dt, t->ref.op, t->root, comm);
  default: return TUTTI_ERR_INTERNAL;
  }
}

static const char *case_desc(const tcase_t *t) {
  static char s[256];
  snprintf(s, sizeof s, "coll=%s dtype=%s op=%s count=%zu inplace=%d root=%d rank=%d mode=%s",
           coll_names[t->coll], ref_dtype_name(t->ref.dtype),
           is_reducing(t->coll) ? ref_op_name(t->ref.op) : "-", t->count, t->inplace, t->root,
           rank, t->ref.mode == REF_EXACT ? "exact" : t->ref.mode == REF_RAW ? "raw" : "random");
  return s;
}

static void fmt_elem(tutti_dtype_t dt, const void *e, char *out, size_t n) {
  uint64_t bits = 0;
  memcpy(&bits, e, ref_dtype_size(dt));
  snprintf(out, n, "0x%0*llx (%.9g)", (int)ref_dtype_size(dt) * 2, (unsigned long long)bits,
           ref_to_double(dt, e));
}

/* Prints one failure line (up to MAX_REPORTS per rank). */
static void report(const tcase_t *t, const char *what, size_t index, const void *got,
                   const void *exp, size_t more) {
  if (n_reports++ >= MAX_REPORTS) return;
  char g[64], e[64];
  fprintf(stderr, "MISMATCH %s: %s", what, case_desc(t));
  if (got) {
    fmt_elem(t->ref.dtype, got, g, sizeof g);
    fprintf(stderr, " index=%zu got=%s", index, g);
  }
  if (exp) {
    fmt_elem(t->ref.dtype, exp, e, sizeof e);
    fprintf(stderr, " expected=%s", e);
  }
  if (more) fprintf(stderr, " (and %zu more elements)", more);
  fputc('\n', stderr);
}

/* Writes the expected bytes of elements k .. k+n-1 of a checked buffer to out. */
typedef void (*expect_fn)(const tcase_t *t, size_t k, size_t n, void *out);

static void exp_own_input(const tcase_t *t, size_t k, size_t n, void *out) {
  ref_fill(&t->ref, rank, k, n, out);
}
static void exp_gathered(const tcase_t *t, size_t k, size_t n, void *out) {
  unsigned char *o = out;
  while (n > 0) { /* split at the boundaries of the ranks' fragments */
    size_t r = k / t->count, i = k % t->count, m = t->count - i < n ? t->count - i : n;
    ref_fill(&t->ref, (int)r, i, m, o);
    k += m;
    n -= m;
    o += m * t->esize;
  }
}
static void exp_reduced(const tcase_t *t, size_t k, size_t n, void *out) {
  ref_expect_reduce(&t->ref, k, n, out);
}
static void exp_saved(const tcase_t *t, size_t k, size_t n, void *out) {
  memcpy(out, t->saved + k * t->esize, n * t->esize);
}
static void exp_root_input(const tcase_t *t, size_t k, size_t n, void *out) {
  ref_fill(&t->ref, t->root, k, n, out);
}

/* Compares n elements of buf with fn(t, offset + j) bit for bit; reports the first mismatch
 * (index j within buf). Returns the number of mismatching elements. Works in chunks so that the
 * common, passing path is one memcmp per chunk. */
static size_t check_elems(const tcase_t *t, const char *what, const unsigned char *buf,
                          size_t n, expect_fn fn, size_t offset) {
  enum { CHUNK = 4096 };
  static unsigned char exp[CHUNK * 8];
  size_t es = t->esize, bad = 0, first = 0;
  unsigned char first_exp[8];
  for (size_t base = 0; base < n; base += CHUNK) {
    size_t m = n - base < CHUNK ? n - base : CHUNK;
    fn(t, offset + base, m, exp);
    if (memcmp(buf + base * es, exp, m * es) == 0) continue;
    for (size_t j = 0; j < m; j++) {
      if (memcmp(buf + (base + j) * es, exp + j * es, es) == 0) continue;
      if (bad++ == 0) {
        first = base + j;
        memcpy(first_exp, exp + j * es, es);
      }
    }
  }
  if (bad) report(t, what, first, buf + first * es, first_exp, bad - 1);
  return bad;
}

/* REF_RANDOM all-reduce: each element within the reference's rounding bound. */
static size_t check_approx(const tcase_t *t) {
  enum { CHUNK = 4096 };
  static double want[CHUNK], tol[CHUNK];
  size_t bad = 0, first = 0;
  double first_want = 0, first_tol = 0;
  for (size_t base = 0; base < t->count; base += CHUNK) {
    size_t m = t->count - base < CHUNK ? t->count - base : CHUNK;
    ref_reduce_approx(&t->ref, base, m, want, tol);
    for (size_t j = 0; j < m; j++) {
      double got = ref_to_double(t->ref.dtype, t->recv + (base + j) * t->esize);
      double diff = got > want[j] ? got - want[j] : want[j] - got;
      if (!(diff <= tol[j]) && bad++ == 0) { /* a NaN fails too */
        first = base + j;
        first_want = want[j];
        first_tol = tol[j];
      }
    }
  }
  if (bad) {
    report(t, "result outside the rounding bound", first, t->recv + first * t->esize, NULL,
           bad - 1);
    if (n_reports <= MAX_REPORTS)
      fprintf(stderr, "  (reference %.17g, tolerance %.3g)\n", first_want, first_tol);
  }
  return bad;
}

/* Every check after the call. Returns the number of failed checks. */
static int check_case(const tcase_t *t) {
  int fails = 0;
  size_t c = t->count, slot = c * t->esize;
  const char *dmg;
  const gbuf_t *bufs[2] = {&t->sbuf, &t->rbuf};
  for (int b = 0; b < 2; b++)
    if ((dmg = gbuf_damage(bufs[b])) != NULL) {
      char what[96];
      snprintf(what, sizeof what, "%s: %s overwritten", b ? "recvbuf" : "sendbuf", dmg);
      report(t, what, 0, NULL, NULL, 0);
      fails++;
    }
  if (!t->inplace)
    fails += check_elems(t, "sendbuf modified", t->send, send_elems(t), exp_saved, 0) != 0;
  if (t->inplace && t->coll == C_REDUCE_SCATTER) { /* the rest of sendbuf is still input */
    size_t before = (size_t)rank * c, after = (size_t)(rank + 1) * c;
    fails += check_elems(t, "sendbuf before own slice modified", t->send, before, exp_saved,
                         0) != 0;
    fails += check_elems(t, "sendbuf after own slice modified", t->recv + slot,
                         (size_t)nranks * c - after, exp_saved, after) != 0;
  }
  switch (t->coll) {
  case C_ALLGATHER:
    fails += check_elems(t, "result", t->recv, (size_t)nranks * c, exp_gathered, 0) != 0;
    break;
  case C_ALLREDUCE:
    if (t->ref.mode == REF_RANDOM)
      fails += check_approx(t) != 0;
    else
      fails += check_elems(t, "result", t->recv, c, exp_reduced, 0) != 0;
    break;
  case C_REDUCE_SCATTER:
    fails += check_elems(t, "result", t->recv, c, exp_reduced, (size_t)rank * c) != 0;
    break;
  case C_BROADCAST:
    fails += check_elems(t, "result", t->recv, c, exp_root_input, 0) != 0;
    break;
  case C_REDUCE:
    if (rank == t->root) {
      fails += check_elems(t, "result", t->recv, c, exp_reduced, 0) != 0;
    } else if (t->inplace) {
      fails += check_elems(t, "non-root in-place buffer modified", t->recv, c, exp_own_input,
                           0) != 0;
    } else {
      for (size_t i = 0; i < slot; i++)
        if (t->recv[i] != RECV_BYTE) {
          char what[64];
          snprintf(what, sizeof what, "non-root recvbuf written at byte %zu", i);
          report(t, what, 0, NULL, NULL, 0);
          fails++;
          break;
        }
    }
    break;
  default: break;
  }
  return fails;
}

/* Whether two calls of one size may run different algorithms: online selection (on unless
 * TUTTI_TUNE_ONLINE=0) tries candidates in a size's first calls wherever the model picks,
 * which includes the sizes a forced TUTTI_ALGO cannot run (docs/tuning.md). The promise of
 * docs/api.md is the same bits for the same algorithm. */
static int algorithm_may_vary(void) {
  const char *online = getenv("TUTTI_TUNE_ONLINE"), *det = getenv("TUTTI_DETERMINISTIC");
  return !(online && !strcmp(online, "0")) && !(det && !strcmp(det, "1"));
}

/* All ranks hold the same bits (FNV-1a hashes all-gathered), and a repeated call with the same
 * inputs gives the same bits: a reduction whose algorithm may have changed between the calls
 * gives a result that passes the reference check again instead. Returns the number of failed
 * checks. */
static int check_identity(tcase_t *t) {
  int fails = 0;
  size_t bytes = recv_elems(t) * t->esize;
  unsigned char *saved = malloc(bytes ? bytes : 1);
  uint64_t *hashes = calloc((size_t)nranks, sizeof *hashes);
  if (!saved || !hashes) {
    fprintf(stderr, "coll_check rank %d: out of memory\n", rank);
    exit(1);
  }
  memcpy(saved, t->recv, bytes);
  uint64_t h = ref_fnv1a(saved, bytes);
  check_call(tutti_allgather(&h, hashes, 1, TUTTI_UINT64, comm), "tutti_allgather of hashes",
             case_desc(t));
  for (int r = 0; r < nranks; r++)
    if (hashes[r] != h) {
      if (n_reports++ < MAX_REPORTS)
        fprintf(stderr, "MISMATCH ranks hold different bits: %s: hash %016llx here, %016llx "
                        "on rank %d\n",
                case_desc(t), (unsigned long long)h, (unsigned long long)hashes[r], r);
      fails++;
      break;
    }
  fill_inputs(t);
  check_call(run_call(t), "repeated call", case_desc(t));
  if (is_reducing(t->coll) && algorithm_may_vary()) {
    fails += check_case(t);
  } else if (memcmp(saved, t->recv, bytes) != 0) {
    size_t i = 0;
    while (i < bytes && saved[i] == t->recv[i]) i++;
    size_t e = i / t->esize;
    report(t, "repeated call gave different bits", e, t->recv + e * t->esize, saved + e * t->esize,
           0);
    fails++;
  }
  free(hashes);
  free(saved);
  return fails;
}

static void run_case(coll_t coll, tutti_dtype_t dt, tutti_op_t op, size_t count, int inplace,
                     int root, ref_mode_t mode) {
  tcase_t t = {.coll = coll, .count = count, .inplace = inplace, .root = root};
  t.ref.dtype = dt;
  t.ref.op = op;
  t.ref.mode = mode;
  t.ref.nranks = nranks;
  t.ref.seed = ref_hash(0x7e577e57c0ffeeull ^ ((uint64_t)mode << 56) ^ ((uint64_t)count << 8),
                        (int)(coll * 1000 + dt * 100 + op * 10 + inplace), (size_t)(root + 1));
  t.esize = ref_dtype_size(dt);
  case_setup(&t);
  fill_inputs(&t);
  t.saved = NULL;
  if (t.sbuf.mem) { /* a copy of the input, to check that the call left it alone */
    t.saved = malloc(t.sbuf.bytes ? t.sbuf.bytes : 1);
    if (!t.saved) {
      fprintf(stderr, "coll_check rank %d: out of memory\n", rank);
      exit(1);
    }
    memcpy(t.saved, t.send, t.sbuf.bytes);
  }
  check_call(run_call(&t), coll_names[coll], case_desc(&t));
  int fails = check_case(&t);
  if (mode == REF_RANDOM && (coll == C_ALLREDUCE || coll == C_ALLGATHER || coll == C_BROADCAST))
    fails += check_identity(&t);
  n_cases++;
  if (fails) n_failed++;
  gbuf_free(&t.sbuf);
  gbuf_free(&t.rbuf);
  free(t.saved);
}

/* ---- The matrix ----------------------------------------------------------------------- */

/* --quick keeps the big count only where it covers each dimension once. */
static int keep_count(coll_t coll, tutti_dtype_t dt, tutti_op_t op, size_t count) {
  if (count > opt.max_count) return 0;
  if (count != BIG_COUNT || !opt.quick) return 1;
  if (!is_reducing(coll))
    return dt == TUTTI_FLOAT32 || dt == TUTTI_INT8 || dt == TUTTI_BFLOAT16;
  return (dt == TUTTI_FLOAT32 && op == TUTTI_SUM) || (dt == TUTTI_INT8 && op == TUTTI_MAX) ||
         (dt == TUTTI_BFLOAT16 && op == TUTTI_AVG);
}

static void run_matrix(coll_t coll) {
  int has_root = coll == C_BROADCAST || coll == C_REDUCE;
  int random_too = coll == C_ALLREDUCE || coll == C_ALLGATHER || coll == C_BROADCAST;
  int nops = is_reducing(coll) ? REF_NUM_OPS : 1;
  for (int d = 0; d < REF_NUM_DTYPES; d++) {
    tutti_dtype_t dt = (tutti_dtype_t)d;
    for (int o = 0; o < nops; o++) {
      tutti_op_t op = (tutti_op_t)o;
      for (size_t ci = 0; ci < NUM_COUNTS; ci++) {
        size_t count = counts[ci];
        if (!keep_count(coll, dt, op, count)) continue;
        int all_roots = has_root && (count == 7 || count == 1023);
        for (int inplace = 0; inplace < 2; inplace++) {
          for (int root = all_roots ? 0 : nranks - 1; root < nranks; root++) {
            int r = has_root ? root : -1;
            run_case(coll, dt, op, count, inplace, r, is_reducing(coll) ? REF_EXACT : REF_RAW);
            if (random_too && ref_dtype_is_float(dt))
              run_case(coll, dt, op, count, inplace, r, REF_RANDOM);
          }
        }
      }
    }
  }
}

static void usage(const char *argv0) {
  fprintf(stderr, "usage: %s [--quick] [--max-count N] [--colls name,name,...] "
                  "[--hosts H0,H1,...]\n"
                  "  collectives: allgather allreduce reduce_scatter broadcast reduce\n",
          argv0);
  exit(2);
}

/* Sets TUTTI_HOST_ID to "fake-" and this rank's entry of the comma list. */
static void fake_hosts(const char *list) {
  const char *r = getenv("TUTTI_RANK");
  int me = r ? atoi(r) : 0;
  for (int i = 0; list && i < me; i++) {
    list = strchr(list, ',');
    if (list) list++;
  }
  if (!list) {
    fprintf(stderr, "coll_check: --hosts has no entry for rank %d\n", me);
    exit(2);
  }
  char id[64];
  snprintf(id, sizeof id, "fake-%.*s", (int)strcspn(list, ","), list);
  setenv("TUTTI_HOST_ID", id, 1);
}

static void parse_args(int argc, char **argv) {
  const char *q = getenv("TUTTI_TEST_QUICK");
  opt.quick = q && *q && strcmp(q, "0") != 0;
  opt.max_count = (size_t)-1;
  for (int c = 0; c < NUM_COLLS; c++) opt.colls[c] = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) {
      opt.quick = 1;
    } else if (strcmp(argv[i], "--max-count") == 0 && i + 1 < argc) {
      char *end;
      opt.max_count = strtoull(argv[++i], &end, 10);
      if (*end) usage(argv[0]);
    } else if (strcmp(argv[i], "--hosts") == 0 && i + 1 < argc) {
      fake_hosts(argv[++i]);
    } else if (strcmp(argv[i], "--colls") == 0 && i + 1 < argc) {
      char list[256];
      snprintf(list, sizeof list, "%s", argv[++i]);
      for (int c = 0; c < NUM_COLLS; c++) opt.colls[c] = 0;
      for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int found = 0;
        for (int c = 0; c < NUM_COLLS; c++)
          if (strcmp(tok, coll_names[c]) == 0) opt.colls[c] = found = 1;
        if (!found) usage(argv[0]);
      }
    } else {
      usage(argv[0]);
    }
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  parse_args(argc, argv);
#ifdef __GLIBC__
  /* Keep freed buffers in the heap (up to glibc's 32 MiB limit for this): otherwise every
   * case maps its big buffers afresh and spends its time in page faults. */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  setvbuf(stdout, NULL, _IOLBF, 0);
  check_call(tutti_comm_init_env(&comm), "tutti_comm_init_env", "start");
  check_call(tutti_comm_rank(comm, &rank), "tutti_comm_rank", "start");
  check_call(tutti_comm_size(comm, &nranks), "tutti_comm_size", "start");
  const char *transport = getenv("TUTTI_TRANSPORT");
  if (!transport || !*transport) transport = "auto";

  for (int c = 0; c < NUM_COLLS; c++) {
    if (!opt.colls[c]) continue;
    long cases0 = n_cases, failed0 = n_failed;
    double t0 = now_s();
    run_matrix((coll_t)c);
    if (rank == 0)
      printf("coll_check: %-14s %5ld cases, %ld failed here, %.1f s\n", coll_names[c],
             n_cases - cases0, n_failed - failed0, now_s() - t0);
  }

  int64_t mine = n_failed, total = 0;
  check_call(tutti_allreduce(&mine, &total, 1, TUTTI_INT64, TUTTI_SUM, comm),
             "tutti_allreduce", "failure count");
  if (mine) fprintf(stderr, "coll_check rank %d: %ld of %ld cases FAILED\n", rank, n_failed,
                    n_cases);
  if (rank == 0) {
    if (total == 0)
      printf("coll_check: %ld cases passed (n=%d, transport=%s%s)\n", n_cases, nranks,
             transport, opt.quick ? ", quick" : "");
    else
      printf("coll_check: FAILED: %lld failed case checks summed over ranks, %ld cases "
             "(n=%d, transport=%s)\n",
             (long long)total, n_cases, nranks, transport);
  }
  check_call(tutti_barrier(comm), "tutti_barrier", "end");
  check_call(tutti_comm_destroy(comm), "tutti_comm_destroy", "end");
  return total == 0 ? 0 : 1;
}
