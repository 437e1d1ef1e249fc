/*
 * Element-wise reduction kernels: one generated function per dtype x op, picked from a table;
 * and the scaling of a pre-multiplied sum, one function per dtype.
 *
 * Every kernel walks the buffers in fixed 64-byte blocks and computes each block into a local
 * array before copying it out. That is what lets gcc -O2 vectorise: its default "very cheap"
 * cost model refuses a loop whose trip count is unknown (it would need a scalar epilogue) or
 * that needs a run-time alias check, and dst may alias a or b. A block has a constant trip
 * count and writes only the local array, so neither applies. Exact aliasing stays correct,
 * since element i is read before it is written. The scalar loop after it does the tail.
 */
#include <math.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define HAVE_X86_KERNELS 1
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>
#endif

#include "fp8.h"
#include "half.h"
#include "kernels.h"

#define BLOCK_BYTES 64

/* X(enum suffix, name, C type, unsigned twin, 64-bit type of the same signedness) */
#define INT_TYPES(X)                                                                        \
  X(INT8, int8, int8_t, uint8_t, int64_t)                                                   \
  X(UINT8, uint8, uint8_t, uint8_t, uint64_t)                                               \
  X(INT32, int32, int32_t, uint32_t, int64_t)                                               \
  X(UINT32, uint32, uint32_t, uint32_t, uint64_t)                                           \
  X(INT64, int64, int64_t, uint64_t, int64_t)                                               \
  X(UINT64, uint64, uint64_t, uint64_t, uint64_t)                                           \
  X(INT16, int16, int16_t, uint16_t, int64_t)                                               \
  X(UINT16, uint16, uint16_t, uint16_t, uint64_t)

/* X(enum suffix, name, C type, copysign for the type) */
#define FLOAT_TYPES(X) X(FLOAT32, float32, float, copysignf) X(FLOAT64, float64, double, copysign)

/* X(enum suffix, name, storage type, to float, from float) */
#define HALF_TYPES(X)                                                                       \
  X(FLOAT16, float16, uint16_t, tutti__half_decode, tutti__half_encode)                     \
  X(BFLOAT16, bfloat16, uint16_t, tutti__bf16_decode, tutti__bf16_encode)
#define FP8_TYPES(X)                                                                        \
  X(FLOAT8_E4M3, float8_e4m3, uint8_t, tutti__e4m3_decode, tutti__e4m3_encode)              \
  X(FLOAT8_E5M2, float8_e5m2, uint8_t, tutti__e5m2_decode, tutti__e5m2_encode)

/*
 * The element operations, name##_sum (x, y) and so on, plus name##_div (x, nranks) for AVG,
 * and name##_scale (x, s) for a pre-multiplied sum, where s is the scalar already loaded by
 * name##_scalar into name##_scalar_t (the type the arithmetic happens in).
 *
 * Integers: sums and products are taken in the unsigned twin, where overflow wraps by
 * definition; converting back to the signed type is modular on every compiler we support.
 * The 8- and 16-bit twins promote to int, where 65535 * 65535 would overflow, so products
 * start from 1u and happen in unsigned int. Division happens in 64 bits so
 * that nranks never has to fit the element type (int8 with 200 ranks). The bitwise ops work
 * on the bits as they are, sign included (two's complement).
 */
#define INT_OPS(E, name, T, U, W)                                                           \
  typedef T name##_scalar_t;                                                                \
  static inline T name##_sum(T x, T y) { return (T)(U)((U)x + (U)y); }                      \
  static inline T name##_prod(T x, T y) { return (T)(U)(1u * (U)x * (U)y); }                \
  static inline T name##_min(T x, T y) { return x < y ? x : y; }                            \
  static inline T name##_max(T x, T y) { return x > y ? x : y; }                            \
  static inline T name##_band(T x, T y) { return (T)(x & y); }                              \
  static inline T name##_bor(T x, T y) { return (T)(x | y); }                               \
  static inline T name##_bxor(T x, T y) { return (T)(x ^ y); }                              \
  static inline T name##_div(T x, int n) { return (T)((W)x / (W)n); }                       \
  static inline T name##_scale(T x, T s) { return name##_prod(x, s); }                      \
  SCALAR_LOAD(name, T, )

/*
 * Floats: MIN/MAX follow IEEE 754-2019 minimum/maximum. A NaN operand wins, and -0 < +0, so
 * min(+0, -0) and min(-0, +0) are both -0: algorithms that combine in different orders on
 * different ranks (recursive doubling) rely on commutativity to stay bit-identical. The sign
 * test is copysign(1, x) < 0 rather than signbit(x) because gcc cannot vectorise the latter
 * on doubles.
 */
#define FLOAT_OPS(E, name, T, COPYSIGN)                                                     \
  typedef T name##_scalar_t;                                                                \
  static inline T name##_sum(T x, T y) { return x + y; }                                    \
  static inline T name##_prod(T x, T y) { return x * y; }                                   \
  static inline T name##_min(T x, T y) {                                                    \
    return (x < y || isnan(x) || (x == y && COPYSIGN(1, x) < 0)) ? x : y;                   \
  }                                                                                         \
  static inline T name##_max(T x, T y) {                                                    \
    return (x > y || isnan(x) || (x == y && COPYSIGN(1, x) > 0)) ? x : y;                   \
  }                                                                                         \
  static inline T name##_div(T x, int n) { return x / (T)n; }                               \
  static inline T name##_scale(T x, T s) { return x * s; }                                  \
  SCALAR_LOAD(name, T, )

/* The 16- and 8-bit floats: in float32, one rounding back. Sums and products of two of them
 * are exact in float32 except for E5M2 sums over a wide exponent span, which float32 rounds
 * first; that is the "combine in float32" the API promises. */
#define HALF_OPS(E, name, T, TO, FROM)                                                      \
  typedef float name##_scalar_t;                                                            \
  static inline T name##_sum(T x, T y) { return FROM(TO(x) + TO(y)); }                      \
  static inline T name##_prod(T x, T y) { return FROM(TO(x) * TO(y)); }                     \
  static inline T name##_min(T x, T y) { return FROM(float32_min(TO(x), TO(y))); }          \
  static inline T name##_max(T x, T y) { return FROM(float32_max(TO(x), TO(y))); }          \
  static inline T name##_div(T x, int n) { return FROM(TO(x) / (float)n); }               \
  static inline T name##_scale(T x, float s) { return FROM(TO(x) * s); }                    \
  SCALAR_LOAD(name, T, TO)

/* name##_scalar: the premul scalar from memory of any alignment, through CONVERT if given. */
#define SCALAR_LOAD(name, T, CONVERT)                                                       \
  static inline name##_scalar_t name##_scalar(const void *p) {                              \
    T s;                                                                                    \
    memcpy(&s, p, sizeof s);                                                                \
    return CONVERT(s);                                                                      \
  }

INT_TYPES(INT_OPS)
FLOAT_TYPES(FLOAT_OPS)
HALF_TYPES(HALF_OPS)
FP8_TYPES(HALF_OPS)

/* dst = a (op) b over n elements; see the file comment for the blocking. The kernel is
 * PREFIX##fn; ATTR lets the same source be compiled again for a wider instruction set. */
#define BINARY_KERNEL(T, fn) BINARY_KERNEL_AS(T, fn, k_, )
#define BINARY_KERNEL_AS(T, fn, PREFIX, ATTR)                                               \
  ATTR static void PREFIX##fn(void *dst, const void *a, const void *b, size_t n) {          \
    enum { B = BLOCK_BYTES / sizeof(T) };                                                   \
    T *d = dst;                                                                             \
    const T *x = a, *y = b;                                                                 \
    size_t i = 0;                                                                           \
    for (; n - i >= B; i += B) {                                                            \
      T t[B];                                                                               \
      for (size_t j = 0; j < B; j++) t[j] = fn(x[i + j], y[i + j]);                         \
      memcpy(d + i, t, sizeof t);                                                           \
    }                                                                                       \
    for (; i < n; i++) d[i] = fn(x[i], y[i]);                                               \
  }

/* buf = buf / nranks in place: one pointer, so no aliasing question, only the trip count. */
#define DIV_KERNEL(T, fn) DIV_KERNEL_AS(T, fn, k_, )
#define DIV_KERNEL_AS(T, fn, PREFIX, ATTR)                                                  \
  ATTR static void PREFIX##fn(void *buf, size_t n, int nranks) {                            \
    enum { B = BLOCK_BYTES / sizeof(T) };                                                   \
    T *p = buf;                                                                             \
    size_t i = 0;                                                                           \
    for (; n - i >= B; i += B)                                                              \
      for (size_t j = 0; j < B; j++) p[i + j] = fn(p[i + j], nranks);                       \
    for (; i < n; i++) p[i] = fn(p[i], nranks);                                             \
  }

/* dst = src * s over n elements, blocked like BINARY_KERNEL since dst may alias src. The
 * scalar is loaded (and for the narrow floats, widened) once, outside the loop. */
#define PREMUL_KERNEL(T, name) PREMUL_KERNEL_AS(T, name, k_, )
#define PREMUL_KERNEL_AS(T, name, PREFIX, ATTR)                                             \
  ATTR static void PREFIX##name##_premul(void *dst, const void *src, size_t n,              \
                                         const void *scalar) {                              \
    enum { B = BLOCK_BYTES / sizeof(T) };                                                   \
    const name##_scalar_t s = name##_scalar(scalar);                                        \
    T *d = dst;                                                                             \
    const T *x = src;                                                                       \
    size_t i = 0;                                                                           \
    for (; n - i >= B; i += B) {                                                            \
      T t[B];                                                                               \
      for (size_t j = 0; j < B; j++) t[j] = name##_scale(x[i + j], s);                      \
      memcpy(d + i, t, sizeof t);                                                           \
    }                                                                                       \
    for (; i < n; i++) d[i] = name##_scale(x[i], s);                                        \
  }

#define KERNELS(E, name, T, ...)                                                            \
  BINARY_KERNEL(T, name##_sum)                                                              \
  BINARY_KERNEL(T, name##_prod)                                                             \
  BINARY_KERNEL(T, name##_min)                                                              \
  BINARY_KERNEL(T, name##_max)                                                              \
  DIV_KERNEL(T, name##_div)                                                                 \
  PREMUL_KERNEL(T, name)
#define INT_KERNELS(E, name, T, ...)                                                        \
  KERNELS(E, name, T)                                                                       \
  BINARY_KERNEL(T, name##_band)                                                             \
  BINARY_KERNEL(T, name##_bor)                                                              \
  BINARY_KERNEL(T, name##_bxor)

INT_TYPES(INT_KERNELS)
FLOAT_TYPES(KERNELS)
HALF_TYPES(KERNELS)
FP8_TYPES(KERNELS)

typedef void (*binary_fn)(void *, const void *, const void *, size_t);
typedef void (*div_fn)(void *, size_t, int);
typedef void (*premul_fn)(void *, const void *, size_t, const void *);

/* AVG shares SUM's kernel: the division happens once, in tutti__avg_finish. The bitwise
 * entries stay NULL for floats, which tutti__op_supports rejects before the lookup. */
#define BINARY_ROW(E, name, ...)                                                            \
  [TUTTI_##E] = {[TUTTI_SUM] = k_##name##_sum, [TUTTI_PROD] = k_##name##_prod,              \
                 [TUTTI_MIN] = k_##name##_min, [TUTTI_MAX] = k_##name##_max,                \
                 [TUTTI_AVG] = k_##name##_sum},
#define INT_ROW(E, name, ...)                                                               \
  [TUTTI_##E] = {[TUTTI_SUM] = k_##name##_sum,   [TUTTI_PROD] = k_##name##_prod,            \
                 [TUTTI_MIN] = k_##name##_min,   [TUTTI_MAX] = k_##name##_max,              \
                 [TUTTI_AVG] = k_##name##_sum,   [TUTTI_BAND] = k_##name##_band,            \
                 [TUTTI_BOR] = k_##name##_bor,   [TUTTI_BXOR] = k_##name##_bxor},
#define DIV_ROW(E, name, ...) [TUTTI_##E] = k_##name##_div,
#define PREMUL_ROW(E, name, ...) [TUTTI_##E] = k_##name##_premul,

enum { NUM_DTYPES = TUTTI_UINT16 + 1 };

static const binary_fn binary_kernels[NUM_DTYPES][TUTTI_NUM_OPS] = {
    INT_TYPES(INT_ROW) FLOAT_TYPES(BINARY_ROW) HALF_TYPES(BINARY_ROW) FP8_TYPES(BINARY_ROW)};
static const div_fn div_kernels[NUM_DTYPES] = {
    INT_TYPES(DIV_ROW) FLOAT_TYPES(DIV_ROW) HALF_TYPES(DIV_ROW) FP8_TYPES(DIV_ROW)};
static const premul_fn premul_kernels[NUM_DTYPES] = {
    INT_TYPES(PREMUL_ROW) FLOAT_TYPES(PREMUL_ROW) HALF_TYPES(PREMUL_ROW) FP8_TYPES(PREMUL_ROW)};

/*
 * x86 kernels for the 16- and 8-bit floats, chosen at run time (cpuid) and giving the same
 * bits as the portable ones (but see f16c_sum on two NaNs); the unit tests compare the two,
 * using tutti__simd_disabled.
 *
 * BFLOAT16 and the FLOAT8s with AVX2: the portable kernels above, compiled again for AVX2,
 * which doubles the vector width and has the 32 -> 16 bit packing and compares that SSE2
 * lacks (about twice the portable speed for all three).
 *
 * FLOAT16 with F16C: the conversions are one instruction per 8 elements. vcvtph2ps is exact
 * and quiets a NaN keeping its payload, and vcvtps2ph with an immediate rounding mode of
 * nearest-even (so MXCSR's is not used) rounds, overflows and quiets exactly like half.h. The
 * arithmetic in between is the same float operation, and MIN/MAX pick x or y by the same
 * rule as float32_min/max. The tail of fewer than 8 elements uses the portable functions.
 */
#ifdef HAVE_X86_KERNELS
#define AVX2_TARGET __attribute__((target("avx2")))
#define F16C_TARGET __attribute__((target("avx,f16c")))

enum { CPU_PROBED = 1, CPU_F16C = 2, CPU_AVX2 = 4 };

/* AVX (F16C's 256-bit form needs it) with the OS saving the ymm registers, then F16C and
 * AVX2. */
static int cpu_probe(void) {
  unsigned eax, ebx, ecx, edx, xcr0, xcr0_hi;
  int f = CPU_PROBED;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  if ((ecx & (bit_AVX | bit_OSXSAVE)) != (bit_AVX | bit_OSXSAVE)) return f;
  __asm__("xgetbv" : "=a"(xcr0), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0 & 6) != 6) return f; /* xmm and ymm state */
  if (ecx & bit_F16C) f |= CPU_F16C;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ebx & bit_AVX2)) f |= CPU_AVX2;
  return f;
}

/* cpuid is slow (a VM exit under a hypervisor), so ask once; racing threads store the same
 * answer. */
static int cpu_features(void) {
  static atomic_int cached;
  int f = atomic_load_explicit(&cached, memory_order_relaxed);
  if (f == 0) {
    f = cpu_probe();
    atomic_store_explicit(&cached, f, memory_order_relaxed);
  }
  return tutti__simd_disabled ? 0 : f;
}

#define AVX2_KERNELS(E, name, T, ...)                                                       \
  BINARY_KERNEL_AS(T, name##_sum, avx2_k_, AVX2_TARGET)                                     \
  BINARY_KERNEL_AS(T, name##_prod, avx2_k_, AVX2_TARGET)                                    \
  BINARY_KERNEL_AS(T, name##_min, avx2_k_, AVX2_TARGET)                                     \
  BINARY_KERNEL_AS(T, name##_max, avx2_k_, AVX2_TARGET)                                     \
  DIV_KERNEL_AS(T, name##_div, avx2_k_, AVX2_TARGET)                                        \
  PREMUL_KERNEL_AS(T, name, avx2_k_, AVX2_TARGET)

AVX2_KERNELS(BFLOAT16, bfloat16, uint16_t)
FP8_TYPES(AVX2_KERNELS)

F16C_TARGET static inline __m256 f16c_load(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
}

F16C_TARGET static inline void f16c_store(uint16_t *p, __m256 v) {
  _mm_storeu_si128((__m128i *)(void *)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

/* Like x + y in C, which NaN's payload survives when both operands are NaN is up to the
 * compiler's choice of operand order (x86 returns the first's); the result is a NaN either
 * way. */
F16C_TARGET static inline __m256 f16c_sum(__m256 x, __m256 y) { return _mm256_add_ps(x, y); }
F16C_TARGET static inline __m256 f16c_prod(__m256 x, __m256 y) { return _mm256_mul_ps(x, y); }

/* m ? a : b per lane, m all ones or all zeros. (Not blendv: gcc turns that into a generic
 * select, which without AVX2 it splits into a branch per lane.) */
F16C_TARGET static inline __m256 f16c_select(__m256 m, __m256 a, __m256 b) {
  return _mm256_or_ps(_mm256_and_ps(m, a), _mm256_andnot_ps(m, b));
}

/* float32_min/max's rule. When x == y (so neither is NaN) the two have the same bits unless
 * they are zeros of opposite signs, so x | y is the one min picks (-0 if either is) and x & y
 * the one max picks. */
F16C_TARGET static inline __m256 f16c_min(__m256 x, __m256 y) {
  __m256 take_x = _mm256_or_ps(_mm256_cmp_ps(x, y, _CMP_LT_OQ), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  __m256 r = f16c_select(take_x, x, y);
  return f16c_select(_mm256_cmp_ps(x, y, _CMP_EQ_OQ), _mm256_or_ps(x, y), r);
}

F16C_TARGET static inline __m256 f16c_max(__m256 x, __m256 y) {
  __m256 take_x = _mm256_or_ps(_mm256_cmp_ps(x, y, _CMP_GT_OQ), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  __m256 r = f16c_select(take_x, x, y);
  return f16c_select(_mm256_cmp_ps(x, y, _CMP_EQ_OQ), _mm256_and_ps(x, y), r);
}

#define F16C_BINARY_KERNEL(op)                                                              \
  F16C_TARGET static void f16c_k_##op(void *dst, const void *a, const void *b, size_t n) {  \
    uint16_t *d = dst;                                                                      \
    const uint16_t *x = a, *y = b;                                                          \
    size_t i = 0;                                                                           \
    for (; n - i >= 8; i += 8)                                                              \
      f16c_store(d + i, f16c_##op(f16c_load(x + i), f16c_load(y + i)));                     \
    for (; i < n; i++) d[i] = float16_##op(x[i], y[i]);                                     \
  }

F16C_BINARY_KERNEL(sum)
F16C_BINARY_KERNEL(prod)
F16C_BINARY_KERNEL(min)
F16C_BINARY_KERNEL(max)

F16C_TARGET static void f16c_k_div(void *buf, size_t n, int nranks) {
  uint16_t *p = buf;
  __m256 div = _mm256_set1_ps((float)nranks);
  size_t i = 0;
  for (; n - i >= 8; i += 8) f16c_store(p + i, _mm256_div_ps(f16c_load(p + i), div));
  for (; i < n; i++) p[i] = float16_div(p[i], nranks);
}

/* The product is exact in float32 (11 by 11 significant bits), so converting back is the
 * one rounding, as in float16_scale. */
F16C_TARGET static void f16c_k_premul(void *dst, const void *src, size_t n, const void *scalar) {
  uint16_t *d = dst;
  const uint16_t *x = src;
  float s = float16_scalar(scalar);
  __m256 vs = _mm256_set1_ps(s);
  size_t i = 0;
  for (; n - i >= 8; i += 8) f16c_store(d + i, _mm256_mul_ps(f16c_load(x + i), vs));
  for (; i < n; i++) d[i] = float16_scale(x[i], s);
}

typedef struct {
  int needs; /* CPU_*; 0: no x86 kernels for this dtype */
  binary_fn binary[TUTTI_NUM_OPS]; /* the bitwise ops stay NULL: floats only here */
  div_fn div;
  premul_fn premul;
} x86_row;

#define AVX2_ROW(E, name, ...)                                                              \
  [TUTTI_##E] = {CPU_AVX2,                                                                  \
                 {[TUTTI_SUM] = avx2_k_##name##_sum, [TUTTI_PROD] = avx2_k_##name##_prod,   \
                  [TUTTI_MIN] = avx2_k_##name##_min, [TUTTI_MAX] = avx2_k_##name##_max,     \
                  [TUTTI_AVG] = avx2_k_##name##_sum},                                       \
                 avx2_k_##name##_div,                                                       \
                 avx2_k_##name##_premul},

static const x86_row x86_kernels[NUM_DTYPES] = {
    [TUTTI_FLOAT16] = {CPU_F16C,
                       {[TUTTI_SUM] = f16c_k_sum, [TUTTI_PROD] = f16c_k_prod,
                        [TUTTI_MIN] = f16c_k_min, [TUTTI_MAX] = f16c_k_max,
                        [TUTTI_AVG] = f16c_k_sum},
                       f16c_k_div,
                       f16c_k_premul},
    AVX2_ROW(BFLOAT16, bfloat16) FP8_TYPES(AVX2_ROW)};

/* The x86 row for a valid dtype, if it has one and this CPU runs it. */
static const x86_row *x86_kernels_for(tutti_dtype_t dtype) {
  const x86_row *row = &x86_kernels[dtype];
  return row->needs && (cpu_features() & row->needs) ? row : NULL;
}
#endif

int tutti__simd_disabled;

/* Invalid dtypes and ops, and unsupported pairs (BAND on floats), are the caller's bug (the
 * API checks them); doing nothing beats indexing past the tables or calling NULL. */
void tutti__reduce(void *dst, const void *a, const void *b, size_t count, tutti_dtype_t dtype,
                   tutti_op_t op) {
  if (count == 0 || !tutti__op_supports((int)op, (int)dtype)) return;
#ifdef HAVE_X86_KERNELS
  const x86_row *x86 = x86_kernels_for(dtype);
  if (x86) {
    x86->binary[op](dst, a, b, count);
    return;
  }
#endif
  binary_kernels[dtype][op](dst, a, b, count);
}

void tutti__avg_finish(void *buf, size_t count, tutti_dtype_t dtype, int nranks) {
  /* Dividing by 1 changes nothing, so a single-rank communicator skips the pass. */
  if (count == 0 || nranks <= 1 || !tutti__dtype_valid((int)dtype)) return;
#ifdef HAVE_X86_KERNELS
  const x86_row *x86 = x86_kernels_for(dtype);
  if (x86) {
    x86->div(buf, count, nranks);
    return;
  }
#endif
  div_kernels[dtype](buf, count, nranks);
}

void tutti__premul(void *dst, const void *src, size_t count, tutti_dtype_t dtype,
                   const void *scalar) {
  if (count == 0 || !tutti__dtype_valid((int)dtype)) return;
#ifdef HAVE_X86_KERNELS
  const x86_row *x86 = x86_kernels_for(dtype);
  if (x86) {
    x86->premul(dst, src, count, scalar);
    return;
  }
#endif
  premul_kernels[dtype](dst, src, count, scalar);
}
