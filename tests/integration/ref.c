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

uint64_t ref_hash(uint64_t seed, int rank, size_t idx) {
  uint64_t x = seed ^ ((uint64_t)(unsigned)rank * 0x9E3779B97F4A7C15ull) ^
               ((uint64_t)idx * 0xD1B54A32D192ED03ull);
  x += 0x9E3779B97F4A7C15ull; /* splitmix64 finaliser */
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* Writes the low bytes of bits as an integer of dtype (wrapping, as the library must). */
static void store_int(tutti_dtype_t dtype, uint64_t bits, void *out) {
  switch (ref_dtype_size(dtype)) {
  case 1: { uint8_t v = (uint8_t)bits; memcpy(out, &v, 1); break; }
  case 4: { uint32_t v = (uint32_t)bits; memcpy(out, &v, 4); break; }
  default: memcpy(out, &bits, 8); break;
  }
}

/* Writes v as dtype; 16-bit types go through float (exact for every value this is used on). */
static void store_float(tutti_dtype_t dtype, double v, void *out) {
  if (dtype == TUTTI_FLOAT64) {
    memcpy(out, &v, 8);
  } else if (dtype == TUTTI_FLOAT32) {
    float f = (float)v;
    memcpy(out, &f, 4);
  } else {
    uint16_t h = dtype == TUTTI_FLOAT16 ? ref_f32_to_f16((float)v) : ref_f32_to_bf16((float)v);
    memcpy(out, &h, 2);
  }
}

/* The REF_EXACT input: [-4, 4] (unsigned [0, 8]) for SUM/MIN/MAX/AVG; for PROD one of
 * {1, 2, -1} (unsigned {1, 2}), with factors of 2 only from the first 8 ranks, so that
 * |product| <= 256 and every partial product is exact in every dtype. */
static int64_t exact_value(const ref_case_t *c, int rank, size_t idx) {
  uint64_t h = ref_hash(c->seed, rank, idx) >> 8;
  int sign = ref_dtype_is_signed(c->dtype);
  if (c->op == TUTTI_PROD) {
    int64_t v = sign ? (int64_t[]){1, 2, -1}[h % 3] : (int64_t)(1 + (h & 1));
    return (v == 2 && rank >= 8) ? 1 : v;
  }
  return sign ? (int64_t)(h % 9) - 4 : (int64_t)(h % 9);
}

void ref_input(const ref_case_t *c, int rank, size_t idx, void *out) {
  int is_float = ref_dtype_is_float(c->dtype);
  if (c->mode == REF_EXACT) {
    int64_t v = exact_value(c, rank, idx);
    if (is_float)
      store_float(c->dtype, (double)v, out);
    else
      store_int(c->dtype, (uint64_t)v, out);
  } else if (c->mode == REF_RANDOM && is_float) {
    uint64_t h = ref_hash(c->seed, rank, idx);
    store_float(c->dtype, (double)(h >> 11) * 0x1p-52 - 1.0, out);
  } else {
    uint64_t h = ref_hash(c->seed, rank, idx);
    memcpy(out, &h, ref_dtype_size(c->dtype)); /* little-endian: the low bytes */
  }
}

void ref_fill(const ref_case_t *c, int rank, size_t first, size_t n, void *buf) {
  size_t size = ref_dtype_size(c->dtype);
  char *p = buf;
  for (size_t i = 0; i < n; i++) ref_input(c, rank, first + i, p + i * size);
}

static double dabs(double v) { return v < 0 ? -v : v; }

/* ---- Expected results ----------------------------------------------------------------- */

void ref_expect_reduce(const ref_case_t *c, size_t idx, void *out) {
  int n = c->nranks;
  if (!ref_dtype_is_float(c->dtype)) {
    int64_t acc = exact_value(c, 0, idx);
    uint64_t prod = (uint64_t)acc; /* wrapping product, truncated to the dtype at the end */
    for (int r = 1; r < n; r++) {
      int64_t v = exact_value(c, r, idx);
      switch (c->op) {
      case TUTTI_SUM: case TUTTI_AVG: acc += v; break;
      case TUTTI_PROD: prod *= (uint64_t)v; break;
      case TUTTI_MIN: acc = v < acc ? v : acc; break;
      case TUTTI_MAX: acc = v > acc ? v : acc; break;
      }
    }
    if (c->op == TUTTI_AVG) acc /= n; /* C division truncates toward zero */
    store_int(c->dtype, c->op == TUTTI_PROD ? prod : (uint64_t)acc, out);
    return;
  }
  double acc = (double)exact_value(c, 0, idx);
  for (int r = 1; r < n; r++) {
    double v = (double)exact_value(c, r, idx);
    switch (c->op) {
    case TUTTI_SUM: case TUTTI_AVG: acc += v; break;
    case TUTTI_PROD: acc *= v; break;
    case TUTTI_MIN: acc = v < acc ? v : acc; break;
    case TUTTI_MAX: acc = v > acc ? v : acc; break;
    }
  }
  if (c->op != TUTTI_AVG || c->dtype == TUTTI_FLOAT64) {
    store_float(c->dtype, c->op == TUTTI_AVG ? acc / (double)n : acc, out);
    return;
  }
  /* AVG of float32 and of the 16-bit types: the exact sum as float, divided in float, then
   * (16-bit types) rounded once to nearest even. */
  float avg = (float)acc / (float)n;
  if (c->dtype == TUTTI_FLOAT32) {
    memcpy(out, &avg, 4);
  } else {
    uint16_t h = c->dtype == TUTTI_FLOAT16 ? ref_f32_to_f16(avg) : ref_f32_to_bf16(avg);
    memcpy(out, &h, 2);
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
  }
  return 0;
}

double ref_reduce_approx(const ref_case_t *c, size_t idx, double *tolerance) {
  /* eps: twice the unit roundoff; tiny: an absolute floor for results near underflow. */
  double eps, tiny;
  switch (c->dtype) {
  case TUTTI_FLOAT16: eps = 0x1p-10; tiny = 0x1p-24; break;
  case TUTTI_BFLOAT16: eps = 0x1p-7; tiny = 0x1p-126; break;
  case TUTTI_FLOAT32: eps = 0x1p-23; tiny = 0x1p-126; break;
  default: eps = 0x1p-52; tiny = 0x1p-1022; break;
  }
  int n = c->nranks;
  unsigned char elem[8];
  double acc = 0, mag = 0;
  for (int r = 0; r < n; r++) {
    ref_input(c, r, idx, elem);
    double v = ref_to_double(c->dtype, elem);
    if (r == 0) {
      acc = v;
      mag = dabs(v);
      continue;
    }
    switch (c->op) {
    case TUTTI_SUM: case TUTTI_AVG: acc += v; mag += dabs(v); break;
    case TUTTI_PROD: acc *= v; mag *= dabs(v); break;
    case TUTTI_MIN: acc = v < acc ? v : acc; break;
    case TUTTI_MAX: acc = v > acc ? v : acc; break;
    }
  }
  if (c->op == TUTTI_MIN || c->op == TUTTI_MAX) {
    *tolerance = 0;
    return acc;
  }
  double tol = (double)(n + 1) * eps * mag + (double)n * tiny;
  if (c->op == TUTTI_AVG) {
    acc /= n;
    tol = tol / n + eps * dabs(acc) + tiny;
  }
  *tolerance = tol;
  return acc;
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
