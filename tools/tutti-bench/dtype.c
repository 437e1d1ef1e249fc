/*
 * Element access by dtype for tutti-bench: the check stores small integers and reads results
 * back as doubles, so one pair of functions serves every dtype. fp16 and bf16 are converted by
 * hand (no libm, no compiler half type) and only need to be exact for those small integers on
 * the way in; on the way out they decode any bit pattern, so a wrong result reads as wrong.
 */
#include "bench.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static const struct {
  const char *name, *alias;
  size_t size;
} dtypes[] = {
    [TUTTI_INT8] = {"int8", "char", 1},        [TUTTI_UINT8] = {"uint8", "uchar", 1},
    [TUTTI_INT32] = {"int32", "int", 4},       [TUTTI_UINT32] = {"uint32", "uint", 4},
    [TUTTI_INT64] = {"int64", "long", 8},      [TUTTI_UINT64] = {"uint64", "ulong", 8},
    [TUTTI_FLOAT16] = {"float16", "half", 2},  [TUTTI_BFLOAT16] = {"bfloat16", "bf16", 2},
    [TUTTI_FLOAT32] = {"float32", "float", 4}, [TUTTI_FLOAT64] = {"float64", "double", 8},
};
#define NDTYPES ((int)(sizeof(dtypes) / sizeof(dtypes[0])))

size_t bench_esize(tutti_dtype_t dt) {
  return (int)dt >= 0 && (int)dt < NDTYPES ? dtypes[dt].size : 0;
}

int bench_dtype_parse(const char *s, tutti_dtype_t *dt) {
  for (int i = 0; i < NDTYPES; i++)
    if (strcmp(s, dtypes[i].name) == 0 || strcmp(s, dtypes[i].alias) == 0) {
      *dt = (tutti_dtype_t)i;
      return 0;
    }
  return -1;
}

const char *bench_dtype_name(tutti_dtype_t dt) { return dtypes[dt].name; }

int bench_dtype_is_float(tutti_dtype_t dt) {
  return dt == TUTTI_FLOAT16 || dt == TUTTI_BFLOAT16 || dt == TUTTI_FLOAT32 ||
         dt == TUTTI_FLOAT64;
}

/* One element of any dtype; fp16 and bf16 are held as their bits. */
union elem {
  int8_t i8; uint8_t u8; int32_t i32; uint32_t u32; int64_t i64; uint64_t u64;
  uint16_t h; float f; double d;
};

static float bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

static uint32_t float_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) /* zero or subnormal: m * 2^-24 */
    return (sign ? -1.0f : 1.0f) * (float)m / 16777216.0f;
  if (e == 31)
    return bits_to_float(sign | 0x7f800000u | (m << 13));
  return bits_to_float(sign | ((e - 15 + 127) << 23) | (m << 13));
}

/* Exact for values fp16 represents exactly (the bench's inputs): no rounding is attempted. */
static uint16_t float_to_half(float f) {
  uint32_t u = float_to_bits(f), sign = (u >> 16) & 0x8000;
  if ((u & 0x7fffffff) == 0)
    return (uint16_t)sign;
  uint32_t e = ((u >> 23) & 0xff) - 127 + 15;
  return (uint16_t)(sign | (e << 10) | ((u >> 13) & 0x3ff));
}

/* The dtypes stored as plain C types, with their member in union elem. */
#define PLAIN_TYPES(X)                                                                        \
  X(TUTTI_INT8, i8) X(TUTTI_UINT8, u8) X(TUTTI_INT32, i32) X(TUTTI_UINT32, u32)              \
  X(TUTTI_INT64, i64) X(TUTTI_UINT64, u64) X(TUTTI_FLOAT32, f) X(TUTTI_FLOAT64, d)

double bench_get(const void *buf, size_t i, tutti_dtype_t dt) {
  union elem v;
  memcpy(&v, (const char *)buf + i * bench_esize(dt), bench_esize(dt));
  switch (dt) {
#define GET(t, m) case t: return (double)v.m;
  PLAIN_TYPES(GET)
#undef GET
  case TUTTI_FLOAT16: return half_to_float(v.h);
  case TUTTI_BFLOAT16: return bits_to_float((uint32_t)v.h << 16);
  default: break; /* 8-bit floats are not benchmarked yet */
  }
  return NAN;
}

void bench_set(void *buf, size_t i, tutti_dtype_t dt, double x) {
  union elem v;
  /* Integers go through int64 first so that, e.g., 200 stored as int8 wraps to -56 exactly
   * as a wrapping sum computed in the dtype would. */
  int is_float = bench_dtype_is_float(dt);
  switch (dt) {
#define SET(t, m) case t: if (is_float) v.m = x; else v.m = (int64_t)x; break;
  PLAIN_TYPES(SET)
#undef SET
  case TUTTI_FLOAT16: v.h = float_to_half((float)x); break;
  case TUTTI_BFLOAT16: v.h = (uint16_t)(float_to_bits((float)x) >> 16); break;
  default: break; /* 8-bit floats are not benchmarked yet */
  }
  memcpy((char *)buf + i * bench_esize(dt), &v, bench_esize(dt));
}
