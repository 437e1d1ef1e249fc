/*
 * Reduction kernels and fp16/bf16 conversions against references computed another way:
 * integers in 64 bits and then wrapped, floats in double, 16-bit formats rounded by scaling
 * and nearbyint() instead of bit surgery.
 */
#include <fenv.h>
#include <float.h>
#include <math.h>

#include "harness.h"
#include "kernels/half.h"
#include "kernels/kernels.h"

static const size_t counts[] = {0, 1, 7, 1023, 4099};

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) { /* splitmix64 */
  uint64_t z = (rng += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

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

/* ---- 16-bit float references ---- */

typedef struct {
  int frac, emax; /* fraction bits; largest exponent, which is also the bias */
} fmt16;
static const fmt16 HALF = {10, 15}, BF16 = {7, 127};

static int is_nan16(uint16_t h, fmt16 f) { return (h & 0x7fff) > (0x7fff & ~((1 << f.frac) - 1)); }

static double ref_decode(uint16_t h, fmt16 f) {
  int frac = f.frac, emax = f.emax;
  int e = (h & 0x7fff) >> frac, m = h & ((1 << frac) - 1);
  double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 2 * emax + 1) return m ? NAN : s * INFINITY;
  if (e == 0) return s * ldexp(m, 1 - emax - frac);
  return s * ldexp(m + (1 << frac), e - emax - frac);
}

static uint16_t ref_encode(double v, fmt16 f) {
  int frac = f.frac, emax = f.emax;
  uint16_t sign = signbit(v) ? 0x8000 : 0;
  uint16_t inf = (uint16_t)(sign | (2 * emax + 1) << frac);
  if (isnan(v)) return (uint16_t)(inf | 1 << (frac - 1));
  double m = fabs(v);
  if (isinf(m)) return inf;
  int e;
  frexp(m, &e);
  e = e - 1 < 1 - emax ? 1 - emax : e - 1;  /* m in [2^e, 2^(e+1)), or subnormal */
  double q = nearbyint(ldexp(m, frac - e)); /* the significand in ulps, rounded to even */
  if (q == ldexp(1, frac + 1)) q /= 2, e++;
  if (e > emax) return inf;
  if (q < ldexp(1, frac)) return (uint16_t)(sign | (uint16_t)q);
  return (uint16_t)(sign | (e + emax) << frac | ((uint16_t)q - (1 << frac)));
}

/* Every 16-bit pattern decodes to the reference value and encodes back to itself. */
static void roundtrip_all(float (*to)(uint16_t), uint16_t (*from)(float), fmt16 fmt) {
  for (uint32_t i = 0; i < 65536; i++) {
    uint16_t h = (uint16_t)i;
    float f = to(h);
    if (is_nan16(h, fmt)) {
      ASSERT(isnan(f) && !!signbit(f) == !!(h & 0x8000));
      ASSERT(is_nan16(from(f), fmt) && (from(f) & 0x8000) == (h & 0x8000));
      continue;
    }
    double r = ref_decode(h, fmt);
    ASSERT((double)f == r && !!signbit(f) == !!signbit(r));
    ASSERT_EQ(from(f), h);
  }
}

/* Floats spread over every exponent, and the points around every midpoint between
 * neighbouring 16-bit values: the tie itself goes to the even one, its float neighbours to
 * the nearer one. */
static void encode_matches_reference(uint16_t (*from)(float), fmt16 fmt) {
  for (uint64_t u = 0; u < (1ull << 32); u += 997) {
    float f = bitsf((uint32_t)u);
    uint16_t got = from(f), want = ref_encode(f, fmt);
    if (isnan(f))
      ASSERT(is_nan16(got, fmt) && (got & 0x8000) == (want & 0x8000));
    else if (got != want)
      harness_fail(__FILE__, __LINE__, "%a -> %#x, want %#x", (double)f, got, want);
  }
  uint16_t inf = (uint16_t)((2 * fmt.emax + 1) << fmt.frac);
  for (uint16_t h = 0; h < inf; h++) {
    double lo = ref_decode(h, fmt), hi = ref_decode((uint16_t)(h + 1), fmt);
    if (h + 1 == inf) hi = ldexp(1, fmt.emax + 1); /* the value infinity rounds from */
    float mid = (float)((lo + hi) / 2);
    ASSERT((double)mid == (lo + hi) / 2);
    uint16_t even = (h & 1) ? (uint16_t)(h + 1) : h;
    ASSERT_EQ(from(mid), even);
    ASSERT_EQ(from(-mid), even | 0x8000);
    ASSERT_EQ(from(nextafterf(mid, 0)), h);
    ASSERT_EQ(from(nextafterf(mid, INFINITY)), h + 1);
  }
}

TEST(half_roundtrip_all_65536) { roundtrip_all(tutti__half_to_float, tutti__float_to_half, HALF); }
TEST(bf16_roundtrip_all_65536) { roundtrip_all(tutti__bf16_to_float, tutti__float_to_bf16, BF16); }
TEST(half_encode_matches_reference) { encode_matches_reference(tutti__float_to_half, HALF); }
TEST(bf16_encode_matches_reference) { encode_matches_reference(tutti__float_to_bf16, BF16); }

TEST(half_cases) {
  ASSERT_EQ(tutti__float_to_half(1.0f + 0x1p-11f), 0x3c00);   /* tie, down to even */
  ASSERT_EQ(tutti__float_to_half(1.0f + 0x3p-11f), 0x3c02);   /* tie, up to even */
  ASSERT_EQ(tutti__float_to_half(bitsf(0x3f801001)), 0x3c01); /* just past the tie */
  ASSERT_EQ(tutti__float_to_half(65504.0f), 0x7bff);
  ASSERT_EQ(tutti__float_to_half(65519.99f), 0x7bff);
  ASSERT_EQ(tutti__float_to_half(65520.0f), 0x7c00);
  ASSERT_EQ(tutti__float_to_half(-1e10f), 0xfc00);
  ASSERT_EQ(tutti__float_to_half(-INFINITY), 0xfc00);
  ASSERT_EQ(tutti__float_to_half(0x1p-24f), 0x0001);     /* smallest subnormal */
  ASSERT_EQ(tutti__float_to_half(0x1p-25f), 0x0000);     /* tie to even zero */
  ASSERT_EQ(tutti__float_to_half(0x1.8p-24f), 0x0002);   /* tie up to even 2 */
  ASSERT_EQ(tutti__float_to_half(0x1.ffcp-15f), 0x0400); /* ties up to normal */
  ASSERT_EQ(tutti__float_to_half(0x1p-14f), 0x0400);
  ASSERT_EQ(tutti__float_to_half(FLT_TRUE_MIN), 0x0000);
  ASSERT_EQ(tutti__float_to_half(-0.0f), 0x8000);
  ASSERT(tutti__half_to_float(0x0001) == 0x1p-24f);
  ASSERT(tutti__half_to_float(0x03ff) == 0x3ffp-24f);
  ASSERT(signbit(tutti__half_to_float(0x8000)) && tutti__half_to_float(0x8000) == 0);
  ASSERT_EQ(tutti__float_to_half(bitsf(0x7f800001)), 0x7e00); /* sNaN: quiet, not inf */
  ASSERT_EQ(tutti__float_to_half(-NAN) & 0xfe00, 0xfe00);
  ASSERT_EQ(fbits(tutti__half_to_float(0x7c01)) & 0xffc00000, 0x7fc00000);
}

TEST(bf16_cases) {
  ASSERT_EQ(tutti__float_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  ASSERT_EQ(tutti__float_to_bf16(1.0f + 0x3p-8f), 0x3f82);
  ASSERT_EQ(tutti__float_to_bf16(FLT_MAX), 0x7f80);
  ASSERT_EQ(tutti__float_to_bf16(0x1.fep127f), 0x7f7f);
  ASSERT_EQ(tutti__float_to_bf16(-0x1.ff8p127f), 0xff80); /* tie, max is odd: to inf */
  ASSERT_EQ(tutti__float_to_bf16(bitsf(0x00010000)), 0x0001);
  ASSERT_EQ(tutti__float_to_bf16(bitsf(0x00008000)), 0x0000);
  ASSERT_EQ(tutti__float_to_bf16(bitsf(0x00018000)), 0x0002);
  ASSERT_EQ(tutti__float_to_bf16(-0.0f), 0x8000);
  ASSERT_EQ(tutti__float_to_bf16(bitsf(0x7f800001)), 0x7fc0);
  ASSERT_EQ(tutti__float_to_bf16(bitsf(0xff800001)), 0xffc0);
  ASSERT_EQ(fbits(tutti__bf16_to_float(0x7f81)), 0x7fc10000);
}

TEST(dtype_facts) {
  static const char *names[] = {"int8",     "uint8",   "int32",   "uint32",
                                "int64",    "uint64",  "float16", "bfloat16",
                                "float32",  "float64", "float8_e4m3", "float8_e5m2",
                                "int16",    "uint16"};
  static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8, 1, 1, 2, 2};
  for (int d = 0; d < 14; d++) {
    ASSERT(tutti__dtype_valid(d));
    ASSERT_EQ(tutti__dtype_size((tutti_dtype_t)d), sizes[d]);
    ASSERT_STR_EQ(tutti__dtype_name(d), names[d]);
  }
  static const char *ops[] = {"sum", "prod", "min", "max", "avg", "band", "bor", "bxor"};
  for (int o = 0; o < 8; o++) {
    ASSERT(tutti__op_valid(o));
    ASSERT_STR_EQ(tutti__op_name(o), ops[o]);
    for (int d = 0; d < 14; d++) /* bitwise: integers only; the rest: every dtype */
      ASSERT_EQ(tutti__op_supports(o, d), o < 5 || d < 6 || d >= 12);
  }
  /* The values API.md fixes did not move when the 16-bit integers were appended. */
  ASSERT_EQ(TUTTI_FLOAT64, 9);
  ASSERT_EQ(TUTTI_FLOAT8_E5M2, 11);
  ASSERT_EQ(TUTTI_INT16, 12);
  ASSERT_EQ(TUTTI_UINT16, 13);
  static const int bad[] = {-1, 14, 99, -1000};
  for (int i = 0; i < 4; i++) {
    ASSERT(!tutti__dtype_valid(bad[i]));
    ASSERT_EQ(tutti__dtype_size((tutti_dtype_t)bad[i]), 0);
    ASSERT_STR_EQ(tutti__dtype_name(bad[i]), "?");
    int op = bad[i] == 14 ? TUTTI_NUM_OPS : bad[i];
    ASSERT(!tutti__op_valid(op));
    ASSERT_STR_EQ(tutti__op_name(op), "?");
    ASSERT(!tutti__op_supports(op, TUTTI_INT32) && !tutti__op_supports(TUTTI_SUM, bad[i]));
    ASSERT(!tutti__op_supports(TUTTI_BAND, bad[i]));
  }
}

/* ---- Generic element access: integers as raw bits, floats as doubles ---- */

static int is_int(tutti_dtype_t d) {
  return d <= TUTTI_UINT64 || d == TUTTI_INT16 || d == TUTTI_UINT16;
}
static int is_signed(tutti_dtype_t d) {
  return d == TUTTI_INT8 || d == TUTTI_INT16 || d == TUTTI_INT32 || d == TUTTI_INT64;
}
static int bits_of(tutti_dtype_t d) { return (int)tutti__dtype_size(d) * 8; }

static uint64_t get_raw(const void *buf, size_t i, tutti_dtype_t d) {
  uint64_t v = 0; /* little-endian hosts only, like the rest of the library */
  memcpy(&v, (const char *)buf + i * tutti__dtype_size(d), tutti__dtype_size(d));
  return v;
}
static void put_raw(void *buf, size_t i, tutti_dtype_t d, uint64_t v) {
  memcpy((char *)buf + i * tutti__dtype_size(d), &v, tutti__dtype_size(d));
}
static int64_t as_signed(uint64_t raw, int bits) { /* sign-extend arithmetically */
  if (bits == 64) return raw >> 63 ? -(int64_t)(~raw) - 1 : (int64_t)raw;
  return (raw >> (bits - 1)) ? (int64_t)raw - ((int64_t)1 << bits) : (int64_t)raw;
}
static uint64_t wrap(uint64_t v, int bits) { return bits == 64 ? v : v & ((1ull << bits) - 1); }
static uint64_t mul64(uint64_t a, uint64_t b) { /* mod 2^64 from 32-bit halves */
  uint64_t al = a & 0xffffffff, ah = a >> 32, bl = b & 0xffffffff, bh = b >> 32;
  return al * bl + ((al * bh + ah * bl) << 32);
}

static double get_f(const void *buf, size_t i, tutti_dtype_t d) {
  uint64_t r = get_raw(buf, i, d);
  if (d == TUTTI_FLOAT16) return ref_decode((uint16_t)r, HALF);
  if (d == TUTTI_BFLOAT16) return ref_decode((uint16_t)r, BF16);
  if (d == TUTTI_FLOAT32) return bitsf((uint32_t)r);
  double x;
  memcpy(&x, &r, 8);
  return x;
}
/* 16-bit results were computed in float first, as the kernels promise. */
static void put_f(void *buf, size_t i, tutti_dtype_t d, double v) {
  if (d == TUTTI_FLOAT64)
    memcpy((char *)buf + i * 8, &v, 8);
  else if (d == TUTTI_FLOAT32)
    put_raw(buf, i, d, fbits((float)v));
  else
    put_raw(buf, i, d, ref_encode((float)v, d == TUTTI_FLOAT16 ? HALF : BF16));
}

static double ref_minmax(double x, double y, int max) {
  if (isnan(x) || isnan(y)) return NAN;
  if (x == y && signbit(x) != signbit(y)) return max ? 0.0 : -0.0;
  return (x > y) == !!max ? x : y;
}

static void ref_reduce(void *out, const void *a, const void *b, size_t n, tutti_dtype_t d,
                       tutti_op_t op) {
  int bits = bits_of(d);
  for (size_t i = 0; i < n; i++) {
    if (is_int(d)) {
      uint64_t x = get_raw(a, i, d), y = get_raw(b, i, d);
      int lt = is_signed(d) ? as_signed(x, bits) < as_signed(y, bits) : x < y;
      uint64_t r = op == TUTTI_PROD  ? (bits == 64 ? mul64(x, y) : x * y)
                   : op == TUTTI_MIN ? (lt ? x : y)
                   : op == TUTTI_MAX ? (lt ? y : x)
                   : op == TUTTI_BAND ? x & y
                   : op == TUTTI_BOR  ? x | y
                   : op == TUTTI_BXOR ? x ^ y
                                      : x + y;
      put_raw(out, i, d, wrap(r, bits));
    } else {
      double x = get_f(a, i, d), y = get_f(b, i, d);
      double r = op == TUTTI_PROD  ? x * y
                 : op == TUTTI_MIN ? ref_minmax(x, y, 0)
                 : op == TUTTI_MAX ? ref_minmax(x, y, 1)
                                   : x + y;
      put_f(out, i, d, r);
    }
  }
}

static void ref_avg(void *buf, size_t n, tutti_dtype_t d, int nranks) {
  for (size_t i = 0; i < n; i++) {
    if (!is_int(d)) {
      put_f(buf, i, d, get_f(buf, i, d) / nranks);
    } else if (is_signed(d)) { /* divide the magnitude, then restore the sign */
      int64_t x = as_signed(get_raw(buf, i, d), bits_of(d));
      uint64_t mag = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
      uint64_t q = mag / (uint64_t)nranks;
      put_raw(buf, i, d, x < 0 ? 0 - q : q);
    } else {
      put_raw(buf, i, d, get_raw(buf, i, d) / (uint64_t)nranks);
    }
  }
}

/* Any bit pattern, some special values, and (wide floats) ordinary numbers whose sums round. */
static void fill(void *buf, size_t n, tutti_dtype_t d) {
  static const double fspecial[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1, -1, FLT_MAX, 3};
  static const uint64_t ispecial[] = {0,   1,   ~0ull,      1ull << 63, (1ull << 63) - 1,
                                      127, 128, 1ull << 31, 1ull << 32, (1ull << 31) - 1};
  for (size_t i = 0; i < n; i++) {
    uint64_t r = rnd(), k = rnd() % 16;
    if (k < 2 && is_int(d))
      put_raw(buf, i, d, ispecial[r % 10]);
    else if (k < 2)
      put_f(buf, i, d, fspecial[r % 9]);
    else if (k < 9 && (d == TUTTI_FLOAT32 || d == TUTTI_FLOAT64))
      put_f(buf, i, d, ldexp((double)(r >> 32) - 0x1p31, -20));
    else
      put_raw(buf, i, d, r);
  }
}

/* Equal bit for bit, except that any NaN matches any NaN. */
static int same(const void *p, const void *q, size_t n, tutti_dtype_t d) {
  size_t sz = tutti__dtype_size(d);
  for (size_t i = 0; i < n; i++) {
    if (!is_int(d) && isnan(get_f(p, i, d)) && isnan(get_f(q, i, d))) continue;
    if (memcmp((const char *)p + i * sz, (const char *)q + i * sz, sz) != 0) {
      fprintf(stderr, "  element %zu differs\n", i);
      return 0;
    }
  }
  return 1;
}

/* Every op the dtype supports against the reference, with a sentinel after dst; then the
 * aliased forms; then avg_finish. An unsupported op (bitwise on floats) must leave dst
 * alone. Inputs are allocated to size so ASan sees any overread. */
static void check_count(tutti_dtype_t d, size_t n) {
  size_t bytes = n * tutti__dtype_size(d);
  char *a = malloc(bytes + !bytes), *b = malloc(bytes + !bytes), *out = malloc(bytes + 1);
  char *want = malloc(bytes + 1), *tmp = malloc(bytes + 1);
  for (int o = TUTTI_SUM; o < TUTTI_NUM_OPS; o++) {
    tutti_op_t op = (tutti_op_t)o;
    fill(a, n, d), fill(b, n, d);
    out[bytes] = 0x5a;
    if (!tutti__op_supports(o, (int)d)) {
      memset(out, 0xa5, bytes), memcpy(tmp, a, bytes);
      tutti__reduce(out, a, b, n, d, op);
      tutti__reduce(tmp, tmp, tmp, n, d, op);
      for (size_t i = 0; i < bytes; i++) ASSERT_EQ((unsigned char)out[i], 0xa5);
      ASSERT_MEM_EQ(tmp, a, bytes);
      continue;
    }
    ref_reduce(want, a, b, n, d, op);
    tutti__reduce(out, a, b, n, d, op);
    if (!same(out, want, n, d))
      harness_fail(__FILE__, __LINE__, "%s %s count %zu", tutti__dtype_name(d), tutti__op_name(op),
                   n);
    ASSERT_EQ(out[bytes], 0x5a);
    memcpy(tmp, a, bytes), tutti__reduce(tmp, tmp, b, n, d, op);
    ASSERT_MEM_EQ(tmp, out, bytes);
    memcpy(tmp, b, bytes), tutti__reduce(tmp, a, tmp, n, d, op);
    ASSERT_MEM_EQ(tmp, out, bytes);
    ref_reduce(want, a, a, n, d, op);
    memcpy(tmp, a, bytes), tutti__reduce(tmp, tmp, tmp, n, d, op);
    ASSERT(same(tmp, want, n, d));
  }
  static const int nranks[] = {1, 2, 3, 7, 200};
  for (int r = 0; r < 5; r++) {
    fill(out, n, d), memcpy(want, out, bytes);
    ref_avg(want, n, d, nranks[r]);
    tutti__avg_finish(out, n, d, nranks[r]);
    if (!same(out, want, n, d))
      harness_fail(__FILE__, __LINE__, "avg %s count %zu nranks %d", tutti__dtype_name(d), n,
                   nranks[r]);
    ASSERT_EQ(out[bytes], 0x5a);
  }
  free(a), free(b), free(out), free(want), free(tmp);
}

/* The listed counts, and every tail length around the kernels' 64-byte blocks. */
static void check_dtype(tutti_dtype_t d) {
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) check_count(d, counts[c]);
  for (size_t n = 2; n <= 70; n++) check_count(d, n);
}

TEST(reduce_int8) { check_dtype(TUTTI_INT8); }
TEST(reduce_uint8) { check_dtype(TUTTI_UINT8); }
TEST(reduce_int32) { check_dtype(TUTTI_INT32); }
TEST(reduce_uint32) { check_dtype(TUTTI_UINT32); }
TEST(reduce_int64) { check_dtype(TUTTI_INT64); }
TEST(reduce_uint64) { check_dtype(TUTTI_UINT64); }
TEST(reduce_int16) { check_dtype(TUTTI_INT16); }
TEST(reduce_uint16) { check_dtype(TUTTI_UINT16); }
TEST(reduce_float16) { check_dtype(TUTTI_FLOAT16); }
TEST(reduce_bfloat16) { check_dtype(TUTTI_BFLOAT16); }
TEST(reduce_float32) { check_dtype(TUTTI_FLOAT32); }
/* The same through the portable kernels, where x86 ones (F16C, AVX2) would run by default. */
TEST(reduce_float16_portable) {
  tutti__simd_disabled = 1;
  check_dtype(TUTTI_FLOAT16);
  tutti__simd_disabled = 0;
}
TEST(reduce_bfloat16_portable) {
  tutti__simd_disabled = 1;
  check_dtype(TUTTI_BFLOAT16);
  tutti__simd_disabled = 0;
}
TEST(reduce_float64) { check_dtype(TUTTI_FLOAT64); }

/* One element through tutti__reduce; integers given as values, compared after wrapping. */
static void check1(tutti_dtype_t d, tutti_op_t op, uint64_t x, uint64_t y, uint64_t want) {
  uint64_t a = 0, b = 0, out = 0;
  put_raw(&a, 0, d, x), put_raw(&b, 0, d, y);
  tutti__reduce(&out, &a, &b, 1, d, op);
  if (out != wrap(want, bits_of(d)))
    harness_fail(__FILE__, __LINE__, "%s %s %#llx %#llx: %#llx", tutti__dtype_name(d),
                 tutti__op_name(op), (unsigned long long)x, (unsigned long long)y,
                 (unsigned long long)out);
}

/* The same for floats; want NaN means any NaN, and the sign of a zero must match. */
static void check1f(tutti_dtype_t d, tutti_op_t op, double x, double y, double want) {
  uint64_t a = 0, b = 0, out = 0;
  put_f(&a, 0, d, x), put_f(&b, 0, d, y);
  tutti__reduce(&out, &a, &b, 1, d, op);
  double got = get_f(&out, 0, d);
  if (isnan(want) ? !isnan(got) : got != want || signbit(got) != signbit(want))
    harness_fail(__FILE__, __LINE__, "%s %s %g %g: %g, want %g", tutti__dtype_name(d),
                 tutti__op_name(op), x, y, got, want);
}

TEST(integer_wraparound) {
  check1(TUTTI_INT8, TUTTI_SUM, 127, 1, (uint64_t)-128);
  check1(TUTTI_INT8, TUTTI_SUM, (uint64_t)-128, (uint64_t)-1, 127);
  check1(TUTTI_INT8, TUTTI_PROD, 16, 16, 0);
  check1(TUTTI_INT8, TUTTI_PROD, 127, 127, 1);
  check1(TUTTI_INT8, TUTTI_PROD, (uint64_t)-128, (uint64_t)-1, (uint64_t)-128);
  check1(TUTTI_UINT8, TUTTI_SUM, 255, 1, 0);
  check1(TUTTI_UINT8, TUTTI_PROD, 255, 255, 1);
  check1(TUTTI_INT32, TUTTI_SUM, INT32_MAX, 1, (uint64_t)INT32_MIN);
  check1(TUTTI_INT32, TUTTI_PROD, 65536, 65536, 0);
  check1(TUTTI_INT32, TUTTI_PROD, (uint64_t)INT32_MIN, (uint64_t)-1, (uint64_t)INT32_MIN);
  check1(TUTTI_UINT32, TUTTI_PROD, UINT32_MAX, UINT32_MAX, 1);
  check1(TUTTI_INT64, TUTTI_SUM, INT64_MAX, 1, (uint64_t)INT64_MIN);
  check1(TUTTI_INT64, TUTTI_SUM, (uint64_t)INT64_MIN, (uint64_t)-1, INT64_MAX);
  check1(TUTTI_INT64, TUTTI_PROD, (uint64_t)INT64_MIN, (uint64_t)-1, (uint64_t)INT64_MIN);
  check1(TUTTI_INT64, TUTTI_PROD, 1ull << 32, 1ull << 32, 0);
  check1(TUTTI_INT64, TUTTI_PROD, INT64_MAX, INT64_MAX, 1);
  check1(TUTTI_UINT64, TUTTI_SUM, UINT64_MAX, 1, 0);
  check1(TUTTI_UINT64, TUTTI_PROD, UINT64_MAX, UINT64_MAX, 1);
  check1(TUTTI_INT8, TUTTI_AVG, 127, 1, (uint64_t)-128); /* AVG sums here */
  /* 16-bit products promote to int, where 65535 * 65535 would overflow (UBSan sees it). */
  check1(TUTTI_UINT16, TUTTI_PROD, 65535, 65535, 1);
  check1(TUTTI_UINT16, TUTTI_SUM, 65535, 1, 0);
  check1(TUTTI_INT16, TUTTI_SUM, INT16_MAX, 1, (uint64_t)INT16_MIN);
  check1(TUTTI_INT16, TUTTI_PROD, (uint64_t)INT16_MIN, (uint64_t)-1, (uint64_t)INT16_MIN);
  check1(TUTTI_INT16, TUTTI_MIN, (uint64_t)-1, 1, (uint64_t)-1);
  check1(TUTTI_UINT16, TUTTI_MAX, 65535, 1, 65535);
  check1(TUTTI_INT16, TUTTI_BXOR, (uint64_t)-1, 0x0f0f, 0xf0f0);
}

TEST(integer_min_max_signedness) {
  check1(TUTTI_INT8, TUTTI_MIN, (uint64_t)-1, 1, (uint64_t)-1);
  check1(TUTTI_INT8, TUTTI_MAX, (uint64_t)-128, 127, 127);
  check1(TUTTI_UINT8, TUTTI_MIN, 255, 1, 1);
  check1(TUTTI_UINT8, TUTTI_MAX, 255, 1, 255);
  check1(TUTTI_INT32, TUTTI_MIN, (uint64_t)INT32_MIN, 0, (uint64_t)INT32_MIN);
  check1(TUTTI_UINT32, TUTTI_MIN, UINT32_MAX, 0, 0);
  check1(TUTTI_INT64, TUTTI_MIN, (uint64_t)INT64_MIN, INT64_MAX, (uint64_t)INT64_MIN);
  check1(TUTTI_INT64, TUTTI_MAX, (uint64_t)-1, 0, 0);
  check1(TUTTI_UINT64, TUTTI_MAX, UINT64_MAX, 0, UINT64_MAX);
}

TEST(integer_bitwise) {
  check1(TUTTI_INT8, TUTTI_BAND, (uint64_t)-1, 0x5a, 0x5a);
  check1(TUTTI_INT8, TUTTI_BOR, (uint64_t)-128, 1, (uint64_t)-127);
  check1(TUTTI_INT8, TUTTI_BXOR, (uint64_t)-1, 0x0f, 0xf0);
  check1(TUTTI_UINT8, TUTTI_BXOR, 0xff, 0xff, 0);
  check1(TUTTI_INT32, TUTTI_BAND, (uint64_t)INT32_MIN, (uint64_t)-1, (uint64_t)INT32_MIN);
  check1(TUTTI_UINT32, TUTTI_BOR, 0xf0f0f0f0u, 0x0f0f0f0fu, UINT32_MAX);
  check1(TUTTI_INT64, TUTTI_BXOR, (uint64_t)INT64_MIN, (uint64_t)-1, INT64_MAX);
  check1(TUTTI_UINT64, TUTTI_BAND, 0x8000000000000001ull, 0xffffffff00000001ull,
         0x8000000000000001ull);
}

/* Unsupported pairs and invalid values leave dst as it was (and read nothing: NULL inputs). */
TEST(reduce_rejects_unsupported) {
  static const tutti_dtype_t fl[] = {TUTTI_FLOAT16, TUTTI_BFLOAT16, TUTTI_FLOAT32,
                                     TUTTI_FLOAT64, TUTTI_FLOAT8_E4M3, TUTTI_FLOAT8_E5M2};
  unsigned char out[64];
  for (int i = 0; i < 6; i++)
    for (int o = TUTTI_BAND; o <= TUTTI_BXOR; o++) {
      memset(out, 0xa5, sizeof out);
      tutti__reduce(out, NULL, NULL, 8, fl[i], (tutti_op_t)o);
      for (size_t k = 0; k < sizeof out; k++) ASSERT_EQ(out[k], 0xa5);
    }
  static const int bad_op[] = {TUTTI_NUM_OPS, TUTTI_NUM_OPS + 1, -1, 1000};
  for (int i = 0; i < 4; i++) {
    tutti__reduce(out, NULL, NULL, 8, TUTTI_INT32, (tutti_op_t)bad_op[i]);
    tutti__reduce(out, NULL, NULL, 8, (tutti_dtype_t)(TUTTI_UINT16 + 1), TUTTI_SUM);
    tutti__reduce(out, NULL, NULL, 8, (tutti_dtype_t)-1, TUTTI_BAND);
    tutti__avg_finish(out, 8, (tutti_dtype_t)(TUTTI_UINT16 + 1 + i), 3);
    tutti__premul(out, NULL, 8, (tutti_dtype_t)(TUTTI_UINT16 + 1 + i), NULL);
    tutti__premul(out, NULL, 8, (tutti_dtype_t)(-1 - i), NULL);
  }
  for (size_t k = 0; k < sizeof out; k++) ASSERT_EQ(out[k], 0xa5);
}

/* premul against the reference (integers: 64-bit product, wrapped; floats: exact product in
 * double, rounded to float and then to the 16-bit format), plus the aliased form. The scalar
 * sits at an odd address: the kernels must not assume it aligned. */
static void check_premul(tutti_dtype_t d, size_t n) {
  size_t sz = tutti__dtype_size(d), bytes = n * sz;
  char *src = malloc(bytes + !bytes), *out = malloc(bytes + 1), *want = malloc(bytes + 1);
  char *tmp = malloc(bytes + !bytes), sbuf[17];
  for (int round = 0; round < 4; round++) {
    fill(src, n, d), fill(sbuf + 1, 1, d);
    if (round == 0 && is_int(d)) put_raw(sbuf + 1, 0, d, ~0ull); /* -1 or the max */
    if (round == 0 && !is_int(d)) put_f(sbuf + 1, 0, d, -0.5);
    for (size_t i = 0; i < n; i++) {
      if (is_int(d))
        put_raw(want, i, d, wrap(mul64(get_raw(src, i, d), get_raw(sbuf + 1, 0, d)), bits_of(d)));
      else if (d == TUTTI_FLOAT64)
        put_f(want, i, d, get_f(src, i, d) * get_f(sbuf + 1, 0, d));
      else
        put_f(want, i, d, (float)(get_f(src, i, d) * get_f(sbuf + 1, 0, d)));
    }
    out[bytes] = 0x5a;
    tutti__premul(out, src, n, d, sbuf + 1);
    if (!same(out, want, n, d))
      harness_fail(__FILE__, __LINE__, "premul %s count %zu round %d", tutti__dtype_name(d), n,
                   round);
    ASSERT_EQ(out[bytes], 0x5a);
    memcpy(tmp, src, bytes), tutti__premul(tmp, tmp, n, d, sbuf + 1);
    ASSERT_MEM_EQ(tmp, out, bytes);
  }
  free(src), free(out), free(want), free(tmp);
}

/* Each dtype with the default kernels, then (where x86 ones exist) with the portable ones. */
TEST(premul_all_dtypes) {
  for (int portable = 0; portable < 2; portable++) {
    tutti__simd_disabled = portable;
    static const int extra[] = {TUTTI_INT16, TUTTI_UINT16};
    for (int k = 0; k <= TUTTI_FLOAT64 + 2; k++) {
      int d = k <= TUTTI_FLOAT64 ? k : extra[k - TUTTI_FLOAT64 - 1];
      for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
        check_premul((tutti_dtype_t)d, counts[c]);
      for (size_t n = 2; n <= 70; n++) check_premul((tutti_dtype_t)d, n);
    }
  }
  tutti__simd_disabled = 0;
  tutti__premul(NULL, NULL, 0, TUTTI_FLOAT32, NULL);
}

TEST(premul_cases) {
  int8_t i8[3] = {127, -128, 3}, s8 = -1;
  tutti__premul(i8, i8, 3, TUTTI_INT8, &s8);
  ASSERT(i8[0] == -127 && i8[1] == -128 && i8[2] == -3);
  uint64_t u64 = UINT64_MAX, s64 = UINT64_MAX;
  tutti__premul(&u64, &u64, 1, TUTTI_UINT64, &s64);
  ASSERT(u64 == 1);
  float f[2] = {3.0f, -0.0f}, sf = 0.25f;
  tutti__premul(f, f, 2, TUTTI_FLOAT32, &sf);
  ASSERT(f[0] == 0.75f && f[1] == 0 && signbit(f[1]));
  uint16_t h = 0x7bff, sh = 0x4000; /* 65504 * 2 overflows fp16 */
  tutti__premul(&h, &h, 1, TUTTI_FLOAT16, &sh);
  ASSERT_EQ(h, 0x7c00);
  h = 0x3c01, sh = 0x3800; /* (1 + 2^-10) / 2: exact */
  tutti__premul(&h, &h, 1, TUTTI_FLOAT16, &sh);
  ASSERT_EQ(h, 0x3801);
}

TEST(float_specials) {
  static const tutti_dtype_t fl[] = {TUTTI_FLOAT16, TUTTI_BFLOAT16, TUTTI_FLOAT32, TUTTI_FLOAT64};
  for (int i = 0; i < 4; i++) {
    tutti_dtype_t d = fl[i];
    check1f(d, TUTTI_SUM, INFINITY, 1, INFINITY);
    check1f(d, TUTTI_SUM, INFINITY, -INFINITY, NAN);
    check1f(d, TUTTI_SUM, NAN, 1, NAN);
    check1f(d, TUTTI_SUM, -0.0, -0.0, -0.0);
    check1f(d, TUTTI_SUM, -0.0, 0.0, 0.0);
    check1f(d, TUTTI_PROD, -0.0, 5, -0.0);
    check1f(d, TUTTI_PROD, INFINITY, 0, NAN);
    for (int s = 0; s < 2; s++) { /* both operand orders: NaN wins, -0 < +0 */
      double z = s ? 0.0 : -0.0, nz = s ? -0.0 : 0.0;
      check1f(d, TUTTI_MIN, s ? NAN : 1, s ? 1 : NAN, NAN);
      check1f(d, TUTTI_MAX, s ? NAN : INFINITY, s ? INFINITY : NAN, NAN);
      check1f(d, TUTTI_MIN, s ? -INFINITY : 5, s ? 5 : -INFINITY, -INFINITY);
      check1f(d, TUTTI_MAX, s ? -INFINITY : 5, s ? 5 : -INFINITY, 5);
      check1f(d, TUTTI_MIN, z, nz, -0.0);
      check1f(d, TUTTI_MAX, z, nz, 0.0);
    }
  }
  check1f(TUTTI_FLOAT16, TUTTI_SUM, 65504, 8, 65504);           /* below the midpoint */
  check1f(TUTTI_FLOAT16, TUTTI_SUM, 65504, 16, INFINITY);       /* the midpoint ties up to inf */
  check1f(TUTTI_FLOAT16, TUTTI_SUM, 1, 0x1p-11, 1);             /* tie to even */
  check1f(TUTTI_FLOAT16, TUTTI_SUM, 0x1p-24, 0x1p-24, 0x1p-23); /* subnormals add */
  check1f(TUTTI_FLOAT16, TUTTI_PROD, 0x1p-12, 0x1p-13, 0);      /* 2^-25 ties to zero */
  check1f(TUTTI_BFLOAT16, TUTTI_SUM, 1, 0x1p-8, 1);
  check1f(TUTTI_BFLOAT16, TUTTI_PROD, 0x1p100, 0x1p100, INFINITY);
  check1f(TUTTI_FLOAT32, TUTTI_SUM, FLT_MAX, FLT_MAX, INFINITY);
  check1f(TUTTI_FLOAT64, TUTTI_PROD, DBL_MAX, 2, INFINITY);
}

/* Runs avg_finish on one element of dtype d. */
static uint64_t avg1(tutti_dtype_t d, uint64_t x, int nranks) {
  uint64_t v = 0;
  put_raw(&v, 0, d, x);
  tutti__avg_finish(&v, 1, d, nranks);
  return v;
}

TEST(avg_finish_cases) {
  ASSERT_EQ((int32_t)avg1(TUTTI_INT32, (uint64_t)-7, 2), -3);
  ASSERT_EQ((int32_t)avg1(TUTTI_INT32, 7, 2), 3);
  ASSERT_EQ((int32_t)avg1(TUTTI_INT32, (uint64_t)INT32_MIN, 2), -1073741824);
  ASSERT_EQ((int8_t)avg1(TUTTI_INT8, (uint64_t)-128, 3), -42);
  ASSERT_EQ((int8_t)avg1(TUTTI_INT8, (uint64_t)-128, 200), 0);
  ASSERT_EQ((int8_t)avg1(TUTTI_INT8, (uint64_t)-7, 2), -3);
  ASSERT_EQ(avg1(TUTTI_UINT8, 255, 4), 63);
  ASSERT_EQ(avg1(TUTTI_UINT8, 255, 1000), 0);
  ASSERT_EQ(avg1(TUTTI_UINT32, UINT32_MAX, 2), 0x7fffffff);
  ASSERT_EQ((int64_t)avg1(TUTTI_INT64, (uint64_t)INT64_MIN, 3), -3074457345618258602ll);
  ASSERT(avg1(TUTTI_UINT64, UINT64_MAX, 3) == 6148914691236517205ull);
  ASSERT(bitsf((uint32_t)avg1(TUTTI_FLOAT32, fbits(1.0f), 3)) == 1.0f / 3);
  ASSERT(bitsf((uint32_t)avg1(TUTTI_FLOAT32, fbits(-7.0f), 2)) == -3.5f);
  double x = 1.0;
  tutti__avg_finish(&x, 1, TUTTI_FLOAT64, 3);
  ASSERT(x == 1.0 / 3);
  ASSERT_EQ(avg1(TUTTI_FLOAT16, 0x3c00, 3), 0x3555); /* 1/3 in fp16 */
  ASSERT_EQ(avg1(TUTTI_FLOAT16, 0x0001, 2), 0x0000); /* 2^-25 ties to zero */
  ASSERT_EQ(avg1(TUTTI_FLOAT16, 0x0003, 2), 0x0002); /* 1.5 * 2^-24 ties up to even */
  ASSERT_EQ(avg1(TUTTI_BFLOAT16, 0x3f80, 3), 0x3eab);
  ASSERT_EQ(avg1(TUTTI_FLOAT16, 0xfc00, 3), 0xfc00);
}

/*
 * The kernels, SIMD or portable, against the exported conversions applied one element at a
 * time, bit for bit and NaN payloads included: every 16-bit pattern against a spread of
 * others. The one freedom is SUM/PROD of two NaNs, where C lets the compiler pick which
 * operand's payload survives (a NaN result, quieted, from either input, or the reference's).
 */
static float min_rule(float x, float y) { /* kernels.h: NaN wins, -0 < +0 */
  return (x < y || isnan(x) || (x == y && signbit(x))) ? x : y;
}
static float max_rule(float x, float y) {
  return (x > y || isnan(x) || (x == y && !signbit(x))) ? x : y;
}

static void check_16bit_against_conversions(tutti_dtype_t d) {
  int half = d == TUTTI_FLOAT16;
  float (*to)(uint16_t) = half ? tutti__half_to_float : tutti__bf16_to_float;
  uint16_t (*from)(float) = half ? tutti__float_to_half : tutti__float_to_bf16;
  fmt16 fmt = half ? HALF : BF16;
  uint16_t quiet = (uint16_t)(1 << (fmt.frac - 1));
  size_t n = 65536 + 13; /* and a tail */
  uint16_t *a = malloc(n * 2), *b = malloc(n * 2), *out = malloc(n * 2);
  for (int simd = 0; simd < 2; simd++) {
    tutti__simd_disabled = !simd;
    for (uint32_t round = 0; round < 8; round++) {
      for (size_t i = 0; i < n; i++) {
        a[i] = (uint16_t)i;
        b[i] = (uint16_t)(i * 40503u + round * 7919u + (i >> round)); /* odd multiplier */
      }
      for (int o = TUTTI_SUM; o <= TUTTI_MAX; o++) {
        tutti__reduce(out, a, b, n, d, (tutti_op_t)o);
        for (size_t i = 0; i < n; i++) {
          float x = to(a[i]), y = to(b[i]);
          float r = o == TUTTI_SUM ? x + y : o == TUTTI_PROD ? x * y
                    : o == TUTTI_MIN ? min_rule(x, y) : max_rule(x, y);
          uint16_t want = from(r), got = out[i];
          if (got == want) continue;
          if (o <= TUTTI_PROD && is_nan16(a[i], fmt) && is_nan16(b[i], fmt) &&
              (got == (a[i] | quiet) || got == (b[i] | quiet)))
            continue;
          harness_fail(__FILE__, __LINE__, "%s %s simd %d: %#x, %#x -> %#x, want %#x",
                       tutti__dtype_name(d), tutti__op_name(o), simd, a[i], b[i], got, want);
        }
      }
    }
    static const int nranks[] = {2, 3, 7, 200, 65535};
    for (int k = 0; k < 5; k++) {
      for (size_t i = 0; i < n; i++) out[i] = (uint16_t)i;
      tutti__avg_finish(out, n, d, nranks[k]);
      for (size_t i = 0; i < n; i++)
        if (out[i] != from(to((uint16_t)i) / (float)nranks[k]))
          harness_fail(__FILE__, __LINE__, "avg %s simd %d nranks %d: %#x -> %#x",
                       tutti__dtype_name(d), simd, nranks[k], (unsigned)(uint16_t)i, out[i]);
    }
  }
  tutti__simd_disabled = 0;
  free(a), free(b), free(out);
}

TEST(float16_kernels_match_conversions) { check_16bit_against_conversions(TUTTI_FLOAT16); }
TEST(bfloat16_kernels_match_conversions) { check_16bit_against_conversions(TUTTI_BFLOAT16); }

/* The conversions do their own rounding, so the FPU's rounding mode changes nothing: compare
 * with round-to-nearest over a spread of floats, densely where fp16 results are subnormal. */
TEST(conversions_ignore_rounding_mode) {
  static const int modes[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
  static uint16_t want_h[1 << 16], want_b[1 << 16];
  static float want_hf[1 << 16], want_bf[1 << 16];
  for (uint32_t k = 0; k < (1u << 16); k++) {
    float f = bitsf(k * 65521u + (k & 1 ? 0x80000000u : 0) + k % 3);
    want_h[k] = tutti__float_to_half(f), want_b[k] = tutti__float_to_bf16(f);
    want_hf[k] = tutti__half_to_float((uint16_t)k), want_bf[k] = tutti__bf16_to_float((uint16_t)k);
  }
  for (int m = 0; m < 3; m++) {
    ASSERT_EQ(fesetround(modes[m]), 0);
    for (uint32_t k = 0; k < (1u << 16); k++) {
      float f = bitsf(k * 65521u + (k & 1 ? 0x80000000u : 0) + k % 3);
      ASSERT_EQ(tutti__float_to_half(f), want_h[k]);
      ASSERT_EQ(tutti__float_to_bf16(f), want_b[k]);
      ASSERT_EQ(fbits(tutti__half_to_float((uint16_t)k)), fbits(want_hf[k]));
      ASSERT_EQ(fbits(tutti__bf16_to_float((uint16_t)k)), fbits(want_bf[k]));
    }
    /* Every float whose fp16 is subnormal or rounds to 0 / 0x400, each sign: fp16 has
     * 2^-24 ulps there, so the rounding sits in the float step. */
    for (uint32_t u = 0x32800000u; u <= 0x38800000u; u += 37) {
      ASSERT_EQ(fesetround(FE_TONEAREST), 0);
      uint16_t w = tutti__float_to_half(bitsf(u));
      ASSERT_EQ(fesetround(modes[m]), 0);
      ASSERT_EQ(tutti__float_to_half(bitsf(u)), w);
      ASSERT_EQ(tutti__float_to_half(bitsf(u | 0x80000000u)), w | 0x8000);
    }
  }
  fesetround(FE_TONEAREST);
}

TEST(count_zero_accepts_null) {
  tutti__reduce(NULL, NULL, NULL, 0, TUTTI_FLOAT32, TUTTI_SUM);
  tutti__avg_finish(NULL, 0, TUTTI_INT64, 4);
}

int main(int c, char **v) { return harness_main(c, v); }
