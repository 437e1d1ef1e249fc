/*
 * ops_check: the newer operations of tutti.h, one program run on every rank under tutti-run.
 *
 *   tutti-run -n 5 ops_check [--quick] [--only section,section,...]
 *
 * Sections (each re-arms a 120 s watchdog, so a hang is a failure that names the section):
 *   equal     alltoall, gather, scatter (every root, gather/scatter also in place)
 *   allgatherv, reduce_scatterv, gatherv, scatterv, alltoallv
 *             irregular counts with zero counts for some ranks, displacements in non-monotonic
 *             order with gaps between the fragments (the gaps and the guards around every buffer
 *             must stay untouched), every root, in place where tutti.h defines it;
 *             reduce_scatterv runs every dtype (FLOAT8 included) x SUM PROD MIN MAX AVG, and
 *             BAND BOR BXOR on the integer dtypes
 *   p2p       send/recv: a 4 MiB ring inside one group with the sends issued before the
 *             receives, a blocking pairwise 4 MiB exchange, and ordered matching of messages of
 *             different sizes (blocking, and all posted at once inside a group)
 *   fp8       FLOAT8 overflow: E4M3 saturates to 448, E5M2 overflows to infinity
 *   newtypes  FLOAT8 (5 ops) and BAND/BOR/BXOR on integers through all-reduce (also in place),
 *             reduce at every root and reduce-scatter; FLOAT8 broadcast and all-gather
 *   bitwise   BAND/BOR/BXOR on float dtypes: TUTTI_ERR_INVALID_ARGUMENT, buffers untouched
 *   premul    tutti_op_create_premul_sum with all-reduce, reduce-scatter, reduce and
 *             reduce-scatter-v; several live ops; premul ops and SUM mixed in one group;
 *             destroyed ops, ops of another dtype or communicator refused
 *   invalid   invalid arguments of the new calls: TUTTI_ERR_INVALID_ARGUMENT at once, buffers
 *             untouched, communicator usable afterwards
 *
 * Every expected result is computed here, from every rank's regenerated input, in integer or
 * double arithmetic (ref.c supplies the hash and the fp16/bf16 conversions; FLOAT8 is encoded
 * and decoded here); nothing is taken from the library. Inputs of reductions are small integers
 * (or raw bits for the bitwise and integer MIN/MAX cases) so that every combining order gives
 * the same exact bits.
 *
 * TUTTI_TEST_QUICK=1 in the environment is the same as --quick (no large counts).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_report.h"
#include "ref.h"
#include "tutti.h"

#define MAX_RANKS 64
#define GUARD 128        /* canary bytes before and after every buffer              */
#define GUARD_BYTE 0xA5  /* the guard canary                                        */
#define RECV_BYTE 0x5A   /* what a receive area (and every gap) holds before a call  */
#define PATTERN 0x3C     /* the buffers of the invalid-argument calls               */

static tutti_comm_t comm;
static int rank, nranks;
static int quick;

/* ---- Dtypes ------------------------------------------------------------------------------ */

#define NUM_DTYPES 12
static const struct {
  const char *name;
  size_t size;
  int is_float, is_signed;
} dts[NUM_DTYPES] = {
    {"int8", 1, 0, 1},     {"uint8", 1, 0, 0},    {"int32", 4, 0, 1},   {"uint32", 4, 0, 0},
    {"int64", 8, 0, 1},    {"uint64", 8, 0, 0},   {"float16", 2, 1, 1}, {"bfloat16", 2, 1, 1},
    {"float32", 4, 1, 1},  {"float64", 8, 1, 1},  {"fp8_e4m3", 1, 1, 1}, {"fp8_e5m2", 1, 1, 1}};
static const char *const op_names[] = {"SUM", "PROD", "MIN", "MAX", "AVG", "BAND", "BOR", "BXOR"};

static const char *op_name(tutti_op_t op) {
  return (unsigned)op < TUTTI_NUM_OPS ? op_names[op] : "premul";
}
static int is_fp8(tutti_dtype_t dt) { return dt == TUTTI_FLOAT8_E4M3 || dt == TUTTI_FLOAT8_E5M2; }

/* ---- FLOAT8, written from the OCP definition ------------------------------------------- */

static double pow2(int e) {
  double v = 1;
  for (; e > 0; e--) v *= 2;
  for (; e < 0; e++) v /= 2;
  return v;
}

/* E4M3: bias 7, 3 mantissa bits, no infinities, S.1111.111 is NaN, max 448.
 * E5M2: bias 15, 2 mantissa bits, IEEE-like (exponent 31: infinity or NaN), max 57344. */
static double fp8_decode(uint8_t b, int e5m2) {
  int mbits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7, emax = e5m2 ? 31 : 15;
  int e = (b >> mbits) & emax, m = b & ((1 << mbits) - 1);
  double v;
  if (e5m2 && e == 31)
    v = m ? NAN : INFINITY;
  else if (!e5m2 && e == 15 && m == 7)
    v = NAN;
  else if (e == 0)
    v = (double)m * pow2(1 - bias - mbits);
  else
    v = (double)((1 << mbits) + m) * pow2(e - bias - mbits);
  return (b & 0x80) ? -v : v;
}

/* Nearest finite code by exhaustive search, ties to the even code; E4M3 saturates to 448 past
 * its range, E5M2 goes to infinity from max + half an ulp (61440) up. */
static uint8_t fp8_encode(double x, int e5m2) {
  uint8_t sign = signbit(x) ? 0x80 : 0;
  double a = x < 0 ? -x : x;
  if (isnan(x)) return 0x7f; /* a NaN in both formats */
  if (e5m2 && a >= 61440.0) return sign | 0x7c;
  if (!e5m2 && a >= 448.0) return sign | 0x7e;
  static double table[2][0x80];
  static int built;
  if (!built) {
    for (int f = 0; f < 2; f++)
      for (int c = 0; c < 0x80; c++) table[f][c] = fp8_decode((uint8_t)c, f);
    built = 1;
  }
  int best = 0;
  double best_d = INFINITY;
  for (int c = 0; c < 0x80; c++) {
    double v = table[e5m2][c];
    if (isnan(v) || isinf(v)) continue;
    double d = v > a ? v - a : a - v;
    if (d < best_d || (d == best_d && (c & 1) == 0)) {
      best = c;
      best_d = d;
    }
  }
  return (uint8_t)(sign | best);
}

/* ---- Element storage --------------------------------------------------------------------- */

static void store_int(tutti_dtype_t dt, uint64_t v, void *out) {
  memcpy(out, &v, dts[dt].size); /* the low bytes: x86 and every supported host are LE */
}

static void store_double(tutti_dtype_t dt, double d, void *out) {
  switch (dt) {
  case TUTTI_FLOAT64: memcpy(out, &d, 8); break;
  case TUTTI_FLOAT32: { float f = (float)d; memcpy(out, &f, 4); break; }
  case TUTTI_FLOAT16: { uint16_t h = ref_f32_to_f16((float)d); memcpy(out, &h, 2); break; }
  case TUTTI_BFLOAT16: { uint16_t h = ref_f32_to_bf16((float)d); memcpy(out, &h, 2); break; }
  case TUTTI_FLOAT8_E4M3: *(uint8_t *)out = fp8_encode(d, 0); break;
  case TUTTI_FLOAT8_E5M2: *(uint8_t *)out = fp8_encode(d, 1); break;
  default: store_int(dt, (uint64_t)(int64_t)d, out); break;
  }
}

static double elem_double(tutti_dtype_t dt, const void *e) {
  if (dt == TUTTI_FLOAT8_E4M3) return fp8_decode(*(const uint8_t *)e, 0);
  if (dt == TUTTI_FLOAT8_E5M2) return fp8_decode(*(const uint8_t *)e, 1);
  return ref_to_double(dt, e);
}

static void fmt_elem(tutti_dtype_t dt, const void *e, char *out, size_t n) {
  uint64_t bits = 0;
  memcpy(&bits, e, dts[dt].size);
  snprintf(out, n, "0x%0*llx (%.9g)", (int)dts[dt].size * 2, (unsigned long long)bits,
           elem_double(dt, e));
}

/* Compares n elements bit for bit; one check. Reports the first mismatch and how many. */
static int check_elems(const char *what, tutti_dtype_t dt, const unsigned char *got,
                       const unsigned char *exp, size_t n) {
  size_t es = dts[dt].size;
  if (n == 0 || memcmp(got, exp, n * es) == 0) {
    pass();
    return 1;
  }
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (memcmp(got + i * es, exp + i * es, es) != 0 && bad++ == 0) first = i;
  char g[64], e[64];
  fmt_elem(dt, got + first * es, g, sizeof g);
  fmt_elem(dt, exp + first * es, e, sizeof e);
  fail("%s: element %zu is %s, expected %s (%zu of %zu elements differ)", what, first, g, e, bad,
       n);
  return 0;
}

/* ---- Guarded buffers --------------------------------------------------------------------- */

typedef struct {
  unsigned char *mem;
  size_t bytes;
} gbuf_t;

/* GUARD canaries, then bytes of RECV_BYTE, then GUARD canaries. */
static unsigned char *gbuf_new(gbuf_t *g, size_t bytes) {
  g->bytes = bytes;
  g->mem = xmalloc(bytes + 2 * GUARD);
  memset(g->mem, GUARD_BYTE, GUARD);
  memset(g->mem + GUARD, RECV_BYTE, bytes);
  memset(g->mem + GUARD + bytes, GUARD_BYTE, GUARD);
  return g->mem + GUARD;
}

static void gbuf_check(const gbuf_t *g, const char *what) {
  for (size_t i = 0; i < GUARD; i++) {
    if (g->mem[i] != GUARD_BYTE) {
      fail("%s: guard before the buffer overwritten (%zu bytes before it)", what, GUARD - i);
      return;
    }
    if (g->mem[GUARD + g->bytes + i] != GUARD_BYTE) {
      fail("%s: guard after the buffer overwritten (%zu bytes after its end)", what, i);
      return;
    }
  }
  pass();
}

static void gbuf_free(gbuf_t *g) {
  free(g->mem);
  g->mem = NULL;
}

/* The gaps: every element of buf (extent elements) outside the nseg fragments still holds
 * RECV_BYTE. One check. */
static void check_gaps(const char *what, const unsigned char *buf, size_t extent, size_t es,
                       const size_t *counts, const size_t *displs, int nseg) {
  unsigned char *covered = xmalloc(extent);
  memset(covered, 0, extent);
  for (int i = 0; i < nseg; i++)
    if (counts[i]) memset(covered + displs[i], 1, counts[i]);
  for (size_t p = 0; p < extent; p++) {
    if (covered[p]) continue;
    for (size_t b = 0; b < es; b++)
      if (buf[p * es + b] != RECV_BYTE) {
        fail("%s: gap element %zu (outside every fragment) was written", what, p);
        free(covered);
        return;
      }
  }
  free(covered);
  pass();
}

/* ---- Inputs ------------------------------------------------------------------------------ */

/* Data movement: element p of source src is the low bytes of a hash of (seed, src, p). */
static void raw_fill(uint64_t seed, int src, size_t first, size_t n, size_t es,
                     unsigned char *out) {
  for (size_t i = 0; i < n; i++) {
    uint64_t h = ref_hash(seed, src, first + i);
    memcpy(out + i * es, &h, es);
  }
}

static uint64_t case_seed(int a, int b, int c, int d) {
  return ref_hash(0x0B5C4EC4ull ^ ((uint64_t)(unsigned)a << 40) ^ ((uint64_t)(unsigned)b << 24),
                  c, (size_t)(unsigned)d);
}

static int64_t extend(uint64_t h, size_t size, int sgn) {
  if (size == 8) return (int64_t)h;
  unsigned bits = (unsigned)size * 8;
  uint64_t mask = (1ull << bits) - 1;
  h &= mask;
  if (sgn && (h >> (bits - 1))) h |= ~mask;
  return (int64_t)h;
}

/* One reduction case: the dtype, the operation the reference applies, and for premul-sum the
 * scalar (iscale for integers, fscale for floats). */
typedef struct {
  tutti_dtype_t dt;
  tutti_op_t op; /* SUM for premul cases */
  int premul;
  uint64_t iscale;
  double fscale;
  uint64_t seed;
} rcase_t;

/* Rank r's input element idx as an exact integer (sign- or zero-extended). SUM/AVG/premul:
 * [-4, 4] ([0, 8] unsigned; {-1, 0, 1} for FLOAT8 so that every partial sum over up to 8 ranks
 * stays exact in E5M2); PROD: {1, 2, -1} with factors of 2 from ranks 0-2 only; MIN/MAX: raw
 * bits for integers, [-100, 100] for floats ([-8, 8] for FLOAT8); bitwise: raw bits. */
static int64_t red_value(const rcase_t *c, int r, size_t idx) {
  uint64_t h = ref_hash(c->seed, r, idx);
  size_t sz = dts[c->dt].size;
  int fl = dts[c->dt].is_float, sg = dts[c->dt].is_signed;
  switch (c->op) {
  case TUTTI_BAND: case TUTTI_BOR: case TUTTI_BXOR: return extend(h, sz, sg);
  case TUTTI_MIN: case TUTTI_MAX:
    if (!fl) return extend(h, sz, sg);
    return is_fp8(c->dt) ? (int64_t)(h % 17) - 8 : (int64_t)(h % 201) - 100;
  case TUTTI_PROD: {
    int64_t v = sg ? (h % 3 == 0 ? 1 : h % 3 == 1 ? 2 : -1) : (int64_t)(1 + (h & 1));
    return (v == 2 && r >= 3) ? 1 : v;
  }
  default:
    if (is_fp8(c->dt)) return (int64_t)(h % 3) - 1;
    return sg ? (int64_t)(h % 9) - 4 : (int64_t)(h % 9);
  }
}

static void red_fill(const rcase_t *c, int r, size_t first, size_t n, unsigned char *out) {
  size_t es = dts[c->dt].size;
  for (size_t i = 0; i < n; i++) {
    int64_t v = red_value(c, r, first + i);
    if (dts[c->dt].is_float)
      store_double(c->dt, (double)v, out + i * es);
    else
      store_int(c->dt, (uint64_t)v, out + i * es);
  }
}

static int64_t combine(const rcase_t *c, int64_t a, int64_t b) {
  int sg = dts[c->dt].is_signed;
  switch (c->op) {
  case TUTTI_PROD: return (int64_t)((uint64_t)a * (uint64_t)b);
  case TUTTI_MIN: return sg ? (b < a ? b : a) : ((uint64_t)b < (uint64_t)a ? b : a);
  case TUTTI_MAX: return sg ? (b > a ? b : a) : ((uint64_t)b > (uint64_t)a ? b : a);
  case TUTTI_BAND: return a & b;
  case TUTTI_BOR: return a | b;
  case TUTTI_BXOR: return a ^ b;
  default: return (int64_t)((uint64_t)a + (uint64_t)b);
  }
}

/* The exact bytes of the reduction over all ranks of input element idx. */
static void red_expect1(const rcase_t *c, size_t idx, unsigned char *out) {
  tutti_dtype_t dt = c->dt;
  int fl = dts[dt].is_float;
  if (c->premul) {
    if (fl) {
      double acc = 0;
      for (int r = 0; r < nranks; r++) acc += c->fscale * (double)red_value(c, r, idx);
      store_double(dt, acc, out);
    } else {
      uint64_t acc = 0; /* wrapping arithmetic */
      for (int r = 0; r < nranks; r++) acc += c->iscale * (uint64_t)red_value(c, r, idx);
      store_int(dt, acc, out);
    }
    return;
  }
  int64_t acc = red_value(c, 0, idx);
  for (int r = 1; r < nranks; r++) acc = combine(c, acc, red_value(c, r, idx));
  if (!fl) {
    if (c->op == TUTTI_AVG) acc /= nranks; /* truncates toward zero; |sums| are small */
    store_int(dt, (uint64_t)acc, out);
  } else if (c->op != TUTTI_AVG) {
    store_double(dt, (double)acc, out);
  } else if (dt == TUTTI_FLOAT64) {
    store_double(dt, (double)acc / (double)nranks, out);
  } else { /* the exact sum as float, divided in float, rounded once to the dtype */
    store_double(dt, (double)((float)acc / (float)nranks), out);
  }
}

static void red_expect(const rcase_t *c, size_t first, size_t n, unsigned char *out) {
  for (size_t i = 0; i < n; i++) red_expect1(c, first + i, out + i * dts[c->dt].size);
}

/* ---- Irregular layouts ------------------------------------------------------------------- */

static const size_t count_pattern[8] = {3, 0, 17, 1, 0, 6, 2, 11};

/* Counts per rank for a layout variant: zeros for some ranks whenever nranks >= 2 in variants
 * 0 and 1. */
static void layout_counts(int variant, size_t scale, size_t *counts) {
  for (int i = 0; i < nranks; i++) counts[i] = count_pattern[(i + variant) % 8] * scale;
}

/* The order in which fragments lie in a buffer: reversed ranks (even variants) or odd ranks
 * ascending then even ranks descending (odd variants): never monotonic for nranks >= 2. */
static int layout_order(int variant, int k) {
  if (variant % 2 == 0) return nranks - 1 - k;
  int nodd = nranks / 2;
  if (k < nodd) return 2 * k + 1;
  int j = k - nodd; /* even ranks descending */
  int top_even = (nranks - 1) % 2 == 0 ? nranks - 1 : nranks - 2;
  return top_even - 2 * j;
}

/* Displacements for counts[] in layout order, with a gap of 1-3 elements before every fragment
 * and 2 after the last; a zero-count fragment's displacement points into the gap before it.
 * Returns the extent (elements the buffer must hold). */
static size_t layout_place(const size_t *counts, int variant, size_t *displs) {
  size_t cursor = 0;
  for (int k = 0; k < nranks; k++) {
    int i = layout_order(variant, k);
    cursor += 1 + (size_t)((k + variant) % 3);
    displs[i] = counts[i] ? cursor : cursor - 1;
    cursor += counts[i];
  }
  return cursor + 2;
}

/* ---- Equal-count forms ------------------------------------------------------------------- */

static const tutti_dtype_t move_dtypes[] = {TUTTI_INT8, TUTTI_BFLOAT16, TUTTI_FLOAT32,
                                            TUTTI_UINT64, TUTTI_FLOAT8_E5M2};
#define NUM_MOVE_DTYPES (sizeof move_dtypes / sizeof move_dtypes[0])

static void test_alltoall(tutti_dtype_t dt, size_t count) {
  size_t es = dts[dt].size, total = (size_t)nranks * count;
  uint64_t seed = case_seed(1, dt, (int)count, 0);
  char desc[160];
  snprintf(desc, sizeof desc, "alltoall dtype=%s count=%zu", dts[dt].name, count);
  gbuf_t sb, rb;
  unsigned char *send = gbuf_new(&sb, total * es), *recv = gbuf_new(&rb, total * es);
  unsigned char *exp = xmalloc(total * es);
  raw_fill(seed, rank, 0, total, es, send);
  if (call_ok(tutti_alltoall(send, recv, count, dt, comm), desc)) {
    for (int i = 0; i < nranks; i++) /* block i comes from rank i's block `rank` */
      raw_fill(seed, i, (size_t)rank * count, count, es, exp + (size_t)i * count * es);
    check_elems(desc, dt, recv, exp, total);
    raw_fill(seed, rank, 0, total, es, exp);
    char w[400];
    snprintf(w, sizeof w, "%s: sendbuf modified", desc);
    check_elems(w, dt, send, exp, total);
    gbuf_check(&sb, desc);
    gbuf_check(&rb, desc);
  }
  gbuf_free(&sb);
  gbuf_free(&rb);
  free(exp);
}

static void test_gather(tutti_dtype_t dt, size_t count, int root, int inplace) {
  size_t es = dts[dt].size, total = (size_t)nranks * count;
  uint64_t seed = case_seed(2, dt, (int)count, root * 2 + inplace);
  char desc[160], w[400];
  snprintf(desc, sizeof desc, "gather dtype=%s count=%zu root=%d inplace=%d", dts[dt].name,
           count, root, inplace);
  int ip = inplace && rank == root; /* in place: root sendbuf == recvbuf + root*count */
  gbuf_t sb = {0}, rb;
  unsigned char *recv = gbuf_new(&rb, total * es);
  unsigned char *send = ip ? recv + (size_t)root * count * es : gbuf_new(&sb, count * es);
  unsigned char *exp = xmalloc(total * es);
  raw_fill(seed, rank, 0, count, es, send);
  if (call_ok(tutti_gather(send, recv, count, dt, root, comm), desc)) {
    if (rank == root) {
      for (int i = 0; i < nranks; i++) raw_fill(seed, i, 0, count, es, exp + (size_t)i * count * es);
      check_elems(desc, dt, recv, exp, total);
    } else {
      memset(exp, RECV_BYTE, total * es);
      snprintf(w, sizeof w, "%s: non-root recvbuf written", desc);
      check_elems(w, dt, recv, exp, total);
    }
    if (!ip) {
      raw_fill(seed, rank, 0, count, es, exp);
      snprintf(w, sizeof w, "%s: sendbuf modified", desc);
      check_elems(w, dt, send, exp, count);
      gbuf_check(&sb, desc);
    }
    gbuf_check(&rb, desc);
  }
  if (sb.mem) gbuf_free(&sb);
  gbuf_free(&rb);
  free(exp);
}

static void test_scatter(tutti_dtype_t dt, size_t count, int root, int inplace) {
  size_t es = dts[dt].size, total = (size_t)nranks * count;
  uint64_t seed = case_seed(3, dt, (int)count, root * 2 + inplace);
  char desc[160], w[400];
  snprintf(desc, sizeof desc, "scatter dtype=%s count=%zu root=%d inplace=%d", dts[dt].name,
           count, root, inplace);
  int ip = inplace && rank == root; /* in place: root recvbuf == sendbuf + root*count */
  gbuf_t sb, rb = {0};
  unsigned char *send = gbuf_new(&sb, total * es);
  unsigned char *recv = ip ? send + (size_t)root * count * es : gbuf_new(&rb, count * es);
  unsigned char *exp = xmalloc(total * es);
  if (rank == root) raw_fill(seed, root, 0, total, es, send);
  if (call_ok(tutti_scatter(send, recv, count, dt, root, comm), desc)) {
    raw_fill(seed, root, (size_t)rank * count, count, es, exp);
    check_elems(desc, dt, recv, exp, count);
    if (rank == root) {
      raw_fill(seed, root, 0, total, es, exp);
      snprintf(w, sizeof w, "%s: root sendbuf modified", desc);
      check_elems(w, dt, send, exp, total);
    } else {
      memset(exp, RECV_BYTE, total * es);
      snprintf(w, sizeof w, "%s: non-root sendbuf written", desc);
      check_elems(w, dt, send, exp, total);
    }
    gbuf_check(&sb, desc);
    if (!ip) gbuf_check(&rb, desc);
  }
  gbuf_free(&sb);
  if (rb.mem) gbuf_free(&rb);
  free(exp);
}

static void section_equal(void) {
  const size_t counts[] = {0, 1, 7, 1000, 65537};
  size_t ncounts = quick ? 4 : 5;
  for (size_t d = 0; d < NUM_MOVE_DTYPES; d++)
    for (size_t c = 0; c < ncounts; c++) {
      if (counts[c] > 1000 && move_dtypes[d] != TUTTI_FLOAT32) continue;
      test_alltoall(move_dtypes[d], counts[c]);
    }
  for (size_t d = 0; d < NUM_MOVE_DTYPES; d++)
    for (size_t c = 0; c < ncounts; c++) {
      if (counts[c] > 1000 && move_dtypes[d] != TUTTI_FLOAT32) continue;
      for (int root = 0; root < nranks; root++)
        for (int ip = 0; ip < 2; ip++) {
          test_gather(move_dtypes[d], counts[c], root, ip);
          test_scatter(move_dtypes[d], counts[c], root, ip);
        }
    }
}

/* ---- All-gather-v ------------------------------------------------------------------------ */

static void test_allgatherv(tutti_dtype_t dt, int variant, size_t scale, int inplace) {
  size_t es = dts[dt].size, counts[MAX_RANKS], displs[MAX_RANKS];
  layout_counts(variant, scale, counts);
  size_t extent = layout_place(counts, variant, displs);
  uint64_t seed = case_seed(4, dt, variant, (int)scale * 2 + inplace);
  char desc[160], w[400];
  snprintf(desc, sizeof desc, "allgatherv dtype=%s variant=%d scale=%zu inplace=%d",
           dts[dt].name, variant, scale, inplace);
  gbuf_t sb = {0}, rb;
  unsigned char *recv = gbuf_new(&rb, extent * es);
  unsigned char *send = inplace ? recv + displs[rank] * es : gbuf_new(&sb, counts[rank] * es);
  unsigned char *exp = xmalloc(extent * es);
  raw_fill(seed, rank, 0, counts[rank], es, send);
  if (call_ok(tutti_allgatherv(send, counts[rank], recv, counts, displs, dt, comm), desc)) {
    for (int i = 0; i < nranks; i++) {
      raw_fill(seed, i, 0, counts[i], es, exp);
      snprintf(w, sizeof w, "%s: fragment of rank %d at displ %zu", desc, i, displs[i]);
      check_elems(w, dt, recv + displs[i] * es, exp, counts[i]);
    }
    check_gaps(desc, recv, extent, es, counts, displs, nranks);
    if (!inplace) {
      raw_fill(seed, rank, 0, counts[rank], es, exp);
      snprintf(w, sizeof w, "%s: sendbuf modified", desc);
      check_elems(w, dt, send, exp, counts[rank]);
      gbuf_check(&sb, desc);
    }
    gbuf_check(&rb, desc);
  }
  if (sb.mem) gbuf_free(&sb);
  gbuf_free(&rb);
  free(exp);
}

static void section_allgatherv(void) {
  for (int dt = 0; dt < NUM_DTYPES; dt++)
    for (int v = 0; v < 3; v++)
      for (int ip = 0; ip < 2; ip++) test_allgatherv((tutti_dtype_t)dt, v, 1, ip);
  if (!quick)
    for (int ip = 0; ip < 2; ip++) {
      test_allgatherv(TUTTI_FLOAT32, 0, 9973, ip);
      test_allgatherv(TUTTI_INT8, 1, 30011, ip);
    }
}

/* ---- Reduce-scatter-v -------------------------------------------------------------------- */

/* call_op is what the library is given (a premul op for premul cases, else c->op). */
static void test_rsv(const rcase_t *c, tutti_op_t call_op, int variant, size_t scale,
                     int inplace) {
  tutti_dtype_t dt = c->dt;
  size_t es = dts[dt].size, counts[MAX_RANKS], off[MAX_RANKS + 1];
  layout_counts(variant, scale, counts);
  off[0] = 0;
  for (int i = 0; i < nranks; i++) off[i + 1] = off[i] + counts[i];
  size_t total = off[nranks], mine = counts[rank];
  char desc[160], w[400];
  snprintf(desc, sizeof desc, "reduce_scatterv dtype=%s op=%s variant=%d scale=%zu inplace=%d",
           dts[dt].name, c->premul ? "premul" : op_name(c->op), variant, scale, inplace);
  gbuf_t sb, rb = {0};
  unsigned char *send = gbuf_new(&sb, total * es);
  unsigned char *recv = inplace ? send + off[rank] * es : gbuf_new(&rb, mine * es);
  unsigned char *exp = xmalloc(total * es);
  red_fill(c, rank, 0, total, send);
  if (call_ok(tutti_reduce_scatterv(send, recv, counts, dt, call_op, comm), desc)) {
    red_expect(c, off[rank], mine, exp);
    check_elems(desc, dt, recv, exp, mine);
    red_fill(c, rank, 0, total, exp);
    if (!inplace) {
      snprintf(w, sizeof w, "%s: sendbuf modified", desc);
      check_elems(w, dt, send, exp, total);
      gbuf_check(&rb, desc);
    } else {
      snprintf(w, sizeof w, "%s: sendbuf before own segment modified", desc);
      check_elems(w, dt, send, exp, off[rank]);
      snprintf(w, sizeof w, "%s: sendbuf after own segment modified", desc);
      check_elems(w, dt, send + off[rank + 1] * es, exp + off[rank + 1] * es,
                  total - off[rank + 1]);
    }
    gbuf_check(&sb, desc);
  }
  gbuf_free(&sb);
  if (rb.mem) gbuf_free(&rb);
  free(exp);
}

static void section_reduce_scatterv(void) {
  for (int dt = 0; dt < NUM_DTYPES; dt++) {
    int nops = dts[dt].is_float ? 5 : 8;
    for (int op = 0; op < nops; op++) {
      rcase_t c = {.dt = (tutti_dtype_t)dt, .op = (tutti_op_t)op};
      for (int v = 0; v < 3; v++)
        for (int ip = 0; ip < 2; ip++) {
          c.seed = case_seed(5, dt, op, v * 2 + ip);
          test_rsv(&c, c.op, v, 1, ip);
        }
    }
  }
  if (!quick) {
    const struct { tutti_dtype_t dt; tutti_op_t op; } big[] = {
        {TUTTI_FLOAT32, TUTTI_SUM}, {TUTTI_INT8, TUTTI_MAX}, {TUTTI_BFLOAT16, TUTTI_AVG},
        {TUTTI_UINT32, TUTTI_BXOR}};
    for (size_t b = 0; b < sizeof big / sizeof big[0]; b++)
      for (int ip = 0; ip < 2; ip++) {
        rcase_t c = {.dt = big[b].dt, .op = big[b].op, .seed = case_seed(6, (int)b, ip, 0)};
        test_rsv(&c, c.op, (int)b % 3, 7919, ip);
      }
  }
}

/* ---- Gather-v and scatter-v -------------------------------------------------------------- */

/* null_nonroot: non-roots pass NULL for everything tutti.h says is read only at the root. */
static void test_gatherv(tutti_dtype_t dt, int variant, size_t scale, int root,
                         int null_nonroot) {
  size_t es = dts[dt].size, counts[MAX_RANKS], displs[MAX_RANKS];
  layout_counts(variant, scale, counts);
  size_t extent = layout_place(counts, variant, displs);
  uint64_t seed = case_seed(7, dt, variant, root * 2 + null_nonroot);
  char desc[160], w[400];
  snprintf(desc, sizeof desc, "gatherv dtype=%s variant=%d scale=%zu root=%d null_nonroot=%d",
           dts[dt].name, variant, scale, root, null_nonroot);
  gbuf_t sb, rb;
  unsigned char *send = gbuf_new(&sb, counts[rank] * es), *recv = gbuf_new(&rb, extent * es);
  unsigned char *exp = xmalloc(extent * es);
  raw_fill(seed, rank, 0, counts[rank], es, send);
  int nr = null_nonroot && rank != root;
  if (call_ok(tutti_gatherv(send, counts[rank], nr ? NULL : recv, nr ? NULL : counts,
                            nr ? NULL : displs, dt, root, comm),
              desc)) {
    if (rank == root) {
      for (int i = 0; i < nranks; i++) {
        raw_fill(seed, i, 0, counts[i], es, exp);
        snprintf(w, sizeof w, "%s: fragment of rank %d at displ %zu", desc, i, displs[i]);
        check_elems(w, dt, recv + displs[i] * es, exp, counts[i]);
      }
      check_gaps(desc, recv, extent, es, counts, displs, nranks);
    } else {
      memset(exp, RECV_BYTE, extent * es);
      snprintf(w, sizeof w, "%s: non-root recvbuf written", desc);
      check_elems(w, dt, recv, exp, extent);
    }
    raw_fill(seed, rank, 0, counts[rank], es, exp);
    snprintf(w, sizeof w, "%s: sendbuf modified", desc);
    check_elems(w, dt, send, exp, counts[rank]);
    gbuf_check(&sb, desc);
    gbuf_check(&rb, desc);
  }
  gbuf_free(&sb);
  gbuf_free(&rb);
  free(exp);
}

static void test_scatterv(tutti_dtype_t dt, int variant, size_t scale, int root,
                          int null_nonroot) {
  size_t es = dts[dt].size, counts[MAX_RANKS], displs[MAX_RANKS];
  layout_counts(variant, scale, counts);
  size_t extent = layout_place(counts, variant, displs);
  uint64_t seed = case_seed(8, dt, variant, root * 2 + null_nonroot);
  char desc[160], w[400];
  snprintf(desc, sizeof desc, "scatterv dtype=%s variant=%d scale=%zu root=%d null_nonroot=%d",
           dts[dt].name, variant, scale, root, null_nonroot);
  gbuf_t sb, rb;
  /* The root's sendbuf: element p (gaps included) is raw(seed, root, p). */
  unsigned char *send = gbuf_new(&sb, extent * es), *recv = gbuf_new(&rb, counts[rank] * es);
  unsigned char *exp = xmalloc(extent * es);
  if (rank == root) raw_fill(seed, root, 0, extent, es, send);
  int nr = null_nonroot && rank != root;
  if (call_ok(tutti_scatterv(nr ? NULL : send, nr ? NULL : counts, nr ? NULL : displs, recv,
                             counts[rank], dt, root, comm),
              desc)) {
    raw_fill(seed, root, displs[rank], counts[rank], es, exp);
    check_elems(desc, dt, recv, exp, counts[rank]);
    if (rank == root) {
      raw_fill(seed, root, 0, extent, es, exp);
      snprintf(w, sizeof w, "%s: root sendbuf modified", desc);
    } else {
      memset(exp, RECV_BYTE, extent * es);
      snprintf(w, sizeof w, "%s: non-root sendbuf written", desc);
    }
    check_elems(w, dt, send, exp, extent);
    gbuf_check(&sb, desc);
    gbuf_check(&rb, desc);
  }
  gbuf_free(&sb);
  gbuf_free(&rb);
  free(exp);
}

static void section_gatherv(void) {
  for (size_t d = 0; d < NUM_MOVE_DTYPES; d++)
    for (int v = 0; v < 3; v++)
      for (int root = 0; root < nranks; root++)
        test_gatherv(move_dtypes[d], v, 1, root, v == 1);
  if (!quick) {
    test_gatherv(TUTTI_FLOAT32, 0, 9973, 0, 0);
    test_gatherv(TUTTI_FLOAT32, 2, 9973, nranks - 1, 1);
  }
}

static void section_scatterv(void) {
  for (size_t d = 0; d < NUM_MOVE_DTYPES; d++)
    for (int v = 0; v < 3; v++)
      for (int root = 0; root < nranks; root++)
        test_scatterv(move_dtypes[d], v, 1, root, v == 1);
  if (!quick) {
    test_scatterv(TUTTI_FLOAT32, 0, 9973, 0, 0);
    test_scatterv(TUTTI_FLOAT32, 2, 9973, nranks - 1, 1);
  }
}

/* ---- All-to-all-v ------------------------------------------------------------------------ */

/* Elements rank s sends to rank d: zero for some pairs. */
static size_t a2a_count(int variant, size_t scale, int s, int d) {
  return count_pattern[(size_t)(s * 3 + d + variant) % 8] * scale;
}

static void test_alltoallv(tutti_dtype_t dt, int variant, size_t scale) {
  size_t es = dts[dt].size;
  size_t sc[MAX_RANKS], sd[MAX_RANKS], rc[MAX_RANKS], rd[MAX_RANKS];
  for (int j = 0; j < nranks; j++) {
    sc[j] = a2a_count(variant, scale, rank, j);
    rc[j] = a2a_count(variant, scale, j, rank);
  }
  size_t sext = layout_place(sc, variant, sd), rext = layout_place(rc, variant + 1, rd);
  uint64_t seed = case_seed(9, dt, variant, (int)scale);
  char desc[160], w[400];
  snprintf(desc, sizeof desc, "alltoallv dtype=%s variant=%d scale=%zu", dts[dt].name, variant,
           scale);
  gbuf_t sb, rb;
  /* Sender s's sendbuf: element p (gaps included) is raw(seed, s, p). */
  unsigned char *send = gbuf_new(&sb, sext * es), *recv = gbuf_new(&rb, rext * es);
  size_t big = sext > rext ? sext : rext;
  unsigned char *exp = xmalloc(big * es);
  raw_fill(seed, rank, 0, sext, es, send);
  if (call_ok(tutti_alltoallv(send, sc, sd, recv, rc, rd, dt, comm), desc)) {
    for (int s = 0; s < nranks; s++) {
      size_t ssc[MAX_RANKS], ssd[MAX_RANKS]; /* sender s's layout, recomputed here */
      for (int j = 0; j < nranks; j++) ssc[j] = a2a_count(variant, scale, s, j);
      layout_place(ssc, variant, ssd);
      raw_fill(seed, s, ssd[rank], rc[s], es, exp);
      snprintf(w, sizeof w, "%s: fragment from rank %d at rdispl %zu", desc, s, rd[s]);
      check_elems(w, dt, recv + rd[s] * es, exp, rc[s]);
    }
    check_gaps(desc, recv, rext, es, rc, rd, nranks);
    raw_fill(seed, rank, 0, sext, es, exp);
    snprintf(w, sizeof w, "%s: sendbuf modified", desc);
    check_elems(w, dt, send, exp, sext);
    gbuf_check(&sb, desc);
    gbuf_check(&rb, desc);
  }
  gbuf_free(&sb);
  gbuf_free(&rb);
  free(exp);
}

static void section_alltoallv(void) {
  for (size_t d = 0; d < NUM_MOVE_DTYPES; d++)
    for (int v = 0; v < 3; v++) test_alltoallv(move_dtypes[d], v, 1);
  if (!quick) {
    test_alltoallv(TUTTI_FLOAT32, 0, 4999);
    test_alltoallv(TUTTI_INT8, 1, 20011);
  }
}

/* ---- Send / receive ---------------------------------------------------------------------- */

#define BIG_P2P ((size_t)1 << 20) /* int32 elements: 4 MiB */

static void test_ring_group(void) {
  int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
  size_t es = 4;
  uint64_t seed = case_seed(10, 0, 0, 0);
  gbuf_t sb, rb;
  unsigned char *send = gbuf_new(&sb, BIG_P2P * es), *recv = gbuf_new(&rb, BIG_P2P * es);
  unsigned char *exp = xmalloc(BIG_P2P * es);
  raw_fill(seed, rank, 0, BIG_P2P, es, send);
  const char *desc = "4 MiB ring in a group, sends before receives";
  tutti_result_t rc = tutti_group_start();
  if (rc != TUTTI_SUCCESS) call_ok(rc, "tutti_group_start");
  rc = tutti_send(send, BIG_P2P, TUTTI_INT32, right, comm);
  if (rc != TUTTI_SUCCESS) fail("%s: tutti_send inside the group returned %s: %s", desc,
                                tutti_result_string(rc), last_error());
  rc = tutti_recv(recv, BIG_P2P, TUTTI_INT32, left, comm);
  if (rc != TUTTI_SUCCESS) fail("%s: tutti_recv inside the group returned %s: %s", desc,
                                tutti_result_string(rc), last_error());
  if (call_ok(tutti_group_end(), "tutti_group_end of the 4 MiB ring")) {
    raw_fill(seed, left, 0, BIG_P2P, es, exp);
    check_elems(desc, TUTTI_INT32, recv, exp, BIG_P2P);
    raw_fill(seed, rank, 0, BIG_P2P, es, exp);
    check_elems("ring: sendbuf modified", TUTTI_INT32, send, exp, BIG_P2P);
    gbuf_check(&sb, desc);
    gbuf_check(&rb, desc);
  }
  gbuf_free(&sb);
  gbuf_free(&rb);
  free(exp);
}

/* Pairs (2k, 2k+1): the even rank sends then receives, the odd one receives then sends. */
static void test_pair_blocking(void) {
  int partner = rank ^ 1;
  if (partner >= nranks) return;
  size_t es = 4;
  uint64_t seed = case_seed(11, 0, 0, 0);
  unsigned char *send = xmalloc(BIG_P2P * es), *recv = xmalloc(BIG_P2P * es);
  unsigned char *exp = xmalloc(BIG_P2P * es);
  raw_fill(seed, rank, 0, BIG_P2P, es, send);
  memset(recv, RECV_BYTE, BIG_P2P * es);
  int ok;
  if (rank % 2 == 0) {
    ok = call_ok(tutti_send(send, BIG_P2P, TUTTI_INT32, partner, comm), "blocking 4 MiB send") &&
         call_ok(tutti_recv(recv, BIG_P2P, TUTTI_INT32, partner, comm), "blocking 4 MiB recv");
  } else {
    ok = call_ok(tutti_recv(recv, BIG_P2P, TUTTI_INT32, partner, comm), "blocking 4 MiB recv") &&
         call_ok(tutti_send(send, BIG_P2P, TUTTI_INT32, partner, comm), "blocking 4 MiB send");
  }
  if (ok) {
    raw_fill(seed, partner, 0, BIG_P2P, es, exp);
    check_elems("blocking pairwise 4 MiB exchange", TUTTI_INT32, recv, exp, BIG_P2P);
  }
  free(send);
  free(recv);
  free(exp);
}

/* Messages of different sizes between one pair must match in order. */
static const size_t ordered_sizes[] = {1000, 0, 300000, 7, 1};
#define NUM_ORDERED (sizeof ordered_sizes / sizeof ordered_sizes[0])

static void test_ordered(int grouped) {
  int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
  uint64_t seed = case_seed(12, grouped, 0, 0);
  unsigned char *send[NUM_ORDERED], *recv[NUM_ORDERED];
  for (size_t m = 0; m < NUM_ORDERED; m++) {
    send[m] = xmalloc(ordered_sizes[m] * 4);
    recv[m] = xmalloc(ordered_sizes[m] * 4);
    raw_fill(seed + m, rank, 0, ordered_sizes[m], 4, send[m]);
    memset(recv[m], RECV_BYTE, ordered_sizes[m] * 4);
  }
  int ok = 1;
  char desc[128];
  if (grouped) {
    /* Everything posted at once: every rank sends all messages right and receives all left. */
    snprintf(desc, sizeof desc, "ordered matching, %zu messages posted in one group", NUM_ORDERED);
    call_ok(tutti_group_start(), "tutti_group_start");
    for (size_t m = 0; m < NUM_ORDERED; m++) {
      tutti_result_t rc = tutti_send(send[m], ordered_sizes[m], TUTTI_INT32, right, comm);
      if (rc != TUTTI_SUCCESS) fail("%s: send %zu returned %s", desc, m, tutti_result_string(rc));
    }
    for (size_t m = 0; m < NUM_ORDERED; m++) {
      tutti_result_t rc = tutti_recv(recv[m], ordered_sizes[m], TUTTI_INT32, left, comm);
      if (rc != TUTTI_SUCCESS) fail("%s: recv %zu returned %s", desc, m, tutti_result_string(rc));
    }
    ok = call_ok(tutti_group_end(), desc);
  } else {
    /* Blocking, one direction at a time: even ranks send first, odd ranks receive first; with
     * an odd number of ranks the last rank (even) and rank 0 both send first to their right,
     * which the in-order matching alone cannot resolve, so only even sizes run this. */
    snprintf(desc, sizeof desc, "ordered matching, %zu blocking messages", NUM_ORDERED);
    for (int phase = 0; phase < 2 && ok; phase++) {
      int sending = (rank % 2 == 0) == (phase == 0);
      for (size_t m = 0; m < NUM_ORDERED && ok; m++) {
        if (sending)
          ok = call_ok(tutti_send(send[m], ordered_sizes[m], TUTTI_INT32, right, comm), desc);
        else
          ok = call_ok(tutti_recv(recv[m], ordered_sizes[m], TUTTI_INT32, left, comm), desc);
      }
    }
  }
  if (ok)
    for (size_t m = 0; m < NUM_ORDERED; m++) {
      unsigned char *exp = xmalloc(ordered_sizes[m] * 4);
      raw_fill(seed + m, left, 0, ordered_sizes[m], 4, exp);
      char w[400];
      snprintf(w, sizeof w, "%s: message %zu (%zu elements) from rank %d", desc, m,
               ordered_sizes[m], left);
      check_elems(w, TUTTI_INT32, recv[m], exp, ordered_sizes[m]);
      free(exp);
    }
  for (size_t m = 0; m < NUM_ORDERED; m++) {
    free(send[m]);
    free(recv[m]);
  }
}

static void section_p2p(void) {
  if (nranks < 2) return; /* every peer would be this rank or out of range: see "invalid" */
  test_ring_group();
  test_pair_blocking();
  test_ordered(1);
  if (nranks % 2 == 0) test_ordered(0);
}

/* ---- FLOAT8 overflow --------------------------------------------------------------------- */

static void section_fp8(void) {
  /* Every rank contributes 240 (E4M3 0x77) or 57344 (E5M2 0x7b): from 2 ranks on the sum is
   * past the range; E4M3 saturates to 448 (0x7e), E5M2 overflows to infinity (0x7c). Every
   * partial sum is past the range too, so the order of combination does not matter. */
  const struct { tutti_dtype_t dt; uint8_t in, over; } cases[] = {
      {TUTTI_FLOAT8_E4M3, 0x77, 0x7e}, {TUTTI_FLOAT8_E5M2, 0x7b, 0x7c}};
  /* Sanity of the test's own codec first. */
  if (fp8_decode(0x77, 0) != 240.0 || fp8_decode(0x7e, 0) != 448.0 ||
      fp8_decode(0x7b, 1) != 57344.0 || !isinf(fp8_decode(0x7c, 1)) ||
      fp8_encode(480.0, 0) != 0x7e || fp8_encode(114688.0, 1) != 0x7c ||
      fp8_encode(1.0 / 3, 0) != 0x2b || fp8_encode(-2.5, 1) != 0xc1) {
    fail("the test's own FLOAT8 codec is wrong (test bug)");
    return;
  }
  for (size_t k = 0; k < 2; k++) {
    uint8_t in[16], out[16], exp[16];
    memset(in, cases[k].in, sizeof in);
    memset(out, RECV_BYTE, sizeof out);
    memset(exp, nranks >= 2 ? cases[k].over : cases[k].in, sizeof exp);
    char desc[96];
    snprintf(desc, sizeof desc, "allreduce SUM %s overflow", dts[cases[k].dt].name);
    if (call_ok(tutti_allreduce(in, out, 16, cases[k].dt, TUTTI_SUM, comm), desc))
      check_elems(desc, cases[k].dt, out, exp, 16);
    /* Negative side, through reduce-scatter. */
    uint8_t nin[16 * MAX_RANKS], nout[16], nexp[16];
    memset(nin, cases[k].in | 0x80, (size_t)16 * nranks);
    memset(nexp, (nranks >= 2 ? cases[k].over : cases[k].in) | 0x80, sizeof nexp);
    snprintf(desc, sizeof desc, "reduce_scatter SUM %s negative overflow",
             dts[cases[k].dt].name);
    if (call_ok(tutti_reduce_scatter(nin, nout, 16, cases[k].dt, TUTTI_SUM, comm), desc))
      check_elems(desc, cases[k].dt, nout, nexp, 16);
  }
}

/* ---- FLOAT8 and bitwise ops through the classic collectives ---------------------------- */

/* All-reduce (out of place and in place), reduce to every root, reduce-scatter, with the same
 * exact inputs as reduce_scatterv. */
static void test_classic(const rcase_t *c, size_t count) {
  tutti_dtype_t dt = c->dt;
  size_t es = dts[dt].size, rcount = 17, total = rcount * (size_t)nranks;
  size_t big = count > total ? count : total;
  char desc[160], w[400];
  snprintf(desc, sizeof desc, "dtype=%s op=%s count=%zu", dts[dt].name, op_name(c->op), count);
  gbuf_t sb, rb;
  unsigned char *in = gbuf_new(&sb, big * es), *out = gbuf_new(&rb, big * es);
  unsigned char *exp = xmalloc(big * es);

  red_fill(c, rank, 0, count, in);
  red_expect(c, 0, count, exp);
  snprintf(w, sizeof w, "allreduce %s", desc);
  if (call_ok(tutti_allreduce(in, out, count, dt, c->op, comm), w)) check_elems(w, dt, out, exp, count);
  red_fill(c, rank, 0, count, out);
  snprintf(w, sizeof w, "allreduce in place %s", desc);
  if (call_ok(tutti_allreduce(out, out, count, dt, c->op, comm), w)) check_elems(w, dt, out, exp, count);

  size_t rc = count < 33 ? count : 33;
  for (int root = 0; root < nranks; root++) {
    memset(out, RECV_BYTE, rc * es);
    snprintf(w, sizeof w, "reduce root=%d %s (count %zu)", root, desc, rc);
    if (call_ok(tutti_reduce(in, out, rc, dt, c->op, root, comm), w)) {
      if (rank == root)
        red_expect(c, 0, rc, exp);
      else
        memset(exp, RECV_BYTE, rc * es);
      check_elems(w, dt, out, exp, rc);
    }
  }

  red_fill(c, rank, 0, total, in);
  memset(out, RECV_BYTE, rcount * es);
  snprintf(w, sizeof w, "reduce_scatter %s (recvcount %zu)", desc, rcount);
  if (call_ok(tutti_reduce_scatter(in, out, rcount, dt, c->op, comm), w)) {
    red_expect(c, (size_t)rank * rcount, rcount, exp);
    check_elems(w, dt, out, exp, rcount);
  }
  gbuf_check(&sb, desc);
  gbuf_check(&rb, desc);
  gbuf_free(&sb);
  gbuf_free(&rb);
  free(exp);
}

static void section_newtypes(void) {
  for (int dt = 0; dt < NUM_DTYPES; dt++) {
    int fp8 = is_fp8((tutti_dtype_t)dt);
    if (dts[dt].is_float && !fp8) continue; /* coll_check covers those */
    int op0 = fp8 ? 0 : TUTTI_BAND, op1 = fp8 ? TUTTI_AVG : TUTTI_BXOR;
    for (int op = op0; op <= op1; op++) {
      rcase_t c = {.dt = (tutti_dtype_t)dt, .op = (tutti_op_t)op,
                   .seed = case_seed(14, dt, op, 0)};
      test_classic(&c, 1001);
      if (!quick && (op == TUTTI_SUM || op == TUTTI_BXOR)) {
        c.seed = case_seed(14, dt, op, 1);
        test_classic(&c, 300007);
      }
    }
  }
  /* FLOAT8 data movement: broadcast from every root and all-gather, raw bit patterns (NaNs
   * included: nothing is computed, so every bit must arrive). */
  for (int dt = TUTTI_FLOAT8_E4M3; dt <= TUTTI_FLOAT8_E5M2; dt++) {
    const size_t cnt = 777;
    uint64_t seed = case_seed(15, dt, 0, 0);
    unsigned char in[777], out[777 * MAX_RANKS], exp[777 * MAX_RANKS];
    char w[128];
    for (int root = 0; root < nranks; root++) {
      raw_fill(seed, rank, 0, cnt, 1, in);
      memset(out, RECV_BYTE, cnt);
      snprintf(w, sizeof w, "broadcast %s root=%d", dts[dt].name, root);
      if (call_ok(tutti_broadcast(in, out, cnt, (tutti_dtype_t)dt, root, comm), w)) {
        raw_fill(seed, root, 0, cnt, 1, exp);
        check_elems(w, (tutti_dtype_t)dt, out, exp, cnt);
      }
    }
    raw_fill(seed, rank, 0, cnt, 1, in);
    snprintf(w, sizeof w, "allgather %s", dts[dt].name);
    if (call_ok(tutti_allgather(in, out, cnt, (tutti_dtype_t)dt, comm), w)) {
      for (int r = 0; r < nranks; r++) raw_fill(seed, r, 0, cnt, 1, exp + (size_t)r * cnt);
      check_elems(w, (tutti_dtype_t)dt, out, exp, cnt * (size_t)nranks);
    }
  }
}

/* ---- Invalid-argument helpers ------------------------------------------------------------ */

static unsigned char pat_send[64 * MAX_RANKS * 8], pat_recv[64 * MAX_RANKS * 8];

static void pattern_fill(void) {
  memset(pat_send, PATTERN, sizeof pat_send);
  memset(pat_recv, PATTERN, sizeof pat_recv);
}

static int pattern_intact(void) {
  for (size_t i = 0; i < sizeof pat_send; i++)
    if (pat_send[i] != PATTERN || pat_recv[i] != PATTERN) return 0;
  return 1;
}

/* A refused call: TUTTI_ERR_INVALID_ARGUMENT, and the pattern buffers untouched. */
static void expect_invalid(tutti_result_t rc, const char *what) {
  if (rc != TUTTI_ERR_INVALID_ARGUMENT)
    fail("%s returned %s, expected TUTTI_ERR_INVALID_ARGUMENT%s%s", what, tutti_result_string(rc),
         rc == TUTTI_SUCCESS ? "" : ": ", rc == TUTTI_SUCCESS ? "" : last_error());
  else if (!pattern_intact())
    fail("%s: a buffer was written by a refused call", what);
  else
    pass();
  pattern_fill();
}
#define EXPECT_INVALID(call) expect_invalid((call), #call)

/* A correct all-reduce: the communicator still works after refused calls. */
static void still_works(const char *after) {
  int32_t in[5], out[5];
  for (int i = 0; i < 5; i++) in[i] = rank * 10 + i;
  char desc[160];
  snprintf(desc, sizeof desc, "all-reduce after %s", after);
  if (!call_ok(tutti_allreduce(in, out, 5, TUTTI_INT32, TUTTI_SUM, comm), desc)) return;
  int bad = 0;
  for (int i = 0; i < 5; i++)
    if (out[i] != 10 * nranks * (nranks - 1) / 2 + nranks * i) bad = 1;
  if (bad)
    fail("%s: wrong result", desc);
  else
    pass();
}

/* ---- Bitwise operations on floats -------------------------------------------------------- */

static void section_bitwise(void) {
  size_t counts[MAX_RANKS];
  for (int i = 0; i < nranks; i++) counts[i] = 2;
  pattern_fill();
  for (int dt = TUTTI_FLOAT16; dt < NUM_DTYPES; dt++)
    for (int op = TUTTI_BAND; op <= TUTTI_BXOR; op++) {
      tutti_dtype_t d = (tutti_dtype_t)dt;
      tutti_op_t o = (tutti_op_t)op;
      char w[160];
      snprintf(w, sizeof w, "tutti_allreduce(%s, %s)", dts[dt].name, op_names[op]);
      expect_invalid(tutti_allreduce(pat_send, pat_recv, 8, d, o, comm), w);
      snprintf(w, sizeof w, "tutti_allreduce in place (%s, %s)", dts[dt].name, op_names[op]);
      expect_invalid(tutti_allreduce(pat_recv, pat_recv, 8, d, o, comm), w);
      snprintf(w, sizeof w, "tutti_reduce_scatter(%s, %s)", dts[dt].name, op_names[op]);
      expect_invalid(tutti_reduce_scatter(pat_send, pat_recv, 2, d, o, comm), w);
      snprintf(w, sizeof w, "tutti_reduce(%s, %s, root 0)", dts[dt].name, op_names[op]);
      expect_invalid(tutti_reduce(pat_send, pat_recv, 8, d, o, 0, comm), w);
      snprintf(w, sizeof w, "tutti_reduce_scatterv(%s, %s)", dts[dt].name, op_names[op]);
      expect_invalid(tutti_reduce_scatterv(pat_send, pat_recv, counts, d, o, comm), w);
      tutti_request_t req = NULL;
      snprintf(w, sizeof w, "tutti_iallreduce(%s, %s)", dts[dt].name, op_names[op]);
      expect_invalid(tutti_iallreduce(pat_send, pat_recv, 8, d, o, comm, &req), w);
      if (req != NULL) {
        fail("%s: refused, but a request was returned", w);
        tutti_request_free(req);
      }
    }
  still_works("bitwise operations on floats");
  /* The same operations on integers are accepted (the full matrix is in reduce_scatterv):
   * here one all-reduce per op on int32 with known bits. */
  for (int op = TUTTI_BAND; op <= TUTTI_BXOR; op++) {
    uint32_t in[4], out[4], want[4];
    for (int i = 0; i < 4; i++) {
      in[i] = (uint32_t)ref_hash(77, rank, (size_t)i);
      uint32_t acc = (uint32_t)ref_hash(77, 0, (size_t)i);
      for (int r = 1; r < nranks; r++) {
        uint32_t v = (uint32_t)ref_hash(77, r, (size_t)i);
        acc = op == TUTTI_BAND ? acc & v : op == TUTTI_BOR ? acc | v : acc ^ v;
      }
      want[i] = acc;
    }
    char w[96];
    snprintf(w, sizeof w, "allreduce uint32 %s", op_names[op]);
    if (call_ok(tutti_allreduce(in, out, 4, TUTTI_UINT32, (tutti_op_t)op, comm), w))
      check_elems(w, TUTTI_UINT32, (unsigned char *)out, (unsigned char *)want, 4);
  }
}

/* ---- Premul-sum -------------------------------------------------------------------------- */

/* One premul case: create, all-reduce (out of place and in place), reduce-scatter, reduce to
 * the last rank, reduce-scatter-v, destroy. */
static void test_premul(tutti_dtype_t dt, const void *scalar, uint64_t iscale, double fscale) {
  size_t es = dts[dt].size;
  char desc[160], w[400];
  snprintf(desc, sizeof desc, "premul-sum dtype=%s scalar=%g", dts[dt].name,
           dts[dt].is_float ? fscale : (double)(int64_t)iscale);
  tutti_op_t op;
  if (!call_ok(tutti_op_create_premul_sum(&op, scalar, dt, comm), desc)) return;
  if ((int)op < TUTTI_NUM_OPS) fail("%s: created op %d is a built-in value", desc, (int)op);
  rcase_t c = {.dt = dt, .op = TUTTI_SUM, .premul = 1, .iscale = iscale, .fscale = fscale,
               .seed = case_seed(13, dt, 0, 0)};
  const size_t count = 1001, rcount = 37;
  size_t total = rcount * (size_t)nranks, big = total > count ? total : count;
  unsigned char *in = xmalloc(big * es), *out = xmalloc(big * es), *exp = xmalloc(big * es);

  red_fill(&c, rank, 0, count, in);
  memset(out, RECV_BYTE, count * es);
  snprintf(w, sizeof w, "%s: allreduce", desc);
  if (call_ok(tutti_allreduce(in, out, count, dt, op, comm), w)) {
    red_expect(&c, 0, count, exp);
    check_elems(w, dt, out, exp, count);
  }
  snprintf(w, sizeof w, "%s: allreduce in place", desc);
  red_fill(&c, rank, 0, count, out);
  if (call_ok(tutti_allreduce(out, out, count, dt, op, comm), w)) check_elems(w, dt, out, exp, count);

  red_fill(&c, rank, 0, total, in);
  memset(out, RECV_BYTE, rcount * es);
  snprintf(w, sizeof w, "%s: reduce_scatter", desc);
  if (call_ok(tutti_reduce_scatter(in, out, rcount, dt, op, comm), w)) {
    red_expect(&c, (size_t)rank * rcount, rcount, exp);
    check_elems(w, dt, out, exp, rcount);
  }

  red_fill(&c, rank, 0, count, in);
  memset(out, RECV_BYTE, count * es);
  snprintf(w, sizeof w, "%s: reduce root %d", desc, nranks - 1);
  if (call_ok(tutti_reduce(in, out, count, dt, op, nranks - 1, comm), w)) {
    if (rank == nranks - 1)
      red_expect(&c, 0, count, exp);
    else
      memset(exp, RECV_BYTE, count * es);
    check_elems(w, dt, out, exp, count);
  }

  c.seed = case_seed(13, dt, 1, 0);
  test_rsv(&c, op, 0, 3, 0);

  snprintf(w, sizeof w, "%s: tutti_op_destroy", desc);
  if (call_ok(tutti_op_destroy(op, comm), w)) pass();
  pattern_fill();
  snprintf(w, sizeof w, "%s: allreduce with the destroyed op", desc);
  expect_invalid(tutti_allreduce(pat_send, pat_recv, 4, dt, op, comm), w);
  snprintf(w, sizeof w, "%s: second tutti_op_destroy", desc);
  expect_invalid(tutti_op_destroy(op, comm), w);
  free(in);
  free(out);
  free(exp);
}

static void section_premul(void) {
  int32_t s_i32 = 3;
  float s_f32 = 0.5f;
  double s_f64 = 0.5;
  uint16_t s_bf16 = ref_f32_to_bf16(2.0f), s_f16 = ref_f32_to_f16(0.25f);
  int8_t s_i8 = 100; /* 100 * 4 * ranks wraps in int8 */
  uint64_t s_u64 = 0x9E3779B97F4A7C15ull;
  uint8_t s_e5m2 = fp8_encode(2.0, 1);
  test_premul(TUTTI_INT32, &s_i32, 3, 0);
  test_premul(TUTTI_FLOAT32, &s_f32, 0, 0.5);
  test_premul(TUTTI_FLOAT64, &s_f64, 0, 0.5);
  test_premul(TUTTI_BFLOAT16, &s_bf16, 0, 2.0);
  test_premul(TUTTI_FLOAT16, &s_f16, 0, 0.25);
  test_premul(TUTTI_INT8, &s_i8, (uint64_t)(int64_t)100, 0);
  test_premul(TUTTI_UINT64, &s_u64, s_u64, 0);
  test_premul(TUTTI_FLOAT8_E5M2, &s_e5m2, 0, 2.0);
  still_works("premul cases");

  /* An op of another dtype. */
  tutti_op_t op;
  if (call_ok(tutti_op_create_premul_sum(&op, &s_i32, TUTTI_INT32, comm), "create int32 op")) {
    pattern_fill();
    expect_invalid(tutti_allreduce(pat_send, pat_recv, 4, TUTTI_FLOAT32, op, comm),
                   "allreduce float32 with a premul op created for int32");
    expect_invalid(tutti_reduce_scatter(pat_send, pat_recv, 1, TUTTI_UINT32, op, comm),
                   "reduce_scatter uint32 with a premul op created for int32");
    tutti_request_t req = NULL;
    expect_invalid(tutti_iallreduce(pat_send, pat_recv, 4, TUTTI_INT64, op, comm, &req),
                   "iallreduce int64 with a premul op created for int32");
    if (req) tutti_request_free(req);
    call_ok(tutti_op_destroy(op, comm), "destroy int32 op");
  }
  /* Several ops alive at once, each with its own scalar. */
  tutti_op_t ops[4];
  int32_t scal[4] = {1, 2, -3, 5};
  int made = 0;
  for (int k = 0; k < 4; k++)
    if (call_ok(tutti_op_create_premul_sum(&ops[k], &scal[k], TUTTI_INT32, comm),
                "create one of 4 live ops"))
      made++;
  if (made == 4) {
    for (int k = 3; k >= 0; k--) {
      int32_t in[3] = {rank + 1, -rank, 7}, out[3], want[3] = {0, 0, 0};
      for (int r = 0; r < nranks; r++) {
        want[0] += scal[k] * (r + 1);
        want[1] += scal[k] * -r;
        want[2] += scal[k] * 7;
      }
      char w[96];
      snprintf(w, sizeof w, "allreduce with live op %d of 4 (scalar %d)", k, scal[k]);
      if (call_ok(tutti_allreduce(in, out, 3, TUTTI_INT32, ops[k], comm), w))
        check_elems(w, TUTTI_INT32, (unsigned char *)out, (unsigned char *)want, 3);
    }
    for (int k = 0; k < 4; k++) call_ok(tutti_op_destroy(ops[k], comm), "destroy a live op");
  }
  /* Premul ops inside one group, next to a plain SUM of the same dtype: consecutive
   * all-reduces of one dtype and op travel fused, and ops with different scalars (or SUM) must
   * not be combined as if they were one. */
  {
    tutti_op_t half, twice;
    float s_half = 0.5f, s_twice = 2.0f;
    int okh = call_ok(tutti_op_create_premul_sum(&half, &s_half, TUTTI_FLOAT32, comm), "create 0.5");
    int okt = call_ok(tutti_op_create_premul_sum(&twice, &s_twice, TUTTI_FLOAT32, comm), "create 2");
    if (okh && okt) {
      const tutti_op_t seq[6] = {half, half, TUTTI_SUM, twice, half, TUTTI_SUM};
      const float scale[6] = {0.5f, 0.5f, 1.0f, 2.0f, 0.5f, 1.0f};
      float in[6][5], out[6][5], want[6][5];
      for (int k = 0; k < 6; k++)
        for (int i = 0; i < 5; i++) {
          in[k][i] = (float)(rank * 3 + k - i);
          out[k][i] = -7.0f;
          double acc = 0;
          for (int r = 0; r < nranks; r++) acc += (double)scale[k] * (double)(r * 3 + k - i);
          want[k][i] = (float)acc;
        }
      int ok = call_ok(tutti_group_start(), "tutti_group_start (premul fusion)");
      for (int k = 0; k < 6; k++)
        ok &= call_ok(tutti_allreduce(in[k], out[k], 5, TUTTI_FLOAT32, seq[k], comm),
                      "grouped premul/SUM allreduce");
      ok &= call_ok(tutti_group_end(), "tutti_group_end (premul fusion)");
      if (ok)
        for (int k = 0; k < 6; k++) {
          char w[96];
          snprintf(w, sizeof w, "grouped allreduce %d of 6 (scalar %g)", k, (double)scale[k]);
          check_elems(w, TUTTI_FLOAT32, (unsigned char *)out[k], (unsigned char *)want[k], 5);
        }
    }
    if (okh) call_ok(tutti_op_destroy(half, comm), "destroy 0.5");
    if (okt) call_ok(tutti_op_destroy(twice, comm), "destroy 2");
  }
  /* An op of another communicator (here no op is alive on comm, so its value names none). */
  tutti_comm_t dup = NULL;
  if (call_ok(tutti_comm_dup(comm, &dup), "tutti_comm_dup")) {
    tutti_op_t dop;
    if (call_ok(tutti_op_create_premul_sum(&dop, &s_f32, TUTTI_FLOAT32, dup), "create on dup")) {
      pattern_fill();
      expect_invalid(tutti_allreduce(pat_send, pat_recv, 4, TUTTI_FLOAT32, dop, comm),
                     "allreduce on comm with an op created on another communicator");
      float in[2] = {1.0f, (float)rank}, out[2];
      if (call_ok(tutti_allreduce(in, out, 2, TUTTI_FLOAT32, dop, dup), "allreduce on dup")) {
        float want[2] = {0.5f * (float)nranks, 0.25f * (float)nranks * (float)(nranks - 1)};
        check_elems("premul allreduce on the dup", TUTTI_FLOAT32, (unsigned char *)out,
                    (unsigned char *)want, 2);
      }
      call_ok(tutti_op_destroy(dop, dup), "destroy op on dup");
    }
    call_ok(tutti_comm_destroy(dup), "tutti_comm_destroy(dup)");
  }
  /* Invalid creations. */
  pattern_fill();
  expect_invalid(tutti_op_create_premul_sum(NULL, &s_i32, TUTTI_INT32, comm),
                 "tutti_op_create_premul_sum(op NULL)");
  tutti_op_t bad;
  expect_invalid(tutti_op_create_premul_sum(&bad, NULL, TUTTI_INT32, comm),
                 "tutti_op_create_premul_sum(scalar NULL)");
  expect_invalid(tutti_op_create_premul_sum(&bad, &s_i32, (tutti_dtype_t)99, comm),
                 "tutti_op_create_premul_sum(dtype 99)");
  expect_invalid(tutti_op_create_premul_sum(&bad, &s_i32, TUTTI_INT32, NULL),
                 "tutti_op_create_premul_sum(comm NULL)");
  expect_invalid(tutti_op_destroy(TUTTI_SUM, comm), "tutti_op_destroy(TUTTI_SUM)");
  expect_invalid(tutti_op_destroy((tutti_op_t)(TUTTI_NUM_OPS + 1000), comm),
                 "tutti_op_destroy(an op never created)");
  expect_invalid(tutti_allreduce(pat_send, pat_recv, 4, TUTTI_INT32,
                                 (tutti_op_t)(TUTTI_NUM_OPS + 1000), comm),
                 "tutti_allreduce with an op never created");
  still_works("invalid premul calls");
}

/* ---- Invalid arguments of the new calls -------------------------------------------------- */

static void section_invalid(void) {
  size_t cnt[MAX_RANKS], dsp[MAX_RANKS];
  for (int i = 0; i < nranks; i++) {
    cnt[i] = 2;
    dsp[i] = (size_t)i * 2;
  }
  const tutti_dtype_t I32 = TUTTI_INT32, BADT = (tutti_dtype_t)99;
  const int me = rank; /* root-only checks name this rank root: the call is invalid everywhere */
  unsigned char *S = pat_send, *R = pat_recv;
  pattern_fill();

  /* allgatherv */
  EXPECT_INVALID(tutti_allgatherv(S, 2, R, NULL, dsp, I32, comm));
  EXPECT_INVALID(tutti_allgatherv(S, 2, R, cnt, NULL, I32, comm));
  EXPECT_INVALID(tutti_allgatherv(S, 3, R, cnt, dsp, I32, comm)); /* sendcount != recvcounts[rank] */
  EXPECT_INVALID(tutti_allgatherv(S, 1, R, cnt, dsp, I32, comm));
  EXPECT_INVALID(tutti_allgatherv(NULL, 2, R, cnt, dsp, I32, comm));
  EXPECT_INVALID(tutti_allgatherv(S, 2, NULL, cnt, dsp, I32, comm));
  EXPECT_INVALID(tutti_allgatherv(S, 2, R, cnt, dsp, BADT, comm));
  EXPECT_INVALID(tutti_allgatherv(S, 2, R, cnt, dsp, I32, NULL));
  still_works("invalid allgatherv");

  /* reduce_scatterv */
  EXPECT_INVALID(tutti_reduce_scatterv(S, R, NULL, I32, TUTTI_SUM, comm));
  EXPECT_INVALID(tutti_reduce_scatterv(NULL, R, cnt, I32, TUTTI_SUM, comm));
  EXPECT_INVALID(tutti_reduce_scatterv(S, NULL, cnt, I32, TUTTI_SUM, comm));
  EXPECT_INVALID(tutti_reduce_scatterv(S, R, cnt, BADT, TUTTI_SUM, comm));
  EXPECT_INVALID(tutti_reduce_scatterv(S, R, cnt, I32, (tutti_op_t)(TUTTI_NUM_OPS + 77), comm));
  EXPECT_INVALID(tutti_reduce_scatterv(S, R, cnt, TUTTI_FLOAT32, TUTTI_BOR, comm));
  EXPECT_INVALID(tutti_reduce_scatterv(S, R, cnt, I32, TUTTI_SUM, NULL));
  still_works("invalid reduce_scatterv");

  /* gatherv: bad roots everywhere; root-only arrays invalid on the root (= this rank) */
  EXPECT_INVALID(tutti_gatherv(S, 2, R, cnt, dsp, I32, -1, comm));
  EXPECT_INVALID(tutti_gatherv(S, 2, R, cnt, dsp, I32, nranks, comm));
  EXPECT_INVALID(tutti_gatherv(S, 2, R, NULL, dsp, I32, me, comm));
  EXPECT_INVALID(tutti_gatherv(S, 2, R, cnt, NULL, I32, me, comm));
  EXPECT_INVALID(tutti_gatherv(S, 2, NULL, cnt, dsp, I32, me, comm));
  EXPECT_INVALID(tutti_gatherv(S, 3, R, cnt, dsp, I32, me, comm)); /* != recvcounts[root] */
  EXPECT_INVALID(tutti_gatherv(NULL, 2, R, cnt, dsp, I32, me, comm));
  EXPECT_INVALID(tutti_gatherv(S, 2, R, cnt, dsp, BADT, me, comm));
  EXPECT_INVALID(tutti_gatherv(S, 2, R, cnt, dsp, I32, 0, NULL));
  still_works("invalid gatherv");

  /* scatterv */
  EXPECT_INVALID(tutti_scatterv(S, cnt, dsp, R, 2, I32, -1, comm));
  EXPECT_INVALID(tutti_scatterv(S, cnt, dsp, R, 2, I32, nranks, comm));
  EXPECT_INVALID(tutti_scatterv(S, NULL, dsp, R, 2, I32, me, comm));
  EXPECT_INVALID(tutti_scatterv(S, cnt, NULL, R, 2, I32, me, comm));
  EXPECT_INVALID(tutti_scatterv(NULL, cnt, dsp, R, 2, I32, me, comm));
  EXPECT_INVALID(tutti_scatterv(S, cnt, dsp, R, 3, I32, me, comm)); /* != sendcounts[root] */
  EXPECT_INVALID(tutti_scatterv(S, cnt, dsp, NULL, 2, I32, me, comm));
  EXPECT_INVALID(tutti_scatterv(S, cnt, dsp, R, 2, BADT, me, comm));
  EXPECT_INVALID(tutti_scatterv(S, cnt, dsp, R, 2, I32, 0, NULL));
  still_works("invalid scatterv");

  /* alltoallv */
  EXPECT_INVALID(tutti_alltoallv(S, NULL, dsp, R, cnt, dsp, I32, comm));
  EXPECT_INVALID(tutti_alltoallv(S, cnt, NULL, R, cnt, dsp, I32, comm));
  EXPECT_INVALID(tutti_alltoallv(S, cnt, dsp, R, NULL, dsp, I32, comm));
  EXPECT_INVALID(tutti_alltoallv(S, cnt, dsp, R, cnt, NULL, I32, comm));
  EXPECT_INVALID(tutti_alltoallv(NULL, cnt, dsp, R, cnt, dsp, I32, comm));
  EXPECT_INVALID(tutti_alltoallv(S, cnt, dsp, NULL, cnt, dsp, I32, comm));
  EXPECT_INVALID(tutti_alltoallv(S, cnt, dsp, R, cnt, dsp, BADT, comm));
  EXPECT_INVALID(tutti_alltoallv(S, cnt, dsp, R, cnt, dsp, I32, NULL));
  still_works("invalid alltoallv");

  /* equal-count forms */
  EXPECT_INVALID(tutti_alltoall(NULL, R, 2, I32, comm));
  EXPECT_INVALID(tutti_alltoall(S, NULL, 2, I32, comm));
  EXPECT_INVALID(tutti_alltoall(S, R, 2, BADT, comm));
  EXPECT_INVALID(tutti_alltoall(S, R, 2, I32, NULL));
  EXPECT_INVALID(tutti_gather(S, R, 2, I32, -1, comm));
  EXPECT_INVALID(tutti_gather(S, R, 2, I32, nranks, comm));
  EXPECT_INVALID(tutti_gather(NULL, R, 2, I32, me, comm));
  EXPECT_INVALID(tutti_gather(S, NULL, 2, I32, me, comm));
  EXPECT_INVALID(tutti_gather(S, R, 2, BADT, me, comm));
  EXPECT_INVALID(tutti_scatter(S, R, 2, I32, -1, comm));
  EXPECT_INVALID(tutti_scatter(S, R, 2, I32, nranks, comm));
  EXPECT_INVALID(tutti_scatter(NULL, R, 2, I32, me, comm));
  EXPECT_INVALID(tutti_scatter(S, NULL, 2, I32, me, comm));
  EXPECT_INVALID(tutti_scatter(S, R, 2, BADT, me, comm));
  still_works("invalid alltoall/gather/scatter");

  /* send / recv */
  EXPECT_INVALID(tutti_send(S, 2, I32, -1, comm));
  EXPECT_INVALID(tutti_send(S, 2, I32, nranks, comm));
  EXPECT_INVALID(tutti_send(S, 2, I32, me, comm));
  EXPECT_INVALID(tutti_recv(R, 2, I32, -1, comm));
  EXPECT_INVALID(tutti_recv(R, 2, I32, nranks, comm));
  EXPECT_INVALID(tutti_recv(R, 2, I32, me, comm));
  if (nranks >= 2) {
    int peer = (rank + 1) % nranks;
    EXPECT_INVALID(tutti_send(NULL, 2, I32, peer, comm));
    EXPECT_INVALID(tutti_recv(NULL, 2, I32, peer, comm));
    EXPECT_INVALID(tutti_send(S, 2, BADT, peer, comm));
    EXPECT_INVALID(tutti_recv(R, 2, BADT, peer, comm));
    EXPECT_INVALID(tutti_send(S, 2, I32, peer, NULL));
    EXPECT_INVALID(tutti_recv(R, 2, I32, peer, NULL));
  }
  /* The same refused inside a group: refused at the call, and the group is still usable. */
  call_ok(tutti_group_start(), "tutti_group_start");
  EXPECT_INVALID(tutti_send(S, 2, I32, me, comm));
  EXPECT_INVALID(tutti_recv(R, 2, I32, nranks, comm));
  EXPECT_INVALID(tutti_allgatherv(S, 3, R, cnt, dsp, I32, comm));
  /* Whether group_end repeats the refusal (as ncclGroupEnd does) or reports an empty group as
   * done is not settled by tutti.h: either is accepted, but nothing else. */
  tutti_result_t rc = tutti_group_end();
  if (rc != TUTTI_SUCCESS && rc != TUTTI_ERR_INVALID_ARGUMENT)
    fail("group_end of a group whose every call was refused returned %s: %s",
         tutti_result_string(rc), last_error());
  else
    pass();
  still_works("invalid send/recv");
}

/* ---- Main -------------------------------------------------------------------------------- */

typedef struct {
  const char *name;
  void (*fn)(void);
} section_t;

static const section_t sections[] = {
    {"equal", section_equal},           {"allgatherv", section_allgatherv},
    {"reduce_scatterv", section_reduce_scatterv}, {"gatherv", section_gatherv},
    {"scatterv", section_scatterv},     {"alltoallv", section_alltoallv},
    {"p2p", section_p2p},               {"fp8", section_fp8},
    {"newtypes", section_newtypes},
    {"bitwise", section_bitwise},       {"premul", section_premul},
    {"invalid", section_invalid}};
#define NUM_SECTIONS (sizeof sections / sizeof sections[0])

int main(int argc, char **argv) {
  const char *only = NULL;
  const char *q = getenv("TUTTI_TEST_QUICK");
  quick = q && *q && strcmp(q, "0") != 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0)
      quick = 1;
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--quick] [--only section,...]\n", argv[0]);
      return 2;
    }
  }
  check_init("ops_check", 15, 5);
  const char *transport;
  int status = check_start(&comm, &rank, &nranks, MAX_RANKS, &transport);
  if (status) return status;

  for (size_t s = 0; s < NUM_SECTIONS; s++) {
    if (!want_section(only, sections[s].name)) continue;
    begin_section(sections[s].name);
    sections[s].fn();
    end_section();
  }

  return check_finish(transport, quick ? ", quick" : "");
}
