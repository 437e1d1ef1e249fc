/*
 * Element-wise reduction kernels: one generated function per dtype x op, picked from a table.
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

#include "kernels.h"

#define BLOCK_BYTES 64

/* X(enum suffix, name, C type, unsigned twin, 64-bit type of the same signedness) */
#define INT_TYPES(X)                                                                        \
  X(INT8, int8, int8_t, uint8_t, int64_t)                                                   \
  X(UINT8, uint8, uint8_t, uint8_t, uint64_t)                                               \
  X(INT32, int32, int32_t, uint32_t, int64_t)                                               \
  X(UINT32, uint32, uint32_t, uint32_t, uint64_t)                                           \
  X(INT64, int64, int64_t, uint64_t, int64_t)                                               \
  X(UINT64, uint64, uint64_t, uint64_t, uint64_t)

/* X(enum suffix, name, C type, copysign for the type) */
#define FLOAT_TYPES(X) X(FLOAT32, float32, float, copysignf) X(FLOAT64, float64, double, copysign)

/* X(enum suffix, name, storage type, to float, from float) */
#define HALF_TYPES(X)                                                                       \
  X(FLOAT16, float16, uint16_t, tutti__half_to_float, tutti__float_to_half)                 \
  X(BFLOAT16, bfloat16, uint16_t, tutti__bf16_to_float, tutti__float_to_bf16)

/*
 * The element operations, name##_sum (x, y) and so on, plus name##_div (x, nranks) for AVG.
 *
 * Integers: sums and products are taken in the unsigned twin, where overflow wraps by
 * definition; converting back to the signed type is modular on every compiler we support.
 * The 8-bit twin promotes to int, but 255 * 255 still fits. Division happens in 64 bits so
 * that nranks never has to fit the element type (int8 with 200 ranks).
 */
#define INT_OPS(E, name, T, U, W)                                                           \
  static inline T name##_sum(T x, T y) { return (T)(U)((U)x + (U)y); }                      \
  static inline T name##_prod(T x, T y) { return (T)(U)((U)x * (U)y); }                     \
  static inline T name##_min(T x, T y) { return x < y ? x : y; }                            \
  static inline T name##_max(T x, T y) { return x > y ? x : y; }                            \
  static inline T name##_div(T x, int n) { return (T)((W)x / (W)n); }

/*
 * Floats: MIN/MAX follow IEEE 754-2019 minimum/maximum. A NaN operand wins, and -0 < +0, so
 * min(+0, -0) and min(-0, +0) are both -0: algorithms that combine in different orders on
 * different ranks (recursive doubling) rely on commutativity to stay bit-identical. The sign
 * test is copysign(1, x) < 0 rather than signbit(x) because gcc cannot vectorise the latter
 * on doubles.
 */
#define FLOAT_OPS(E, name, T, COPYSIGN)                                                     \
  static inline T name##_sum(T x, T y) { return x + y; }                                    \
  static inline T name##_prod(T x, T y) { return x * y; }                                   \
  static inline T name##_min(T x, T y) {                                                    \
    return (x < y || isnan(x) || (x == y && COPYSIGN(1, x) < 0)) ? x : y;                   \
  }                                                                                         \
  static inline T name##_max(T x, T y) {                                                    \
    return (x > y || isnan(x) || (x == y && COPYSIGN(1, x) > 0)) ? x : y;                   \
  }                                                                                         \
  static inline T name##_div(T x, int n) { return x / (T)n; }

#define HALF_OPS(E, name, T, TO, FROM)                                                      \
  static inline T name##_sum(T x, T y) { return FROM(TO(x) + TO(y)); }                      \
  static inline T name##_prod(T x, T y) { return FROM(TO(x) * TO(y)); }                     \
  static inline T name##_min(T x, T y) { return FROM(float32_min(TO(x), TO(y))); }          \
  static inline T name##_max(T x, T y) { return FROM(float32_max(TO(x), TO(y))); }          \
  static inline T name##_div(T x, int n) { return FROM(TO(x) / (float)n); }

INT_TYPES(INT_OPS)
FLOAT_TYPES(FLOAT_OPS)
HALF_TYPES(HALF_OPS)

/* dst = a (op) b over n elements; see the file comment for the blocking. */
#define BINARY_KERNEL(T, fn)                                                                \
  static void k_##fn(void *dst, const void *a, const void *b, size_t n) {                   \
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
#define DIV_KERNEL(T, fn)                                                                   \
  static void k_##fn(void *buf, size_t n, int nranks) {                                     \
    enum { B = BLOCK_BYTES / sizeof(T) };                                                   \
    T *p = buf;                                                                             \
    size_t i = 0;                                                                           \
    for (; n - i >= B; i += B)                                                              \
      for (size_t j = 0; j < B; j++) p[i + j] = fn(p[i + j], nranks);                       \
    for (; i < n; i++) p[i] = fn(p[i], nranks);                                             \
  }

#define KERNELS(E, name, T, ...)                                                            \
  BINARY_KERNEL(T, name##_sum)                                                              \
  BINARY_KERNEL(T, name##_prod)                                                             \
  BINARY_KERNEL(T, name##_min)                                                              \
  BINARY_KERNEL(T, name##_max)                                                              \
  DIV_KERNEL(T, name##_div)

INT_TYPES(KERNELS)
FLOAT_TYPES(KERNELS)
HALF_TYPES(KERNELS)

typedef void (*binary_fn)(void *, const void *, const void *, size_t);
typedef void (*div_fn)(void *, size_t, int);

/* AVG shares SUM's kernel: the division happens once, in tutti__avg_finish. */
#define BINARY_ROW(E, name, ...)                                                            \
  [TUTTI_##E] = {[TUTTI_SUM] = k_##name##_sum, [TUTTI_PROD] = k_##name##_prod,              \
                 [TUTTI_MIN] = k_##name##_min, [TUTTI_MAX] = k_##name##_max,                \
                 [TUTTI_AVG] = k_##name##_sum},
#define DIV_ROW(E, name, ...) [TUTTI_##E] = k_##name##_div,

static const binary_fn binary_kernels[TUTTI_FLOAT64 + 1][TUTTI_AVG + 1] = {
    INT_TYPES(BINARY_ROW) FLOAT_TYPES(BINARY_ROW) HALF_TYPES(BINARY_ROW)};
static const div_fn div_kernels[TUTTI_FLOAT64 + 1] = {
    INT_TYPES(DIV_ROW) FLOAT_TYPES(DIV_ROW) HALF_TYPES(DIV_ROW)};

/* Invalid dtypes and ops are the caller's bug (the API checks them); doing nothing beats
 * indexing past the tables. */
void tutti__reduce(void *dst, const void *a, const void *b, size_t count, tutti_dtype_t dtype,
                   tutti_op_t op) {
  if (count == 0 || !tutti__dtype_valid((int)dtype) || !tutti__op_valid((int)op)) return;
  binary_kernels[dtype][op](dst, a, b, count);
}

void tutti__avg_finish(void *buf, size_t count, tutti_dtype_t dtype, int nranks) {
  /* Dividing by 1 changes nothing, so a single-rank communicator skips the pass. */
  if (count == 0 || nranks <= 1 || !tutti__dtype_valid((int)dtype)) return;
  div_kernels[dtype](buf, count, nranks);
}
