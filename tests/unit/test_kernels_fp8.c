/*
 * OCP 8-bit floats (E4M3, E5M2): conversions, reduction, avg_finish and premul against a
 * reference built another way. Each format's 256 codes are decoded from the spec's formula
 * into exact doubles; a float is encoded by searching those values for the nearest one, ties
 * to the even code, then applying the format's overflow rule (E4M3 saturates, E5M2 goes to
 * infinity from the midpoint past its largest value up). No bit tricks are shared with fp8.h.
 * The kernel tests run twice: with the x86 (AVX2) kernels where the CPU has them, and with
 * the portable ones.
 */
#include <fenv.h>
#include <float.h>
#include <math.h>

#include "harness.h"
#include "kernels/half.h" /* tutti__simd_disabled */
#include "kernels/kernels.h"

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* ---- The reference ---- */

typedef struct {
  tutti_dtype_t dtype;
  int mbits, bias;
  int ieee;          /* 1: E5M2 (inf and NaNs at the top exponent), 0: E4M3 (one NaN) */
  uint8_t max_code;  /* the largest finite magnitude */
  float (*to)(uint8_t);
  uint8_t (*from)(float);
} fmt8;

static const fmt8 E4M3 = {TUTTI_FLOAT8_E4M3, 3, 7, 0, 0x7e, tutti__fp8e4m3_to_float,
                          tutti__float_to_fp8e4m3};
static const fmt8 E5M2 = {TUTTI_FLOAT8_E5M2, 2, 15, 1, 0x7b, tutti__fp8e5m2_to_float,
                          tutti__float_to_fp8e5m2};

static int is_nan8(uint8_t c, const fmt8 *f) {
  return f->ieee ? (c & 0x7f) > 0x7c : (c & 0x7f) == 0x7f;
}

/* The spec's formula: (-1)^s * 2^(e - bias) * 1.m, or 2^(1 - bias) * 0.m when e == 0. */
static double ref_decode(uint8_t c, const fmt8 *f) {
  int e = (c & 0x7f) >> f->mbits, m = c & ((1 << f->mbits) - 1);
  double s = (c & 0x80) ? -1.0 : 1.0;
  if (is_nan8(c, f)) return s * NAN;
  if (f->ieee && e == (1 << (7 - f->mbits)) - 1) return s * INFINITY;
  if (e == 0) return s * ldexp(m, 1 - f->bias - f->mbits);
  return s * ldexp(m + (1 << f->mbits), e - f->bias - f->mbits);
}

/* Magnitude of code c for c in 0 .. max_code + 1; max_code + 1 is where the next binade
 * would put it (480 for E4M3, 65536 for E5M2), the value rounding to nearest measures the
 * overflow against. */
static double ref_mag(int c, const fmt8 *f) {
  if (c <= f->max_code) return ref_decode((uint8_t)c, f);
  return ldexp((c & ((1 << f->mbits) - 1)) + (1 << f->mbits),
               (c >> f->mbits) - f->bias - f->mbits);
}

/* Nearest code to v, ties to even, then E4M3 saturates and E5M2 overflows. For NaN: E4M3's
 * NaN, or E5M2's quiet NaN 0x7e (callers accept any E5M2 NaN of the right sign). */
static uint8_t ref_encode(double v, const fmt8 *f) {
  uint8_t sign = signbit(v) ? 0x80 : 0;
  if (isnan(v)) return (uint8_t)(sign | (f->ieee ? 0x7e : 0x7f));
  double a = fabs(v);
  int top = f->max_code + 1, lo = 0, hi = top; /* largest c with ref_mag(c) <= a */
  if (a >= ref_mag(top, f)) {
    lo = top;
  } else {
    while (hi - lo > 1) {
      int mid = (lo + hi) / 2;
      if (ref_mag(mid, f) <= a) lo = mid;
      else hi = mid;
    }
    double dlo = a - ref_mag(lo, f), dhi = ref_mag(lo + 1, f) - a;
    if (dhi < dlo || (dhi == dlo && (lo & 1))) lo++;
  }
  if (lo > f->max_code) lo = f->ieee ? 0x7c : f->max_code; /* infinity, or saturate */
  return (uint8_t)(sign | lo);
}

/* got is what a conversion gave for v: the reference's code, or for a NaN any NaN code of
 * v's sign (E5M2 has several). With any_nan_sign, which arithmetic needs (the sign of a NaN
 * that + or * produces is unspecified), any NaN code at all. */
static int encodes_as(uint8_t got, double v, const fmt8 *f, int any_nan_sign) {
  uint8_t want = ref_encode(v, f);
  if (isnan(v))
    return is_nan8(got, f) && (any_nan_sign || (got & 0x80) == (want & 0x80));
  return got == want;
}
static int encodes_as_reference(uint8_t got, double v, const fmt8 *f) {
  return encodes_as(got, v, f, 0);
}

/* ---- Conversions ---- */

/* Every code decodes to the formula's value (sign of zero included) and encodes back. */
static void roundtrip_all(const fmt8 *f) {
  for (int i = 0; i < 256; i++) {
    uint8_t c = (uint8_t)i;
    float x = f->to(c);
    if (is_nan8(c, f)) {
      ASSERT(isnan(x) && !!signbit(x) == !!(c & 0x80));
      uint8_t back = f->from(x);
      ASSERT(is_nan8(back, f) && (back & 0x80) == (c & 0x80));
      if (!f->ieee) ASSERT_EQ(back, c);
      continue;
    }
    double r = ref_decode(c, f);
    if ((double)x != r || !!signbit(x) != !!signbit(r))
      harness_fail(__FILE__, __LINE__, "%#x -> %a, want %a", c, (double)x, r);
    ASSERT_EQ(f->from(x), c);
  }
}

TEST(e4m3_roundtrip_all_256) { roundtrip_all(&E4M3); }
TEST(e5m2_roundtrip_all_256) { roundtrip_all(&E5M2); }

static void check_encode(float x, const fmt8 *f) {
  uint8_t got = f->from(x);
  if (!encodes_as_reference(got, x, f))
    harness_fail(__FILE__, __LINE__, "%s: %a -> %#x, want %#x", tutti__dtype_name(f->dtype),
                 (double)x, got, ref_encode(x, f));
}

/* Floats spread over every exponent, densely across the format's range; and around every
 * midpoint between neighbouring codes (up to the one past the largest value): the tie goes
 * to the even code, the float neighbours of the tie to the nearer one. */
static void encode_matches_reference(const fmt8 *f) {
  for (uint64_t u = 0; u < (1ull << 32); u += 997) check_encode(bitsf((uint32_t)u), f);
  uint32_t lo = fbits((float)ldexp(1, -f->bias - f->mbits - 2));
  uint32_t hi = fbits((float)ldexp(1, f->bias + 3));
  for (uint32_t u = lo; u <= hi; u += 61) check_encode(bitsf(u), f), check_encode(-bitsf(u), f);
  for (int c = 0; c <= f->max_code; c++) {
    double mid = (ref_mag(c, f) + ref_mag(c + 1, f)) / 2;
    float m = (float)mid;
    ASSERT((double)m == mid);
    check_encode(m, f), check_encode(-m, f);
    check_encode(nextafterf(m, 0), f), check_encode(nextafterf(m, INFINITY), f);
    check_encode(-nextafterf(m, 0), f), check_encode(-nextafterf(m, INFINITY), f);
    /* And what the reference says, spelled out, so a wrong reference cannot hide. */
    int even = (c & 1) ? c + 1 : c;
    if (c < f->max_code) {
      ASSERT_EQ(f->from(m), even);
      ASSERT_EQ(f->from(nextafterf(m, 0)), c);
      ASSERT_EQ(f->from(nextafterf(m, INFINITY)), c + 1);
    }
  }
}

TEST(e4m3_encode_matches_reference) { encode_matches_reference(&E4M3); }
TEST(e5m2_encode_matches_reference) { encode_matches_reference(&E5M2); }

TEST(e4m3_cases) {
  uint8_t (*e)(float) = tutti__float_to_fp8e4m3;
  float (*d)(uint8_t) = tutti__fp8e4m3_to_float;
  ASSERT(d(0x7e) == 448 && d(0xfe) == -448 && d(0x01) == 0x1p-9f && d(0x08) == 0x1p-6f);
  ASSERT(d(0x07) == 0x7p-9f && d(0x38) == 1 && d(0x3f) == 1.875f);
  ASSERT(d(0x80) == 0 && signbit(d(0x80)));
  ASSERT(isnan(d(0x7f)) && !signbit(d(0x7f)) && isnan(d(0xff)) && signbit(d(0xff)));
  ASSERT_EQ(fbits(d(0x7f)) & 0xffc00000, 0x7fc00000); /* quiet */
  ASSERT_EQ(e(448), 0x7e);
  ASSERT_EQ(e(463.99f), 0x7e);
  ASSERT_EQ(e(464), 0x7e); /* the midpoint to 480: even is 448 anyway */
  ASSERT_EQ(e(470), 0x7e); /* nearest would be 480 = the NaN code: saturates */
  ASSERT_EQ(e(1e9f), 0x7e);
  ASSERT_EQ(e(FLT_MAX), 0x7e);
  ASSERT_EQ(e(INFINITY), 0x7e);
  ASSERT_EQ(e(-INFINITY), 0xfe);
  ASSERT_EQ(e(-1e9f), 0xfe);
  ASSERT_EQ(e(0x1p-9f), 0x01);     /* smallest subnormal */
  ASSERT_EQ(e(0x1p-10f), 0x00);    /* tie to even zero */
  ASSERT_EQ(e(0x1.000002p-10f), 0x01);
  ASSERT_EQ(e(-0x1p-10f), 0x80);   /* underflow keeps the sign */
  ASSERT_EQ(e(0x3p-10f), 0x02);    /* 1.5 units: tie up to even 2 */
  ASSERT_EQ(e(0x5p-10f), 0x02);    /* 2.5 units: tie down to even 2 */
  ASSERT_EQ(e(0xfp-10f), 0x08);    /* 7.5 units: ties up to the smallest normal */
  ASSERT_EQ(e(0x1p-6f), 0x08);
  ASSERT_EQ(e(1.0625f), 0x38);     /* tie, down to even */
  ASSERT_EQ(e(1.1875f), 0x3a);     /* tie, up to even */
  ASSERT_EQ(e(1.0625001f), 0x39);
  ASSERT_EQ(e(FLT_TRUE_MIN), 0x00);
  ASSERT_EQ(e(-0.0f), 0x80);
  ASSERT_EQ(e(NAN), 0x7f);
  ASSERT_EQ(e(-NAN), 0xff);
  ASSERT_EQ(e(bitsf(0x7f800001)), 0x7f); /* signalling NaN: NaN, not 448 */
  ASSERT_EQ(e(bitsf(0xff800001)), 0xff);
}

TEST(e5m2_cases) {
  uint8_t (*e)(float) = tutti__float_to_fp8e5m2;
  float (*d)(uint8_t) = tutti__fp8e5m2_to_float;
  ASSERT(d(0x7b) == 57344 && d(0x01) == 0x1p-16f && d(0x04) == 0x1p-14f && d(0x3c) == 1);
  ASSERT(d(0x7c) == INFINITY && d(0xfc) == -INFINITY);
  for (int c = 0x7d; c <= 0x7f; c++) { /* NaNs, quiet as floats, signs kept */
    ASSERT(isnan(d((uint8_t)c)) && !signbit(d((uint8_t)c)) && signbit(d((uint8_t)(c | 0x80))));
    ASSERT_EQ(fbits(d((uint8_t)c)) & 0xffc00000, 0x7fc00000);
  }
  ASSERT_EQ(e(57344), 0x7b);
  ASSERT_EQ(e(61439.996f), 0x7b);
  ASSERT_EQ(e(61440), 0x7c); /* the midpoint ties to the even side: infinity */
  ASSERT_EQ(e(-61440), 0xfc);
  ASSERT_EQ(e(1e9f), 0x7c);
  ASSERT_EQ(e(INFINITY), 0x7c);
  ASSERT_EQ(e(-INFINITY), 0xfc);
  ASSERT_EQ(e(0x1p-16f), 0x01);  /* smallest subnormal */
  ASSERT_EQ(e(0x1p-17f), 0x00);  /* tie to even zero */
  ASSERT_EQ(e(-0x1p-17f), 0x80);
  ASSERT_EQ(e(0x3p-17f), 0x02);
  ASSERT_EQ(e(0x7p-17f), 0x04);  /* 3.5 units: ties up to the smallest normal */
  ASSERT_EQ(e(1.125f), 0x3c);    /* tie, down to even */
  ASSERT_EQ(e(1.375f), 0x3e);    /* tie, up to even */
  ASSERT_EQ(e(-0.0f), 0x80);
  ASSERT_EQ(e(FLT_TRUE_MIN), 0x00);
  ASSERT_EQ(e(bitsf(0x7f800001)), 0x7e); /* signalling NaN: quiet NaN, not infinity */
  ASSERT_EQ(e(bitsf(0x7fa00000)), 0x7f); /* the payload's top bit survives */
  ASSERT_EQ(e(-NAN) & 0xfe, 0xfe);
  ASSERT(is_nan8(e(NAN), &E5M2));
}

/* The conversions round by themselves, so the FPU's rounding mode changes nothing. */
TEST(fp8_conversions_ignore_rounding_mode) {
  static const int modes[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
  static uint8_t want[2][1 << 16];
  static uint32_t want_dec[2][256];
  const fmt8 *fs[2] = {&E4M3, &E5M2};
  for (int k = 0; k < 2; k++) {
    for (uint32_t i = 0; i < (1u << 16); i++) /* biased toward the formats' range */
      want[k][i] = fs[k]->from(bitsf(0x36000000u + i * 131u + (i & 1 ? 0x80000000u : 0)));
    for (int c = 0; c < 256; c++) want_dec[k][c] = fbits(fs[k]->to((uint8_t)c));
  }
  for (int m = 0; m < 3; m++) {
    ASSERT_EQ(fesetround(modes[m]), 0);
    for (int k = 0; k < 2; k++) {
      for (uint32_t i = 0; i < (1u << 16); i++)
        ASSERT_EQ(fs[k]->from(bitsf(0x36000000u + i * 131u + (i & 1 ? 0x80000000u : 0))),
                  want[k][i]);
      for (int c = 0; c < 256; c++) ASSERT_EQ(fbits(fs[k]->to((uint8_t)c)), want_dec[k][c]);
    }
  }
  fesetround(FE_TONEAREST);
}

/* ---- Kernels ---- */

static double ref_minmax(double x, double y, int max) {
  if (isnan(x) || isnan(y)) return NAN;
  if (x == y && signbit(x) != signbit(y)) return max ? 0.0 : -0.0;
  return (x > y) == !!max ? x : y;
}

/* The kernels' contract: the exact result (every sum and product of two fp8 values is exact
 * in double) rounded to float32, then once to fp8. */
static double ref_op(double x, double y, int op) {
  switch (op) {
  case TUTTI_PROD: return (float)(x * y);
  case TUTTI_MIN: return ref_minmax(x, y, 0);
  case TUTTI_MAX: return ref_minmax(x, y, 1);
  default: return (float)(x + y); /* SUM, AVG */
  }
}

/* One element: got for a (op) b. A NaN result must be a NaN code; MIN/MAX with one NaN
 * operand must return that operand (E5M2: quieted), sign and all. */
static void check_elem(uint8_t got, uint8_t a, uint8_t b, int op, const fmt8 *f) {
  double want = ref_op(ref_decode(a, f), ref_decode(b, f), op);
  int ok = encodes_as(got, want, f, 1);
  if (ok && (op == TUTTI_MIN || op == TUTTI_MAX) && is_nan8(a, f) != is_nan8(b, f)) {
    uint8_t nan = is_nan8(a, f) ? a : b;
    ok = got == (f->ieee ? (nan | 0x02) : nan);
  }
  if (!ok)
    harness_fail(__FILE__, __LINE__, "%s %s: %#x, %#x -> %#x, want %#x",
                 tutti__dtype_name(f->dtype), tutti__op_name(op), a, b, got, ref_encode(want, f));
}

/* Every pair of codes, for every op; then the aliased forms, which must agree bit for bit. */
static void reduce_all_pairs(const fmt8 *f) {
  size_t n = 65536 + 13; /* and a tail past the blocks */
  uint8_t *a = malloc(n), *b = malloc(n), *out = malloc(n + 1), *tmp = malloc(n);
  for (size_t i = 0; i < n; i++) a[i] = (uint8_t)i, b[i] = (uint8_t)(i >> 8 ^ i * 7);
  for (int op = TUTTI_SUM; op < TUTTI_NUM_OPS; op++) {
    memset(out, 0xa5, n + 1);
    tutti__reduce(out, a, b, n, f->dtype, (tutti_op_t)op);
    ASSERT_EQ(out[n], 0xa5);
    if (!tutti__op_supports(op, (int)f->dtype)) { /* bitwise on a float: nothing written */
      for (size_t i = 0; i < n; i++) ASSERT_EQ(out[i], 0xa5);
      continue;
    }
    for (size_t i = 0; i < n; i++) check_elem(out[i], a[i], b[i], op, f);
    memcpy(tmp, a, n), tutti__reduce(tmp, tmp, b, n, f->dtype, (tutti_op_t)op);
    ASSERT_MEM_EQ(tmp, out, n);
    memcpy(tmp, b, n), tutti__reduce(tmp, a, tmp, n, f->dtype, (tutti_op_t)op);
    ASSERT_MEM_EQ(tmp, out, n);
    memcpy(tmp, a, n), tutti__reduce(tmp, tmp, tmp, n, f->dtype, (tutti_op_t)op);
    for (size_t i = 0; i < n; i++) check_elem(tmp[i], a[i], a[i], op, f);
  }
  free(a), free(b), free(out), free(tmp);
}

/* Runs check(f) with the default kernels, then with the portable ones. */
static void both_kernels(void (*check)(const fmt8 *), const fmt8 *f) {
  for (int portable = 0; portable < 2; portable++) {
    tutti__simd_disabled = portable;
    check(f);
  }
  tutti__simd_disabled = 0;
}

TEST(e4m3_reduce_all_pairs) { both_kernels(reduce_all_pairs, &E4M3); }
TEST(e5m2_reduce_all_pairs) { both_kernels(reduce_all_pairs, &E5M2); }

/* Short buffers, allocated to size so ASan sees any overread: every tail length around the
 * 64-element blocks. */
static void reduce_counts(const fmt8 *f) {
  uint64_t rng = 0x9e3779b97f4a7c15u;
  for (size_t n = 0; n <= 200; n++) {
    uint8_t *a = malloc(n + 1), *b = malloc(n + 1), *out = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
      rng = rng * 6364136223846793005u + 1442695040888963407u;
      a[i] = (uint8_t)(rng >> 56), b[i] = (uint8_t)(rng >> 48);
    }
    for (int op = TUTTI_SUM; op <= TUTTI_AVG; op++) {
      out[n] = 0x5a;
      tutti__reduce(out, a, b, n, f->dtype, (tutti_op_t)op);
      ASSERT_EQ(out[n], 0x5a);
      for (size_t i = 0; i < n; i++) check_elem(out[i], a[i], b[i], op, f);
    }
    free(a), free(b), free(out);
  }
}

TEST(e4m3_reduce_counts) { both_kernels(reduce_counts, &E4M3); }
TEST(e5m2_reduce_counts) { both_kernels(reduce_counts, &E5M2); }

TEST(fp8_reduce_cases) {
  struct { const fmt8 *f; int op; float x, y, want; } cases[] = {
      {&E4M3, TUTTI_SUM, 448, 448, 448},          /* saturates */
      {&E4M3, TUTTI_SUM, -448, -32, -448},
      {&E4M3, TUTTI_PROD, 448, 2, 448},
      {&E4M3, TUTTI_SUM, 1, 0.0625f, 1},          /* tie to even */
      {&E4M3, TUTTI_SUM, 0x1p-9f, 0x1p-9f, 0x1p-8f},
      {&E4M3, TUTTI_PROD, 0x1p-5f, 0x1p-5f, 0},   /* 2^-10 ties to zero */
      {&E4M3, TUTTI_MIN, 0.0f, -0.0f, -0.0f},
      {&E4M3, TUTTI_MAX, -0.0f, 0.0f, 0.0f},
      {&E5M2, TUTTI_SUM, 57344, 2048, 57344},     /* below the midpoint */
      {&E5M2, TUTTI_SUM, 57344, 4096, INFINITY},  /* the midpoint 61440 ties up to inf */
      {&E5M2, TUTTI_PROD, 256, 256, INFINITY},
      {&E5M2, TUTTI_SUM, INFINITY, 1, INFINITY},
      {&E5M2, TUTTI_SUM, 0x1p-16f, 0x1p-16f, 0x1p-15f},
      {&E5M2, TUTTI_MIN, -INFINITY, 5, -INFINITY},
      {&E5M2, TUTTI_MIN, 0.0f, -0.0f, -0.0f},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const fmt8 *f = cases[i].f;
    uint8_t a = f->from(cases[i].x), b = f->from(cases[i].y), out = 0;
    tutti__reduce(&out, &a, &b, 1, f->dtype, (tutti_op_t)cases[i].op);
    ASSERT_EQ(out, f->from(cases[i].want));
  }
  uint8_t a = 0x7f, b = 0x38, out = 0; /* E4M3 NaN wins MIN and MAX, in both orders */
  tutti__reduce(&out, &a, &b, 1, TUTTI_FLOAT8_E4M3, TUTTI_MIN);
  ASSERT_EQ(out, 0x7f);
  tutti__reduce(&out, &b, &a, 1, TUTTI_FLOAT8_E4M3, TUTTI_MAX);
  ASSERT_EQ(out, 0x7f);
  a = 0x7c, b = 0xfc; /* E5M2 inf - inf */
  tutti__reduce(&out, &a, &b, 1, TUTTI_FLOAT8_E5M2, TUTTI_SUM);
  ASSERT(is_nan8(out, &E5M2));
}

/* avg_finish on every code: x / nranks in float32, rounded once. */
static void avg_all(const fmt8 *f) {
  static const int nranks[] = {1, 2, 3, 7, 200, 65535};
  uint8_t buf[256 + 77];
  for (int k = 0; k < 6; k++) {
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)i;
    tutti__avg_finish(buf, sizeof buf, f->dtype, nranks[k]);
    for (size_t i = 0; i < sizeof buf; i++) {
      uint8_t c = (uint8_t)i;
      if (nranks[k] == 1 ? buf[i] != c
                         : !encodes_as(buf[i], (float)(ref_decode(c, f) / nranks[k]), f, 1))
        harness_fail(__FILE__, __LINE__, "avg %s nranks %d: %#x -> %#x",
                     tutti__dtype_name(f->dtype), nranks[k], c, buf[i]);
    }
  }
  uint8_t x = f->from(1.0f);
  tutti__avg_finish(&x, 1, f->dtype, 3);
  ASSERT_EQ(x, f->from(1.0f / 3));
  tutti__avg_finish(NULL, 0, f->dtype, 3);
}

TEST(e4m3_avg_all) { both_kernels(avg_all, &E4M3); }
TEST(e5m2_avg_all) { both_kernels(avg_all, &E5M2); }

/* premul: every code times every scalar, x * s exact in double, rounded to float32, then once
 * to fp8; and in place. */
static void premul_all(const fmt8 *f) {
  uint8_t src[256 + 71], out[sizeof src + 1], tmp[sizeof src], sbuf[3];
  for (size_t i = 0; i < sizeof src; i++) src[i] = (uint8_t)(i * 37);
  for (int s = 0; s < 256; s++) {
    sbuf[1] = (uint8_t)s;
    out[sizeof src] = 0x5a;
    tutti__premul(out, src, sizeof src, f->dtype, sbuf + 1);
    ASSERT_EQ(out[sizeof src], 0x5a);
    for (size_t i = 0; i < sizeof src; i++) {
      double want = (float)(ref_decode(src[i], f) * ref_decode((uint8_t)s, f));
      if (!encodes_as(out[i], want, f, 1))
        harness_fail(__FILE__, __LINE__, "premul %s: %#x * %#x -> %#x, want %#x",
                     tutti__dtype_name(f->dtype), src[i], s, out[i], ref_encode(want, f));
    }
    memcpy(tmp, src, sizeof src);
    tutti__premul(tmp, tmp, sizeof src, f->dtype, sbuf + 1);
    ASSERT_MEM_EQ(tmp, out, sizeof src);
  }
}

TEST(e4m3_premul_all) { both_kernels(premul_all, &E4M3); }
TEST(e5m2_premul_all) { both_kernels(premul_all, &E5M2); }

TEST(fp8_premul_cases) {
  uint8_t x[2] = {tutti__float_to_fp8e4m3(448), tutti__float_to_fp8e4m3(-3)};
  uint8_t s = tutti__float_to_fp8e4m3(0.5f);
  tutti__premul(x, x, 2, TUTTI_FLOAT8_E4M3, &s);
  ASSERT(tutti__fp8e4m3_to_float(x[0]) == 224 && tutti__fp8e4m3_to_float(x[1]) == -1.5f);
  s = tutti__float_to_fp8e4m3(4);
  tutti__premul(x, x, 1, TUTTI_FLOAT8_E4M3, &s);
  ASSERT_EQ(x[0], 0x7e); /* 896 saturates */
  uint8_t y = tutti__float_to_fp8e5m2(57344), t = tutti__float_to_fp8e5m2(2);
  tutti__premul(&y, &y, 1, TUTTI_FLOAT8_E5M2, &t);
  ASSERT_EQ(y, 0x7c);
}

int main(int c, char **v) { return harness_main(c, v); }
