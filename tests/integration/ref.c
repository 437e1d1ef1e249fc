/*
 * The reference side of coll_check (see ref.h). Reductions are computed here element by element
 * from every rank's regenerated input, in int64/uint64/double, and converted to the dtype only
 * at the end, so the expected bits do not depend on any combining order.
 */
#include "ref.h"

#include <string.h>

static const char *const dtype_names[REF_NUM_DTYPES] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32",
    "float64"};
static const size_t dtype_sizes[REF_NUM_DTYPES] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
static const char *const op_names[REF_NUM_OPS] = {"SUM", "PROD", "MIN", "MAX", "AVG"};

size_t ref_dtype_size(tutti_dtype_t dtype) { return dtype_sizes[dtype]; }
const char *ref_dtype_name(tutti_dtype_t dtype) { return dtype_names[dtype]; }
const char *ref_op_name(tutti_op_t op) { return op_names[op]; }

int ref_dtype_is_float(tutti_dtype_t dtype) { return dtype >= TUTTI_FLOAT16; }

int ref_dtype_is_signed(tutti_dtype_t dtype) {
  return dtype == TUTTI_INT8 || dtype == TUTTI_INT32 || dtype == TUTTI_INT64 ||
         ref_dtype_is_float(dtype);
}

/* ---- fp16 / bf16 ---------------------------------------------------------------------- */

uint16_t ref_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t man = x & 0x7fffffu;
  if (exp == 0xffu) /* infinity, or a NaN kept quiet with its top payload bits */
    return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    /* Subnormal half (or zero): the value in units of 2^-24 is man' >> (14 - e). */
    if (e < -10) return (uint16_t)sign;
    man |= 0x800000u;
    int shift = 14 - e;
    uint32_t h = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (h & 1u))) h++; /* a carry into 0x400 is the min normal */
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)e << 10) | (man >> 13);
  uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* a carry may reach infinity */
  if (h >= 0x7c00u) h = 0x7c00u;
  return (uint16_t)(sign | h);
}

float ref_f16_to_f32(uint16_t h) {
  uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    float v = (float)man * (1.0f / 16777216.0f); /* exact: man < 2^10, scale a power of 2 */
    return sign ? -v : v;
  }
  if (exp == 31)
    x = sign | 0x7f800000u | (man << 13);
  else
    x = sign | ((exp + 112u) << 23) | (man << 13);
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

uint16_t ref_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

float ref_bf16_to_f32(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

/* ---- Inputs --------------------------------------------------------------------------- */

/* The references work on chunks of CHUNK elements: values are made or combined in int64 or
 * double arrays, and converted to the dtype by one loop per chunk. */
#define CHUNK 1024

uint64_t ref_hash(uint64_t seed, int rank, size_t idx) {
  uint64_t x = seed ^ ((uint64_t)(unsigned)rank * 0x9E3779B97F4A7C15ull) ^
               ((uint64_t)idx * 0xD1B54A32D192ED03ull);
  x += 0x9E3779B97F4A7C15ull; /* splitmix64 finaliser */
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* Writes the low bytes of each bits[j] as an integer of dtype (wrapping, as the library
 * must); for the raw mode, any dtype. */
static void store_ints(tutti_dtype_t dtype, const uint64_t *bits, size_t n, void *out) {
  switch (ref_dtype_size(dtype)) {
  case 1: for (size_t j = 0; j < n; j++) ((uint8_t *)out)[j] = (uint8_t)bits[j]; break;
  case 2: for (size_t j = 0; j < n; j++) ((uint16_t *)out)[j] = (uint16_t)bits[j]; break;
  case 4: for (size_t j = 0; j < n; j++) ((uint32_t *)out)[j] = (uint32_t)bits[j]; break;
  default: memcpy(out, bits, n * 8); break;
  }
}

/* Writes each v[j] as dtype; the 16-bit types go through float (exact for every value this is
 * used on except random inputs, where any rounding is fine: they are inputs). */
static void store_floats(tutti_dtype_t dtype, const double *v, size_t n, void *out) {
  switch (dtype) {
  case TUTTI_FLOAT64: memcpy(out, v, n * 8); break;
  case TUTTI_FLOAT32: for (size_t j = 0; j < n; j++) ((float *)out)[j] = (float)v[j]; break;
  case TUTTI_FLOAT16:
    for (size_t j = 0; j < n; j++) ((uint16_t *)out)[j] = ref_f32_to_f16((float)v[j]);
    break;
  default:
    for (size_t j = 0; j < n; j++) ((uint16_t *)out)[j] = ref_f32_to_bf16((float)v[j]);
    break;
  }
}

/* The REF_EXACT input: [-4, 4] (unsigned [0, 8]) for SUM/MIN/MAX/AVG; for PROD one of
 * {1, 2, -1} (unsigned {1, 2}), with factors of 2 only from the first 8 ranks, so that
 * |product| <= 256 and every partial product is exact in every dtype. Each element takes one
 * byte of a hash shared by 8 neighbours: cheap, and still a different value sequence per rank,
 * per case and per element. */
static int64_t exact_value(unsigned byte, int sign, int prod, int high_rank) {
  if (!prod) return sign ? (int64_t)(byte % 9) - 4 : (int64_t)(byte % 9);
  int64_t v = sign ? (byte % 3 == 0 ? 1 : byte % 3 == 1 ? 2 : -1) : (int64_t)(1 + (byte & 1));
  return (v == 2 && high_rank) ? 1 : v;
}

/* exact_value for every byte, indexed [sign][prod][rank >= 8][byte]. */
static const int64_t *exact_table(int sign, int prod, int high_rank) {
  static int64_t table[2][2][2][256];
  static int built;
  if (!built) {
    for (int s = 0; s < 2; s++)
      for (int p = 0; p < 2; p++)
        for (int h = 0; h < 2; h++)
          for (unsigned b = 0; b < 256; b++) table[s][p][h][b] = exact_value(b, s, p, h);
    built = 1;
  }
  return table[sign][prod][high_rank];
}

/* Elements first .. first+n-1 (n <= CHUNK) of rank's input as int64 (REF_EXACT), double
 * (REF_RANDOM on floats) or raw 64-bit patterns (anything else). Returns which it made. */
enum { AS_INT, AS_DOUBLE, AS_RAW };
static int gen_chunk(const ref_case_t *c, int rank, size_t first, size_t n, int64_t *iv,
                     double *dv) {
  if (c->mode == REF_EXACT) {
    const int64_t *table =
        exact_table(ref_dtype_is_signed(c->dtype), c->op == TUTTI_PROD, rank >= 8);
    uint64_t h = 0;
    for (size_t j = 0; j < n; j++) {
      size_t idx = first + j;
      if (j == 0 || (idx & 7) == 0) h = ref_hash(c->seed, rank, idx >> 3);
      iv[j] = table[(h >> ((idx & 7) * 8)) & 0xffu];
    }
    return AS_INT;
  }
  if (c->mode == REF_RANDOM && ref_dtype_is_float(c->dtype)) {
    for (size_t j = 0; j < n; j++)
      dv[j] = (double)(ref_hash(c->seed, rank, first + j) >> 11) * 0x1p-52 - 1.0;
    return AS_DOUBLE;
  }
  for (size_t j = 0; j < n; j++) iv[j] = (int64_t)ref_hash(c->seed, rank, first + j);
  return AS_RAW;
}

void ref_fill(const ref_case_t *c, int rank, size_t first, size_t n, void *buf) {
  int64_t iv[CHUNK];
  double dv[CHUNK];
  size_t es = ref_dtype_size(c->dtype);
  for (size_t base = 0; base < n; base += CHUNK) {
    size_t m = n - base < CHUNK ? n - base : CHUNK;
    char *out = (char *)buf + base * es;
    int kind = gen_chunk(c, rank, first + base, m, iv, dv);
    if (kind == AS_INT && ref_dtype_is_float(c->dtype)) {
      for (size_t j = 0; j < m; j++) dv[j] = (double)iv[j];
      kind = AS_DOUBLE;
    }
    if (kind == AS_DOUBLE)
      store_floats(c->dtype, dv, m, out);
    else
      store_ints(c->dtype, (const uint64_t *)iv, m, out);
  }
}

void ref_input(const ref_case_t *c, int rank, size_t idx, void *out) {
  ref_fill(c, rank, idx, 1, out);
}

static double dabs(double v) { return v < 0 ? -v : v; }

/* ---- Expected results ----------------------------------------------------------------- */

/* Combines rank r's chunk into acc (integers: the sum/min/max in acc, the wrapping product in
 * prod). */
static void combine_ints(tutti_op_t op, int64_t *acc, uint64_t *prod, const int64_t *v,
                         size_t m) {
  switch (op) {
  case TUTTI_SUM: case TUTTI_AVG: for (size_t j = 0; j < m; j++) acc[j] += v[j]; break;
  case TUTTI_PROD: for (size_t j = 0; j < m; j++) prod[j] *= (uint64_t)v[j]; break;
  case TUTTI_MIN: for (size_t j = 0; j < m; j++) acc[j] = v[j] < acc[j] ? v[j] : acc[j]; break;
  case TUTTI_MAX: for (size_t j = 0; j < m; j++) acc[j] = v[j] > acc[j] ? v[j] : acc[j]; break;
  case TUTTI_BAND: for (size_t j = 0; j < m; j++) acc[j] &= v[j]; break;
  case TUTTI_BOR: for (size_t j = 0; j < m; j++) acc[j] |= v[j]; break;
  case TUTTI_BXOR: for (size_t j = 0; j < m; j++) acc[j] ^= v[j]; break;
  default: break; /* no other operation reaches the reference */
  }
}

static void combine_doubles(tutti_op_t op, double *acc, const double *v, size_t m) {
  switch (op) {
  case TUTTI_SUM: case TUTTI_AVG: for (size_t j = 0; j < m; j++) acc[j] += v[j]; break;
  case TUTTI_PROD: for (size_t j = 0; j < m; j++) acc[j] *= v[j]; break;
  case TUTTI_MIN: for (size_t j = 0; j < m; j++) acc[j] = v[j] < acc[j] ? v[j] : acc[j]; break;
  case TUTTI_MAX: for (size_t j = 0; j < m; j++) acc[j] = v[j] > acc[j] ? v[j] : acc[j]; break;
  default: break; /* bitwise operations apply to integers only */
  }
}

/* One chunk of ref_expect_reduce (m <= CHUNK). */
static void expect_chunk(const ref_case_t *c, size_t first, size_t m, void *out) {
  int n = c->nranks;
  int64_t acc[CHUNK], v[CHUNK];
  uint64_t prod[CHUNK];
  double dacc[CHUNK], dv[CHUNK];
  gen_chunk(c, 0, first, m, acc, dv);
  for (size_t j = 0; j < m; j++) prod[j] = (uint64_t)acc[j];
  for (int r = 1; r < n; r++) {
    gen_chunk(c, r, first, m, v, dv);
    combine_ints(c->op, acc, prod, v, m); /* exact: |values| stay far below 2^53 */
  }
  if (!ref_dtype_is_float(c->dtype)) {
    if (c->op == TUTTI_AVG)
      for (size_t j = 0; j < m; j++) acc[j] /= n; /* C division truncates toward zero */
    store_ints(c->dtype, c->op == TUTTI_PROD ? prod : (const uint64_t *)acc, m, out);
    return;
  }
  for (size_t j = 0; j < m; j++)
    dacc[j] = c->op == TUTTI_PROD ? (double)(int64_t)prod[j] : (double)acc[j];
  if (c->op != TUTTI_AVG) {
    store_floats(c->dtype, dacc, m, out);
  } else if (c->dtype == TUTTI_FLOAT64) {
    for (size_t j = 0; j < m; j++) ((double *)out)[j] = dacc[j] / (double)n;
  } else {
    /* AVG of float32 and of the 16-bit types: the exact sum as float, divided in float,
     * then (16-bit types) rounded once to nearest even. */
    for (size_t j = 0; j < m; j++) {
      float avg = (float)dacc[j] / (float)n;
      if (c->dtype == TUTTI_FLOAT32)
        ((float *)out)[j] = avg;
      else
        ((uint16_t *)out)[j] =
            c->dtype == TUTTI_FLOAT16 ? ref_f32_to_f16(avg) : ref_f32_to_bf16(avg);
    }
  }
}

void ref_expect_reduce(const ref_case_t *c, size_t first, size_t n, void *out) {
  size_t es = ref_dtype_size(c->dtype);
  for (size_t base = 0; base < n; base += CHUNK) {
    size_t m = n - base < CHUNK ? n - base : CHUNK;
    expect_chunk(c, first + base, m, (char *)out + base * es);
  }
}

double ref_to_double(tutti_dtype_t dtype, const void *elem) {
  switch (dtype) {
  case TUTTI_INT8: { int8_t v; memcpy(&v, elem, 1); return v; }
  case TUTTI_UINT8: { uint8_t v; memcpy(&v, elem, 1); return v; }
  case TUTTI_INT32: { int32_t v; memcpy(&v, elem, 4); return v; }
  case TUTTI_UINT32: { uint32_t v; memcpy(&v, elem, 4); return v; }
  case TUTTI_INT64: { int64_t v; memcpy(&v, elem, 8); return (double)v; }
  case TUTTI_UINT64: { uint64_t v; memcpy(&v, elem, 8); return (double)v; }
  case TUTTI_FLOAT16: { uint16_t v; memcpy(&v, elem, 2); return ref_f16_to_f32(v); }
  case TUTTI_BFLOAT16: { uint16_t v; memcpy(&v, elem, 2); return ref_bf16_to_f32(v); }
  case TUTTI_FLOAT32: { float v; memcpy(&v, elem, 4); return v; }
  case TUTTI_FLOAT64: { double v; memcpy(&v, elem, 8); return v; }
  default: break; /* 8-bit floats are not in this matrix yet */
  }
  return 0;
}

/* One chunk of ref_reduce_approx (m <= CHUNK). */
static void approx_chunk(const ref_case_t *c, size_t first, size_t m, double *want,
                         double *tol) {
  /* eps: twice the unit roundoff; tiny: an absolute floor for results near underflow. */
  double eps, tiny;
  switch (c->dtype) {
  case TUTTI_FLOAT16: eps = 0x1p-10; tiny = 0x1p-24; break;
  case TUTTI_BFLOAT16: eps = 0x1p-7; tiny = 0x1p-126; break;
  case TUTTI_FLOAT32: eps = 0x1p-23; tiny = 0x1p-126; break;
  default: eps = 0x1p-52; tiny = 0x1p-1022; break;
  }
  int n = c->nranks;
  size_t es = ref_dtype_size(c->dtype);
  unsigned char elems[CHUNK * 8];
  double v[CHUNK], mag[CHUNK], absv[CHUNK];
  for (int r = 0; r < n; r++) {
    ref_fill(c, r, first, m, elems); /* the inputs as the library sees them: rounded */
    for (size_t j = 0; j < m; j++) {
      v[j] = ref_to_double(c->dtype, elems + j * es);
      absv[j] = dabs(v[j]);
    }
    if (r == 0) {
      memcpy(want, v, m * sizeof *v);
      memcpy(mag, absv, m * sizeof *v);
      continue;
    }
    combine_doubles(c->op, want, v, m);
    combine_doubles(c->op == TUTTI_PROD ? TUTTI_PROD : TUTTI_SUM, mag, absv, m);
  }
  for (size_t j = 0; j < m; j++) {
    if (c->op == TUTTI_MIN || c->op == TUTTI_MAX) {
      tol[j] = 0; /* the result is one of the inputs */
      continue;
    }
    tol[j] = (double)(n + 1) * eps * mag[j] + (double)n * tiny;
    if (c->op == TUTTI_AVG) {
      want[j] /= n;
      tol[j] = tol[j] / n + eps * dabs(want[j]) + tiny;
    }
  }
}

void ref_reduce_approx(const ref_case_t *c, size_t first, size_t n, double *want,
                       double *tol) {
  for (size_t base = 0; base < n; base += CHUNK) {
    size_t m = n - base < CHUNK ? n - base : CHUNK;
    approx_chunk(c, first + base, m, want + base, tol + base);
  }
}

uint64_t ref_fnv1a(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
