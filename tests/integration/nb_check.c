/*
 * nb_check: non-blocking operations, requests and groups, one program run on every rank under
 * tutti-run.
 *
 *   tutti-run -n 3 nb_check [--only section,section,...]
 *
 * Sections (each re-arms a 120 s watchdog, so a hang is a failure that names the section):
 *   many     20 non-blocking collectives of mixed kinds (iallreduce, iallgather, ibroadcast with
 *            rotating roots, ireduce_scatter, ialltoall, ibarrier) outstanding at once on
 *            distinct buffers, waited in order, every result checked; requests keep their result
 *            after completion; tutti_test polled until done, and it reports "not done" while a
 *            peer has not joined yet
 *   order    an iallreduce followed, before it is waited, by a blocking all-reduce (and by more
 *            non-blocking operations) reading its output: operations complete in issue order
 *   p2p      isend then irecv of 4 MiB in both directions between every pair of ranks, pair by
 *            pair and all at once: no deadlock, right data
 *   cpu      rank 1 joins an iallreduce 2 s late; the others' whole-process CPU time across
 *            tutti_wait (progress thread included) must stay under 0.2 s
 *   group    50 all-reduces in one group; fusion boundaries (dtype/op changes, in place); a
 *            broadcast with sends and receives in one group; nested groups; a non-blocking call
 *            inside a group; an empty group; tutti_group_end without start is an error
 *   free     tutti_request_free on an unfinished request leaves the communicator working and the
 *            operation completing; NULL requests and invalid arguments of the i-forms are refused
 *   nbv      the non-blocking v-variants, equal-count forms and ireduce, checked once each
 *
 * Expected values are computed here from every rank's inputs; nothing is taken from the library.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_report.h"
#include "ref.h"
#include "tutti.h"

#define MAX_RANKS 64
#define RECV_BYTE 0x5A

static tutti_comm_t comm;
static int rank, nranks;

/* Compares n int32 elements; one check. */
static int check_i32(const char *what, const int32_t *got, const int32_t *exp, size_t n) {
  if (n == 0 || memcmp(got, exp, n * 4) == 0) {
    pass();
    return 1;
  }
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (got[i] != exp[i] && bad++ == 0) first = i;
  fail("%s: element %zu is %d (0x%08x), expected %d (%zu of %zu differ)", what, first,
       got[first], (unsigned)got[first], exp[first], bad, n);
  return 0;
}

static int check_f32(const char *what, const float *got, const float *exp, size_t n) {
  if (n == 0 || memcmp(got, exp, n * 4) == 0) {
    pass();
    return 1;
  }
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (memcmp(&got[i], &exp[i], 4) != 0 && bad++ == 0) first = i;
  fail("%s: element %zu is %.9g, expected %.9g (%zu of %zu differ)", what, first,
       (double)got[first], (double)exp[first], bad, n);
  return 0;
}

/* Element p of source src's raw int32 data for a case. */
static int32_t raw32(uint64_t seed, int src, size_t p) { return (int32_t)ref_hash(seed, src, p); }

static void raw_fill(uint64_t seed, int src, size_t first, size_t n, int32_t *out) {
  for (size_t i = 0; i < n; i++) out[i] = raw32(seed, src, first + i);
}

/* A small value rank r contributes to a sum at element i: sums stay far from overflow. */
static int32_t small(uint64_t seed, int r, size_t i) {
  return (int32_t)(ref_hash(seed, r, i) % 2001) - 1000;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void sleep_s(double s) {
  struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&t, &t) != 0) {
  }
}

/* A correct blocking all-reduce: the communicator works. */
static void still_works(const char *after) {
  int32_t in[5], out[5], want[5];
  for (int i = 0; i < 5; i++) {
    in[i] = rank * 10 + i;
    want[i] = 10 * nranks * (nranks - 1) / 2 + nranks * i;
  }
  char desc[160];
  snprintf(desc, sizeof desc, "all-reduce after %s", after);
  if (call_ok(tutti_allreduce(in, out, 5, TUTTI_INT32, TUTTI_SUM, comm), desc))
    check_i32(desc, out, want, 5);
}

/* ---- many: 20 outstanding operations ----------------------------------------------------- */

typedef enum { K_ALLREDUCE, K_ALLGATHER, K_BROADCAST, K_REDUCE_SCATTER, K_ALLTOALL, K_BARRIER } kind_t;
static const char *const kind_names[] = {"iallreduce", "iallgather", "ibroadcast",
                                         "ireduce_scatter", "ialltoall", "ibarrier"};

typedef struct {
  kind_t kind;
  size_t count;
  int root;
  uint64_t seed;
  void *in, *out;
  size_t in_elems, out_elems;
  tutti_request_t req;
  int issued;
} nbop_t;

static void nbop_setup(nbop_t *o, int k) {
  o->kind = (kind_t)(k % 6);
  o->seed = ref_hash(0x4E42ull, k, 0);
  o->root = k % nranks;
  o->req = NULL;
  o->issued = 0;
  size_t n = (size_t)nranks;
  switch (o->kind) {
  case K_ALLREDUCE: o->count = k == 6 ? (size_t)1 << 20 : 1000 + (size_t)k; /* one of 4 MiB */
    o->in_elems = o->out_elems = o->count; break;
  case K_ALLGATHER: o->count = 100 + (size_t)k; o->in_elems = o->count; o->out_elems = n * o->count; break;
  case K_BROADCAST: o->count = 5000 + (size_t)k; o->in_elems = o->out_elems = o->count; break;
  case K_REDUCE_SCATTER: o->count = 50 + (size_t)k; o->in_elems = n * o->count; o->out_elems = o->count; break;
  case K_ALLTOALL: o->count = 20 + (size_t)k; o->in_elems = o->out_elems = n * o->count; break;
  default: o->count = 0; o->in_elems = o->out_elems = 0; break;
  }
  o->in = xmalloc(o->in_elems * 4);
  o->out = xmalloc(o->out_elems * 4);
  memset(o->out, RECV_BYTE, o->out_elems * 4);
  int32_t *iv = o->in;
  float *fv = o->in;
  for (size_t i = 0; i < o->in_elems; i++) {
    if (o->kind == K_ALLREDUCE) iv[i] = small(o->seed, rank, i);
    else if (o->kind == K_REDUCE_SCATTER) fv[i] = (float)small(o->seed, rank, i);
    else iv[i] = raw32(o->seed, rank, i);
  }
}

static tutti_result_t nbop_issue(nbop_t *o) {
  switch (o->kind) {
  case K_ALLREDUCE:
    return tutti_iallreduce(o->in, o->out, o->count, TUTTI_INT32, TUTTI_SUM, comm, &o->req);
  case K_ALLGATHER: return tutti_iallgather(o->in, o->out, o->count, TUTTI_INT32, comm, &o->req);
  case K_BROADCAST:
    return tutti_ibroadcast(o->in, o->out, o->count, TUTTI_INT32, o->root, comm, &o->req);
  case K_REDUCE_SCATTER:
    return tutti_ireduce_scatter(o->in, o->out, o->count, TUTTI_FLOAT32, TUTTI_SUM, comm,
                                 &o->req);
  case K_ALLTOALL: return tutti_ialltoall(o->in, o->out, o->count, TUTTI_INT32, comm, &o->req);
  default: return tutti_ibarrier(comm, &o->req);
  }
}

static void nbop_check(const nbop_t *o, int k) {
  char w[128];
  snprintf(w, sizeof w, "op %d (%s, count %zu%s)", k, kind_names[o->kind], o->count,
           o->kind == K_BROADCAST ? ", rotating root" : "");
  size_t n = o->out_elems;
  if (o->kind == K_BARRIER) return;
  if (o->kind == K_REDUCE_SCATTER) {
    float *exp = xmalloc(n * 4);
    for (size_t i = 0; i < n; i++) {
      double s = 0;
      for (int r = 0; r < nranks; r++) s += small(o->seed, r, (size_t)rank * o->count + i);
      exp[i] = (float)s;
    }
    check_f32(w, o->out, exp, n);
    free(exp);
    return;
  }
  int32_t *exp = xmalloc(n * 4);
  for (size_t i = 0; i < n; i++) {
    switch (o->kind) {
    case K_ALLREDUCE: {
      int32_t s = 0;
      for (int r = 0; r < nranks; r++) s += small(o->seed, r, i);
      exp[i] = s;
      break;
    }
    case K_ALLGATHER: exp[i] = raw32(o->seed, (int)(i / o->count), i % o->count); break;
    case K_BROADCAST: exp[i] = raw32(o->seed, o->root, i); break;
    default: /* all-to-all: block b comes from rank b's block `rank` */
      exp[i] = raw32(o->seed, (int)(i / o->count), (size_t)rank * o->count + i % o->count);
      break;
    }
  }
  check_i32(w, o->out, exp, n);
  free(exp);
}

static void nbop_free(nbop_t *o) {
  free(o->in);
  free(o->out);
}

#define NUM_MANY 20

static void section_many(void) {
  nbop_t ops[NUM_MANY];
  char w[128];
  for (int k = 0; k < NUM_MANY; k++) nbop_setup(&ops[k], k);
  for (int k = 0; k < NUM_MANY; k++) {
    snprintf(w, sizeof w, "issuing op %d (%s)", k, kind_names[ops[k].kind]);
    ops[k].issued = call_ok(nbop_issue(&ops[k]), w);
    if (ops[k].issued && !ops[k].req) fail("%s: success but no request", w);
  }
  for (int k = 0; k < NUM_MANY; k++) {
    if (!ops[k].issued || !ops[k].req) continue;
    snprintf(w, sizeof w, "tutti_wait on op %d (%s)", k, kind_names[ops[k].kind]);
    if (!call_ok(tutti_wait(ops[k].req), w)) continue;
    nbop_check(&ops[k], k);
  }
  /* After completion a request keeps its result: test says done, wait says success again. */
  for (int k = 0; k < NUM_MANY; k++) {
    if (!ops[k].issued || !ops[k].req) continue;
    int done = -1;
    tutti_result_t rc = tutti_test(ops[k].req, &done);
    if (rc != TUTTI_SUCCESS || done != 1)
      fail("tutti_test on completed op %d returned %s, done=%d", k, tutti_result_string(rc),
           done);
    else
      pass();
    rc = tutti_wait(ops[k].req);
    if (rc != TUTTI_SUCCESS)
      fail("second tutti_wait on completed op %d returned %s", k, tutti_result_string(rc));
    else
      pass();
    snprintf(w, sizeof w, "tutti_request_free on completed op %d", k);
    if (call_ok(tutti_request_free(ops[k].req), w)) pass();
  }
  for (int k = 0; k < NUM_MANY; k++) nbop_free(&ops[k]);

  /* The same 20 again, waited in reverse order this time. */
  for (int k = 0; k < NUM_MANY; k++) nbop_setup(&ops[k], k + NUM_MANY);
  for (int k = 0; k < NUM_MANY; k++) {
    snprintf(w, sizeof w, "issuing op %d (%s)", k + NUM_MANY, kind_names[ops[k].kind]);
    ops[k].issued = call_ok(nbop_issue(&ops[k]), w);
  }
  for (int k = NUM_MANY - 1; k >= 0; k--) {
    if (!ops[k].issued || !ops[k].req) continue;
    snprintf(w, sizeof w, "tutti_wait (reverse order) on op %d", k + NUM_MANY);
    if (call_ok(tutti_wait(ops[k].req), w)) nbop_check(&ops[k], k + NUM_MANY);
    tutti_request_free(ops[k].req);
  }
  for (int k = 0; k < NUM_MANY; k++) nbop_free(&ops[k]);

  /* tutti_test polling: rank 1 joins 300 ms late, so until then the others must see "not done";
   * then every rank polls until done. */
  const size_t cnt = 100000;
  int32_t *in = xmalloc(cnt * 4), *out = xmalloc(cnt * 4), *exp = xmalloc(cnt * 4);
  uint64_t seed = ref_hash(0x7E57ull, 0, 0);
  for (size_t i = 0; i < cnt; i++) {
    in[i] = small(seed, rank, i);
    int32_t s = 0;
    for (int r = 0; r < nranks; r++) s += small(seed, r, i);
    exp[i] = s;
  }
  memset(out, RECV_BYTE, cnt * 4);
  call_ok(tutti_barrier(comm), "barrier before the polling test");
  if (rank == 1) sleep_s(0.3);
  tutti_request_t req = NULL;
  if (call_ok(tutti_iallreduce(in, out, cnt, TUTTI_INT32, TUTTI_SUM, comm, &req),
              "iallreduce for polling")) {
    int done = 0;
    long polls = 0;
    tutti_result_t rc = TUTTI_SUCCESS;
    double t0 = now_s();
    while (!done) {
      rc = tutti_test(req, &done);
      polls++;
      if (!done && rc != TUTTI_SUCCESS) break;
      if (!done) sleep_s(0.0002);
    }
    double took = now_s() - t0;
    if (rc != TUTTI_SUCCESS)
      fail("tutti_test polling returned %s (done=%d): %s", tutti_result_string(rc), done,
           last_error());
    else
      check_i32("iallreduce completed by tutti_test polling", out, exp, cnt);
    /* With a peer 300 ms late the first test cannot have seen it done. */
    if (nranks >= 2 && rank != 1) {
      if (polls < 2 || took < 0.1)
        fail("tutti_test reported done after %ld polls, %.3f s, though rank 1 joined 0.3 s late",
             polls, took);
      else
        pass();
    }
    tutti_request_free(req);
  }
  free(in);
  free(out);
  free(exp);
}

/* ---- order: chains through one buffer ---------------------------------------------------- */

static void section_order(void) {
  const size_t cnt = (size_t)1 << 20; /* 4 MiB: still running when the next call comes */
  int32_t *a = xmalloc(cnt * 4), *b = xmalloc(cnt * 4), *c = xmalloc(cnt * 4);
  int32_t *exp = xmalloc(cnt * 4);
  uint64_t seed = ref_hash(0x0D0Eull, 1, 0);
  int n = nranks;
  /* Sums: a -> b = S (every rank); b -> c = n*S. */
  for (size_t i = 0; i < cnt; i++) {
    a[i] = small(seed, rank, i);
    int32_t s = 0;
    for (int r = 0; r < n; r++) s += small(seed, r, i);
    exp[i] = s * n;
  }
  memset(b, RECV_BYTE, cnt * 4);
  memset(c, RECV_BYTE, cnt * 4);
  tutti_request_t req = NULL;
  if (call_ok(tutti_iallreduce(a, b, cnt, TUTTI_INT32, TUTTI_SUM, comm, &req), "iallreduce a->b")) {
    int ok = call_ok(tutti_allreduce(b, c, cnt, TUTTI_INT32, TUTTI_SUM, comm),
                     "blocking allreduce b->c issued before waiting a->b");
    int ok2 = call_ok(tutti_wait(req), "tutti_wait on iallreduce a->b");
    if (ok && ok2) check_i32("iallreduce a->b then blocking allreduce b->c", c, exp, cnt);
    tutti_request_free(req);
  }

  /* In place, three non-blocking in a row, then a broadcast of the result from the last rank
   * with its own contribution added first: x -> S -> n*S -> n*n*S; every rank then
   * ibroadcasts x from root n-1 (same values); all waited at the end, in reverse. */
  for (size_t i = 0; i < cnt; i++) a[i] = small(seed, rank, i) % 10;
  for (size_t i = 0; i < cnt; i++) {
    int32_t s = 0;
    for (int r = 0; r < n; r++) s += small(seed, r, i) % 10;
    exp[i] = s * n * n;
  }
  tutti_request_t reqs[4] = {NULL, NULL, NULL, NULL};
  int issued = 0;
  for (int k = 0; k < 3; k++)
    issued += call_ok(tutti_iallreduce(a, a, cnt, TUTTI_INT32, TUTTI_SUM, comm, &reqs[k]),
                      "in-place iallreduce in a chain of 3");
  memset(b, RECV_BYTE, cnt * 4);
  issued += call_ok(tutti_ibroadcast(a, b, cnt, TUTTI_INT32, n - 1, comm, &reqs[3]),
                    "ibroadcast of the chain's output");
  int all = issued == 4;
  for (int k = 3; k >= 0; k--)
    if (reqs[k]) {
      all &= call_ok(tutti_wait(reqs[k]), "tutti_wait on the chain");
      tutti_request_free(reqs[k]);
    }
  if (all) {
    check_i32("chain of 3 in-place iallreduces", a, exp, cnt);
    check_i32("ibroadcast of the chain's output", b, exp, cnt);
  }

  /* Blocking first, then non-blocking reading its output, then blocking reading that. */
  for (size_t i = 0; i < cnt; i++) a[i] = small(seed, rank, i) % 5;
  for (size_t i = 0; i < cnt; i++) {
    int32_t s = 0;
    for (int r = 0; r < n; r++) s += small(seed, r, i) % 5;
    exp[i] = s * n * n;
  }
  req = NULL;
  if (call_ok(tutti_allreduce(a, b, cnt, TUTTI_INT32, TUTTI_SUM, comm), "blocking allreduce a->b") &&
      call_ok(tutti_iallreduce(b, c, cnt, TUTTI_INT32, TUTTI_SUM, comm, &req), "iallreduce b->c")) {
    int ok = call_ok(tutti_allreduce(c, a, cnt, TUTTI_INT32, TUTTI_SUM, comm),
                     "blocking allreduce c->a before waiting b->c");
    ok &= call_ok(tutti_wait(req), "tutti_wait on b->c");
    if (ok) check_i32("allreduce, iallreduce, allreduce chain", a, exp, cnt);
    tutti_request_free(req);
  }
  free(a);
  free(b);
  free(c);
  free(exp);
}

/* ---- p2p: isend then irecv --------------------------------------------------------------- */

#define BIG_P2P ((size_t)1 << 20) /* int32 elements: 4 MiB */

static void section_p2p(void) {
  if (nranks < 2) return;
  int32_t *send = xmalloc(BIG_P2P * 4), *exp = xmalloc(BIG_P2P * 4);
  int32_t *recv[MAX_RANKS];
  uint64_t seed = ref_hash(0x9292ull, 0, 0);
  char w[160];
  for (int p = 0; p < nranks; p++) recv[p] = NULL;
  /* Rank r sends the same data to everyone: raw(seed + r). */
  raw_fill(seed, rank, 0, BIG_P2P, send);

  /* Pair by pair in one global order (lexicographic), isend first then irecv on both sides. */
  recv[0] = xmalloc(BIG_P2P * 4);
  for (int i = 0; i < nranks; i++)
    for (int j = i + 1; j < nranks; j++) {
      if (rank != i && rank != j) continue;
      int peer = rank == i ? j : i;
      memset(recv[0], RECV_BYTE, BIG_P2P * 4);
      tutti_request_t sr = NULL, rr = NULL;
      snprintf(w, sizeof w, "4 MiB isend then irecv with rank %d", peer);
      int ok = call_ok(tutti_isend(send, BIG_P2P, TUTTI_INT32, peer, comm, &sr), w);
      ok &= call_ok(tutti_irecv(recv[0], BIG_P2P, TUTTI_INT32, peer, comm, &rr), w);
      if (sr) ok &= call_ok(tutti_wait(sr), "tutti_wait on the 4 MiB isend");
      if (rr) ok &= call_ok(tutti_wait(rr), "tutti_wait on the 4 MiB irecv");
      if (ok) {
        raw_fill(seed, peer, 0, BIG_P2P, exp);
        check_i32(w, recv[0], exp, BIG_P2P);
      }
      if (sr) tutti_request_free(sr);
      if (rr) tutti_request_free(rr);
    }
  free(recv[0]);
  recv[0] = NULL;
  call_ok(tutti_barrier(comm), "barrier between the p2p phases");

  /* All at once: isend 4 MiB to every peer, then irecv from every peer, then wait all. */
  tutti_request_t sreq[MAX_RANKS], rreq[MAX_RANKS];
  int ok = 1;
  for (int p = 0; p < nranks; p++) {
    sreq[p] = rreq[p] = NULL;
    if (p == rank) continue;
    snprintf(w, sizeof w, "4 MiB isend to rank %d (all peers at once)", p);
    ok &= call_ok(tutti_isend(send, BIG_P2P, TUTTI_INT32, p, comm, &sreq[p]), w);
  }
  for (int p = 0; p < nranks; p++) {
    if (p == rank) continue;
    recv[p] = xmalloc(BIG_P2P * 4);
    memset(recv[p], RECV_BYTE, BIG_P2P * 4);
    snprintf(w, sizeof w, "4 MiB irecv from rank %d (all peers at once)", p);
    ok &= call_ok(tutti_irecv(recv[p], BIG_P2P, TUTTI_INT32, p, comm, &rreq[p]), w);
  }
  for (int p = 0; p < nranks; p++) {
    if (sreq[p]) ok &= call_ok(tutti_wait(sreq[p]), "tutti_wait on an isend to all peers");
    if (rreq[p]) ok &= call_ok(tutti_wait(rreq[p]), "tutti_wait on an irecv from all peers");
  }
  for (int p = 0; p < nranks; p++) {
    if (p == rank) continue;
    if (ok) {
      raw_fill(seed, p, 0, BIG_P2P, exp);
      snprintf(w, sizeof w, "4 MiB from rank %d, all peers at once", p);
      check_i32(w, recv[p], exp, BIG_P2P);
    }
    if (sreq[p]) tutti_request_free(sreq[p]);
    if (rreq[p]) tutti_request_free(rreq[p]);
    free(recv[p]);
  }
  free(send);
  free(exp);
}

/* ---- cpu: tutti_wait must not burn a core ------------------------------------------------ */

static void section_cpu(void) {
  if (nranks < 2) return;
  const size_t cnt = 4096;
  int32_t *in = xmalloc(cnt * 4), *out = xmalloc(cnt * 4), *exp = xmalloc(cnt * 4);
  for (size_t i = 0; i < cnt; i++) {
    in[i] = rank + (int32_t)i;
    exp[i] = nranks * (nranks - 1) / 2 + nranks * (int32_t)i;
  }
  call_ok(tutti_barrier(comm), "barrier before the CPU test");
  tutti_request_t req = NULL;
  if (rank == 1) {
    sleep_s(2.0);
    if (call_ok(tutti_iallreduce(in, out, cnt, TUTTI_INT32, TUTTI_SUM, comm, &req),
                "iallreduce (late rank)")) {
      if (call_ok(tutti_wait(req), "tutti_wait (late rank)"))
        check_i32("iallreduce joined late", out, exp, cnt);
      tutti_request_free(req);
    }
  } else {
    double c0 = cpu_s(), t0 = now_s();
    int ok = call_ok(tutti_iallreduce(in, out, cnt, TUTTI_INT32, TUTTI_SUM, comm, &req),
                     "iallreduce (waiting for a late rank)");
    if (ok) ok = call_ok(tutti_wait(req), "tutti_wait (waiting for a late rank)");
    double cpu = cpu_s() - c0, wall = now_s() - t0;
    if (ok) {
      check_i32("iallreduce waiting for a late rank", out, exp, cnt);
      if (wall < 1.5)
        fail("tutti_wait returned after %.3f s though rank 1 joined 2 s late", wall);
      else
        pass();
      if (cpu >= 0.2)
        fail("tutti_wait burned %.3f s of process CPU over %.3f s waiting for a late peer "
             "(limit 0.2 s)", cpu, wall);
      else
        pass();
      if (rank == 0)
        printf("nb_check: cpu: %.3f s of process CPU over %.3f s of tutti_wait (rank 0)\n", cpu,
               wall);
    }
    if (req) tutti_request_free(req);
  }
  free(in);
  free(out);
  free(exp);
}

/* ---- group ------------------------------------------------------------------------------- */

#define NUM_FUSED 50

static void section_group(void) {
  char w[160];
  int n = nranks;
  /* 50 small all-reduces in one group; every fifth in place. */
  float in[NUM_FUSED][3], out[NUM_FUSED][3], exp[NUM_FUSED][3];
  for (int k = 0; k < NUM_FUSED; k++)
    for (int i = 0; i < 3; i++) {
      in[k][i] = (float)((rank + 1) * (k + 1) + i);
      out[k][i] = k % 5 == 0 ? in[k][i] : -1.0f;
      exp[k][i] = (float)((k + 1) * n * (n + 1) / 2 + n * i);
    }
  int ok = call_ok(tutti_group_start(), "tutti_group_start (50 all-reduces)");
  for (int k = 0; k < NUM_FUSED; k++) {
    tutti_result_t rc = k % 5 == 0
                            ? tutti_allreduce(out[k], out[k], 3, TUTTI_FLOAT32, TUTTI_SUM, comm)
                            : tutti_allreduce(in[k], out[k], 3, TUTTI_FLOAT32, TUTTI_SUM, comm);
    snprintf(w, sizeof w, "all-reduce %d of %d inside a group", k, NUM_FUSED);
    ok &= call_ok(rc, w);
  }
  ok &= call_ok(tutti_group_end(), "tutti_group_end (50 all-reduces)");
  if (ok)
    for (int k = 0; k < NUM_FUSED; k++) {
      snprintf(w, sizeof w, "grouped all-reduce %d of %d%s", k, NUM_FUSED,
               k % 5 == 0 ? " (in place)" : "");
      check_f32(w, out[k], exp[k], 3);
    }

  /* Fusion boundaries: dtype and op change inside one group. */
  {
    float f1[4], f1o[4], f2[4], f1x[4], f2x[4];
    int32_t i1[4], i1o[4], i1x[4];
    double d1[4], d1o[4], d1x[4];
    for (int i = 0; i < 4; i++) {
      f1[i] = (float)(rank * 4 + i);
      f2[i] = (float)(rank - i);
      i1[i] = (int32_t)((rank * 7 + i * 3) % 11);
      d1[i] = (double)(rank * rank - i);
      float s1 = 0, s2 = 0;
      int32_t mx = INT32_MIN;
      double mn = 1e300;
      for (int r = 0; r < n; r++) {
        s1 += (float)(r * 4 + i);
        s2 += (float)(r - i);
        int32_t v = (int32_t)((r * 7 + i * 3) % 11);
        mx = v > mx ? v : mx;
        double dv = (double)(r * r - i);
        mn = dv < mn ? dv : mn;
      }
      f1x[i] = s1;
      f2x[i] = s2;
      i1x[i] = mx;
      d1x[i] = mn;
    }
    ok = call_ok(tutti_group_start(), "tutti_group_start (mixed)");
    ok &= call_ok(tutti_allreduce(f1, f1o, 4, TUTTI_FLOAT32, TUTTI_SUM, comm), "mixed group f32 SUM");
    ok &= call_ok(tutti_allreduce(i1, i1o, 4, TUTTI_INT32, TUTTI_MAX, comm), "mixed group i32 MAX");
    ok &= call_ok(tutti_allreduce(f2, f2, 4, TUTTI_FLOAT32, TUTTI_SUM, comm), "mixed group f32 SUM in place");
    ok &= call_ok(tutti_allreduce(d1, d1o, 4, TUTTI_FLOAT64, TUTTI_MIN, comm), "mixed group f64 MIN");
    ok &= call_ok(tutti_group_end(), "tutti_group_end (mixed)");
    if (ok) {
      check_f32("mixed group: f32 SUM", f1o, f1x, 4);
      check_i32("mixed group: i32 MAX", i1o, i1x, 4);
      check_f32("mixed group: f32 SUM in place", f2, f2x, 4);
      if (memcmp(d1o, d1x, sizeof d1x) == 0)
        pass();
      else
        fail("mixed group: f64 MIN: element 0 is %g, expected %g", d1o[0], d1x[0]);
    }
  }

  /* A broadcast with sends and receives in one group (receive posted before send). */
  {
    const size_t bc = 10000, pc = 1000;
    int32_t *bin = xmalloc(bc * 4), *bout = xmalloc(bc * 4), *bexp = xmalloc(bc * 4);
    int32_t *ps = xmalloc(pc * 4), *pr = xmalloc(pc * 4), *pexp = xmalloc(pc * 4);
    uint64_t seed = ref_hash(0x6B6Bull, 0, 0);
    int root = n - 1, right = (rank + 1) % n, left = (rank + n - 1) % n;
    raw_fill(seed, rank, 0, bc, bin);
    raw_fill(seed, root, 0, bc, bexp);
    raw_fill(seed + 1, rank, 0, pc, ps);
    raw_fill(seed + 1, left, 0, pc, pexp);
    memset(bout, RECV_BYTE, bc * 4);
    memset(pr, RECV_BYTE, pc * 4);
    ok = call_ok(tutti_group_start(), "tutti_group_start (broadcast + p2p)");
    if (n >= 2) ok &= call_ok(tutti_recv(pr, pc, TUTTI_INT32, left, comm), "grouped recv");
    ok &= call_ok(tutti_broadcast(bin, bout, bc, TUTTI_INT32, root, comm), "grouped broadcast");
    if (n >= 2) ok &= call_ok(tutti_send(ps, pc, TUTTI_INT32, right, comm), "grouped send");
    ok &= call_ok(tutti_group_end(), "tutti_group_end (broadcast + p2p)");
    if (ok) {
      check_i32("broadcast in a group with p2p", bout, bexp, bc);
      if (n >= 2) check_i32("recv in a group with a broadcast", pr, pexp, pc);
    }
    free(bin), free(bout), free(bexp), free(ps), free(pr), free(pexp);
  }

  /* Nested groups: everything completes at the outermost end. */
  {
    int32_t a[2] = {rank, 1}, b[2] = {2 * rank, 2}, c[2] = {3 * rank, 3};
    int32_t ao[2], bo[2], co[2];
    int32_t sr = n * (n - 1) / 2;
    int32_t ax[2] = {sr, n}, bx[2] = {2 * sr, 2 * n}, cx[2] = {3 * sr, 3 * n};
    ok = call_ok(tutti_group_start(), "outer tutti_group_start");
    ok &= call_ok(tutti_allreduce(a, ao, 2, TUTTI_INT32, TUTTI_SUM, comm), "nested: first");
    ok &= call_ok(tutti_group_start(), "inner tutti_group_start");
    ok &= call_ok(tutti_allreduce(b, bo, 2, TUTTI_INT32, TUTTI_SUM, comm), "nested: inner");
    ok &= call_ok(tutti_group_end(), "inner tutti_group_end");
    ok &= call_ok(tutti_allreduce(c, co, 2, TUTTI_INT32, TUTTI_SUM, comm), "nested: last");
    ok &= call_ok(tutti_group_end(), "outer tutti_group_end");
    if (ok) {
      check_i32("nested groups: first", ao, ax, 2);
      check_i32("nested groups: inner", bo, bx, 2);
      check_i32("nested groups: last", co, cx, 2);
    }
  }

  /* A non-blocking call inside a group: its request completes after the group ends. */
  {
    int32_t a[3] = {rank, rank + 1, 7}, ao[3] = {0, 0, 0};
    int32_t ax[3] = {n * (n - 1) / 2, n * (n + 1) / 2, 7 * n};
    tutti_request_t req = NULL;
    ok = call_ok(tutti_group_start(), "tutti_group_start (iallreduce)");
    ok &= call_ok(tutti_iallreduce(a, ao, 3, TUTTI_INT32, TUTTI_SUM, comm, &req),
                  "iallreduce inside a group");
    ok &= call_ok(tutti_group_end(), "tutti_group_end (iallreduce)");
    if (req) ok &= call_ok(tutti_wait(req), "tutti_wait on an iallreduce from a group");
    if (ok) check_i32("iallreduce inside a group", ao, ax, 3);
    if (req) tutti_request_free(req);
  }

  /* An empty group. */
  ok = call_ok(tutti_group_start(), "tutti_group_start (empty)");
  if (ok && call_ok(tutti_group_end(), "tutti_group_end of an empty group")) pass();

  /* group_end without start. */
  tutti_result_t rc = tutti_group_end();
  if (rc == TUTTI_SUCCESS)
    fail("tutti_group_end without tutti_group_start returned TUTTI_SUCCESS");
  else
    pass();
  still_works("tutti_group_end without start");
}

/* ---- free: request_free, NULL requests, invalid i-form arguments ------------------------- */

static void section_free(void) {
  int n = nranks;
  const size_t cnt = 200000;
  int32_t *a = xmalloc(cnt * 4), *b = xmalloc(cnt * 4), *exp = xmalloc(cnt * 4);
  for (size_t i = 0; i < cnt; i++) {
    a[i] = rank * 3 + (int32_t)(i % 1000);
    exp[i] = 3 * n * (n - 1) / 2 + n * (int32_t)(i % 1000);
  }
  memset(b, RECV_BYTE, cnt * 4);
  call_ok(tutti_barrier(comm), "barrier before the request_free test");
  if (rank == 1) sleep_s(0.3); /* the others free their request while it cannot be done */
  tutti_request_t req = NULL;
  if (call_ok(tutti_iallreduce(a, b, cnt, TUTTI_INT32, TUTTI_SUM, comm, &req),
              "iallreduce to be freed unfinished")) {
    int done = -1;
    tutti_result_t rc = tutti_test(req, &done);
    if (rank != 1 && n >= 2 && (rc != TUTTI_SUCCESS || done != 0))
      fail("tutti_test on an iallreduce missing rank 1 returned %s, done=%d (expected not done)",
           tutti_result_string(rc), done);
    else
      pass();
    if (call_ok(tutti_request_free(req), "tutti_request_free on an unfinished request")) pass();
  }
  /* Later operations work, and (issue order) the freed one has completed by then. */
  still_works("tutti_request_free of an unfinished request");
  check_i32("the freed iallreduce's output after a later blocking all-reduce", b, exp, cnt);
  /* Another non-blocking op after the free. */
  memset(b, RECV_BYTE, cnt * 4);
  req = NULL;
  if (call_ok(tutti_iallreduce(a, b, cnt, TUTTI_INT32, TUTTI_SUM, comm, &req),
              "iallreduce after a freed request")) {
    if (call_ok(tutti_wait(req), "tutti_wait after a freed request"))
      check_i32("iallreduce after a freed request", b, exp, cnt);
    tutti_request_free(req);
  }
  free(a);
  free(b);
  free(exp);

  /* NULL requests. */
  int done = 7;
  tutti_result_t rc = tutti_wait(NULL);
  if (rc != TUTTI_ERR_INVALID_ARGUMENT)
    fail("tutti_wait(NULL) returned %s", tutti_result_string(rc));
  else
    pass();
  rc = tutti_test(NULL, &done);
  if (rc != TUTTI_ERR_INVALID_ARGUMENT)
    fail("tutti_test(NULL, &done) returned %s", tutti_result_string(rc));
  else
    pass();
  {
    int32_t x = rank, y = 0;
    tutti_request_t r2 = NULL;
    if (call_ok(tutti_iallreduce(&x, &y, 1, TUTTI_INT32, TUTTI_SUM, comm, &r2), "iallreduce")) {
      rc = tutti_test(r2, NULL);
      if (rc != TUTTI_ERR_INVALID_ARGUMENT)
        fail("tutti_test(req, NULL) returned %s", tutti_result_string(rc));
      else
        pass();
      if (call_ok(tutti_wait(r2), "tutti_wait") && y != n * (n - 1) / 2)
        fail("1-element iallreduce gave %d, expected %d", y, n * (n - 1) / 2);
      tutti_request_free(r2);
    }
  }

  /* Invalid arguments of the i-forms: refused at once, no request, buffers untouched. */
  static unsigned char sb[64 * MAX_RANKS], rbuf[64 * MAX_RANKS];
  memset(sb, 0x3C, sizeof sb);
  memset(rbuf, 0x3C, sizeof rbuf);
  size_t cn[MAX_RANKS], ds[MAX_RANKS];
  for (int i = 0; i < n; i++) {
    cn[i] = 2;
    ds[i] = (size_t)i * 2;
  }
  tutti_request_t sentinel = (tutti_request_t)(uintptr_t)0x1;
  struct {
    const char *what;
    tutti_result_t rc;
    tutti_request_t req;
  } cases[32];
  int nc = 0;
#define NB_INVALID(call_with_req)                                                            \
  do {                                                                                       \
    tutti_request_t req = sentinel;                                                          \
    cases[nc].rc = (call_with_req);                                                          \
    cases[nc].req = req;                                                                     \
    cases[nc].what = #call_with_req;                                                         \
    nc++;                                                                                    \
  } while (0)
  NB_INVALID(tutti_iallreduce(sb, rbuf, 4, TUTTI_INT32, TUTTI_SUM, comm, NULL));
  NB_INVALID(tutti_iallreduce(NULL, rbuf, 4, TUTTI_INT32, TUTTI_SUM, comm, &req));
  NB_INVALID(tutti_iallreduce(sb, rbuf, 4, TUTTI_FLOAT32, TUTTI_BXOR, comm, &req));
  NB_INVALID(tutti_iallreduce(sb, rbuf, 4, (tutti_dtype_t)99, TUTTI_SUM, comm, &req));
  NB_INVALID(tutti_iallreduce(sb, rbuf, 4, TUTTI_INT32, TUTTI_SUM, NULL, &req));
  NB_INVALID(tutti_ibroadcast(sb, rbuf, 4, TUTTI_INT32, n, comm, &req));
  NB_INVALID(tutti_ireduce(sb, rbuf, 4, TUTTI_INT32, TUTTI_SUM, -1, comm, &req));
  NB_INVALID(tutti_ibarrier(comm, NULL));
  NB_INVALID(tutti_ibarrier(NULL, &req));
  NB_INVALID(tutti_iallgather(sb, NULL, 4, TUTTI_INT32, comm, &req));
  NB_INVALID(tutti_ireduce_scatter(sb, rbuf, 2, TUTTI_FLOAT64, TUTTI_BAND, comm, &req));
  NB_INVALID(tutti_ialltoall(sb, rbuf, 2, TUTTI_INT32, comm, NULL));
  NB_INVALID(tutti_iallgatherv(sb, 3, rbuf, cn, ds, TUTTI_INT32, comm, &req));
  NB_INVALID(tutti_ireduce_scatterv(sb, rbuf, NULL, TUTTI_INT32, TUTTI_SUM, comm, &req));
  NB_INVALID(tutti_igatherv(sb, 2, rbuf, cn, ds, TUTTI_INT32, n, comm, &req));
  NB_INVALID(tutti_iscatterv(sb, cn, ds, rbuf, 2, TUTTI_INT32, -1, comm, &req));
  NB_INVALID(tutti_ialltoallv(sb, cn, NULL, rbuf, cn, ds, TUTTI_INT32, comm, &req));
  NB_INVALID(tutti_igather(sb, rbuf, 2, TUTTI_INT32, n, comm, &req));
  NB_INVALID(tutti_iscatter(sb, rbuf, 2, TUTTI_INT32, -1, comm, &req));
  NB_INVALID(tutti_isend(sb, 2, TUTTI_INT32, rank, comm, &req));
  NB_INVALID(tutti_irecv(rbuf, 2, TUTTI_INT32, n, comm, &req));
  NB_INVALID(tutti_isend(sb, 2, TUTTI_INT32, -1, comm, &req));
#undef NB_INVALID
  for (int k = 0; k < nc; k++) {
    if (cases[k].rc != TUTTI_ERR_INVALID_ARGUMENT)
      fail("%s returned %s, expected TUTTI_ERR_INVALID_ARGUMENT", cases[k].what,
           tutti_result_string(cases[k].rc));
    else if (cases[k].req != sentinel && cases[k].req != NULL)
      fail("%s was refused but set a request", cases[k].what);
    else
      pass();
  }
  int intact = 1;
  for (size_t i = 0; i < sizeof sb; i++)
    if (sb[i] != 0x3C || rbuf[i] != 0x3C) intact = 0;
  if (!intact)
    fail("a refused non-blocking call wrote a buffer");
  else
    pass();
  still_works("invalid non-blocking calls");
}

/* ---- nbv: the other non-blocking forms --------------------------------------------------- */

static size_t vcount(int i) { return i % 3 == 1 ? 0 : (size_t)(i % 4) * 5 + 3; }

/* Reversed rank order with a gap of 2 before every fragment; returns the extent. */
static size_t vplace(const size_t *counts, size_t *displs) {
  size_t cur = 0;
  for (int k = nranks - 1; k >= 0; k--) {
    cur += 2;
    displs[k] = cur;
    cur += counts[k];
  }
  return cur + 2;
}

static void check_gaps32(const char *what, const int32_t *buf, size_t extent,
                         const size_t *counts, const size_t *displs) {
  for (size_t p = 0; p < extent; p++) {
    int covered = 0;
    for (int i = 0; i < nranks; i++)
      if (p >= displs[i] && p < displs[i] + counts[i]) covered = 1;
    const unsigned char *b = (const unsigned char *)&buf[p];
    if (!covered && (b[0] != RECV_BYTE || b[1] != RECV_BYTE || b[2] != RECV_BYTE ||
                     b[3] != RECV_BYTE)) {
      fail("%s: gap element %zu was written", what, p);
      return;
    }
  }
  pass();
}

static void section_nbv(void) {
  int n = nranks;
  size_t cn[MAX_RANKS], ds[MAX_RANKS];
  for (int i = 0; i < n; i++) cn[i] = vcount(i);
  size_t ext = vplace(cn, ds), tot = 0;
  for (int i = 0; i < n; i++) tot += cn[i];
  size_t big = ext > tot ? ext : tot;
  big = big > (size_t)n * 8 ? big : (size_t)n * 8;
  uint64_t seed = ref_hash(0x5656ull, 0, 0);
  int32_t *in = xmalloc(big * 4), *out = xmalloc(big * 4), *exp = xmalloc(big * 4);
  tutti_request_t req;
  char w[160];
  int root = n / 2;

  /* iallgatherv */
  raw_fill(seed, rank, 0, cn[rank], in);
  memset(out, RECV_BYTE, ext * 4);
  req = NULL;
  if (call_ok(tutti_iallgatherv(in, cn[rank], out, cn, ds, TUTTI_INT32, comm, &req), "tutti_iallgatherv") &&
      call_ok(tutti_wait(req), "tutti_wait(iallgatherv)")) {
    for (int i = 0; i < n; i++) {
      raw_fill(seed, i, 0, cn[i], exp);
      snprintf(w, sizeof w, "iallgatherv: fragment of rank %d", i);
      check_i32(w, out + ds[i], exp, cn[i]);
    }
    check_gaps32("iallgatherv", out, ext, cn, ds);
  }
  if (req) tutti_request_free(req);

  /* ireduce_scatterv (SUM of small values) */
  for (size_t i = 0; i < tot; i++) in[i] = small(seed + 1, rank, i);
  size_t off = 0;
  for (int i = 0; i < rank; i++) off += cn[i];
  for (size_t i = 0; i < cn[rank]; i++) {
    int32_t s = 0;
    for (int r = 0; r < n; r++) s += small(seed + 1, r, off + i);
    exp[i] = s;
  }
  memset(out, RECV_BYTE, big * 4);
  req = NULL;
  if (call_ok(tutti_ireduce_scatterv(in, out, cn, TUTTI_INT32, TUTTI_SUM, comm, &req), "tutti_ireduce_scatterv") &&
      call_ok(tutti_wait(req), "tutti_wait(ireduce_scatterv)"))
    check_i32("ireduce_scatterv", out, exp, cn[rank]);
  if (req) tutti_request_free(req);

  /* igatherv to root */
  raw_fill(seed + 2, rank, 0, cn[rank], in);
  memset(out, RECV_BYTE, ext * 4);
  req = NULL;
  if (call_ok(tutti_igatherv(in, cn[rank], out, cn, ds, TUTTI_INT32, root, comm, &req), "tutti_igatherv") &&
      call_ok(tutti_wait(req), "tutti_wait(igatherv)") && rank == root) {
    for (int i = 0; i < n; i++) {
      raw_fill(seed + 2, i, 0, cn[i], exp);
      snprintf(w, sizeof w, "igatherv: fragment of rank %d", i);
      check_i32(w, out + ds[i], exp, cn[i]);
    }
    check_gaps32("igatherv", out, ext, cn, ds);
  }
  if (req) tutti_request_free(req);

  /* iscatterv from root: root's element p is raw(seed+3, root, p) */
  if (rank == root) raw_fill(seed + 3, root, 0, ext, in);
  memset(out, RECV_BYTE, big * 4);
  req = NULL;
  if (call_ok(tutti_iscatterv(in, cn, ds, out, cn[rank], TUTTI_INT32, root, comm, &req), "tutti_iscatterv") &&
      call_ok(tutti_wait(req), "tutti_wait(iscatterv)")) {
    raw_fill(seed + 3, root, ds[rank], cn[rank], exp);
    check_i32("iscatterv", out, exp, cn[rank]);
  }
  if (req) tutti_request_free(req);

  /* ialltoallv: rank s sends (s + d) % 3 elements to d, contiguous in destination order; the
   * receiver places them reversed with gaps. */
  {
    size_t sc[MAX_RANKS], sd[MAX_RANKS], rc[MAX_RANKS], rd[MAX_RANKS], sp = 0;
    for (int d = 0; d < n; d++) {
      sc[d] = (size_t)((rank + d) % 3);
      sd[d] = sp;
      sp += sc[d];
      rc[d] = (size_t)((d + rank) % 3);
    }
    size_t rext = vplace(rc, rd);
    int32_t *s2 = xmalloc(sp * 4 + 4), *r2 = xmalloc(rext * 4), *e2 = xmalloc(rext * 4 + 4);
    raw_fill(seed + 4, rank, 0, sp, s2);
    memset(r2, RECV_BYTE, rext * 4);
    req = NULL;
    if (call_ok(tutti_ialltoallv(s2, sc, sd, r2, rc, rd, TUTTI_INT32, comm, &req), "tutti_ialltoallv") &&
        call_ok(tutti_wait(req), "tutti_wait(ialltoallv)")) {
      for (int s = 0; s < n; s++) {
        size_t soff = 0; /* where sender s's block for this rank starts */
        for (int d = 0; d < rank; d++) soff += (size_t)((s + d) % 3);
        raw_fill(seed + 4, s, soff, rc[s], e2);
        snprintf(w, sizeof w, "ialltoallv: fragment from rank %d", s);
        check_i32(w, r2 + rd[s], e2, rc[s]);
      }
      check_gaps32("ialltoallv", r2, rext, rc, rd);
    }
    if (req) tutti_request_free(req);
    free(s2), free(r2), free(e2);
  }

  /* igather, iscatter, ireduce (equal-count) */
  const size_t c = 8;
  raw_fill(seed + 5, rank, 0, c, in);
  memset(out, RECV_BYTE, (size_t)n * c * 4);
  req = NULL;
  if (call_ok(tutti_igather(in, out, c, TUTTI_INT32, root, comm, &req), "tutti_igather") &&
      call_ok(tutti_wait(req), "tutti_wait(igather)") && rank == root) {
    for (int i = 0; i < n; i++) raw_fill(seed + 5, i, 0, c, exp + (size_t)i * c);
    check_i32("igather", out, exp, (size_t)n * c);
  }
  if (req) tutti_request_free(req);

  if (rank == root) raw_fill(seed + 6, root, 0, (size_t)n * c, in);
  memset(out, RECV_BYTE, c * 4);
  req = NULL;
  if (call_ok(tutti_iscatter(in, out, c, TUTTI_INT32, root, comm, &req), "tutti_iscatter") &&
      call_ok(tutti_wait(req), "tutti_wait(iscatter)")) {
    raw_fill(seed + 6, root, (size_t)rank * c, c, exp);
    check_i32("iscatter", out, exp, c);
  }
  if (req) tutti_request_free(req);

  for (size_t i = 0; i < c; i++) in[i] = small(seed + 7, rank, i);
  for (size_t i = 0; i < c; i++) {
    int32_t s = 0;
    for (int r = 0; r < n; r++) s += small(seed + 7, r, i);
    exp[i] = s;
  }
  memset(out, RECV_BYTE, c * 4);
  req = NULL;
  if (call_ok(tutti_ireduce(in, out, c, TUTTI_INT32, TUTTI_SUM, root, comm, &req), "tutti_ireduce") &&
      call_ok(tutti_wait(req), "tutti_wait(ireduce)")) {
    if (rank == root) {
      check_i32("ireduce at the root", out, exp, c);
    } else {
      memset(exp, RECV_BYTE, c * 4);
      check_i32("ireduce: non-root recvbuf untouched", out, exp, c);
    }
  }
  if (req) tutti_request_free(req);
  free(in);
  free(out);
  free(exp);
}

/* ---- Main -------------------------------------------------------------------------------- */

typedef struct {
  const char *name;
  void (*fn)(void);
} section_t;

static const section_t sections[] = {{"many", section_many},   {"order", section_order},
                                     {"p2p", section_p2p},     {"cpu", section_cpu},
                                     {"group", section_group}, {"free", section_free},
                                     {"nbv", section_nbv}};
#define NUM_SECTIONS (sizeof sections / sizeof sections[0])

int main(int argc, char **argv) {
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--only section,...]\n", argv[0]);
      return 2;
    }
  }
  check_init("nb_check", 6, 4);
  const char *transport;
  int status = check_start(&comm, &rank, &nranks, MAX_RANKS, &transport);
  if (status) return status;

  for (size_t s = 0; s < NUM_SECTIONS; s++) {
    if (!want_section(only, sections[s].name)) continue;
    begin_section(sections[s].name);
    sections[s].fn();
    end_section();
  }

  return check_finish(transport, "");
}
