/*
 * dtype_check: the 16-bit integers in every reduction op, and what a bfloat16 sum promises.
 *
 * - INT16 and UINT16 all-reduce (every op, AVG included), reduce-scatter and reduce against a
 *   reference each rank computes itself from every rank's regenerated inputs: wrapping SUM and
 *   PROD, signed or unsigned MIN/MAX, bitwise ops, AVG = the wrapped sum / nranks truncated.
 * - With TUTTI_DETERMINISTIC=1: a BFLOAT16 SUM all-reduce equals the rank-order fold
 *   ((x0 + x1) + x2) ... with each addition done in float32 and rounded to bfloat16 (nearest
 *   even) before the next, bit for bit; the reference's rounding is written here from the
 *   format's definition. It also reports (does not assert) how many elements differ from the
 *   float32 sum rounded once, the difference the README describes.
 *
 *   tutti-run -n 4 dtype_check
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tutti.h"

#define COUNT 1031 /* odd: tails of every kernel block and uneven reduce-scatter slices */

static tutti_comm_t comm;
static int rank, nranks;
static int failures;

static void check_call(tutti_result_t rc, const char *what) {
  if (rc == TUTTI_SUCCESS) return;
  fprintf(stderr, "dtype_check rank %d: %s returned %s: %s\n", rank, what,
          tutti_result_string(rc), comm ? tutti_comm_last_error(comm) : "");
  exit(1);
}

static uint64_t mix(uint64_t seed, int r, size_t i) {
  uint64_t x = seed ^ ((uint64_t)r << 48) ^ (uint64_t)i * 0x9E3779B97F4A7C15ull;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* Rank r's element i: any 16-bit pattern, with some small values so that PROD is not 0. */
static uint16_t in16(int op, int r, size_t i) {
  uint64_t x = mix(0x16 + (uint64_t)op, r, i);
  return (x & 3) == 0 ? (uint16_t)((x >> 8) % 7) : (uint16_t)(x >> 16);
}

static uint16_t ref16(int is_signed, int op, size_t i) {
  uint32_t acc = in16(op, 0, i);
  for (int r = 1; r < nranks; r++) {
    uint32_t x = in16(op, r, i);
    int32_t sa = (int16_t)acc, sx = (int16_t)x;
    int lt = is_signed ? sx < sa : x < (acc & 0xffff); /* x before acc */
    switch (op) {
    case TUTTI_SUM: case TUTTI_AVG: acc = (acc + x) & 0xffff; break;
    case TUTTI_PROD: acc = (acc * x) & 0xffff; break;
    case TUTTI_MIN: acc = lt ? x : acc; break;
    case TUTTI_MAX: acc = lt ? acc : x; break;
    case TUTTI_BAND: acc &= x; break;
    case TUTTI_BOR: acc |= x; break;
    default: acc ^= x; break;
    }
  }
  if (op != TUTTI_AVG) return (uint16_t)acc;
  if (!is_signed) return (uint16_t)(acc / (uint32_t)nranks);
  return (uint16_t)(int16_t)((int16_t)acc / nranks); /* C division truncates toward zero */
}

static void check16(const char *what, int is_signed, int op, const uint16_t *got,
                    size_t first, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint16_t want = ref16(is_signed, op, first + i);
    if (got[i] != want) {
      fprintf(stderr, "dtype_check rank %d: %s %s op %d element %zu is %#x, expected %#x\n",
              rank, what, is_signed ? "int16" : "uint16", op, first + i, got[i], want);
      failures++;
      return;
    }
  }
}

static void int16_ops(void) {
  size_t cap = (COUNT + 1) * (size_t)nranks;
  uint16_t *in = malloc(cap * sizeof *in), *out = malloc(cap * sizeof *out);
  for (int s = 0; s < 2; s++) {
    tutti_dtype_t dt = s ? TUTTI_INT16 : TUTTI_UINT16;
    for (int op = TUTTI_SUM; op <= TUTTI_BXOR; op++) {
      for (size_t i = 0; i < COUNT; i++) in[i] = in16(op, rank, i);
      check_call(tutti_allreduce(in, out, COUNT, dt, (tutti_op_t)op, comm), "tutti_allreduce");
      check16("allreduce", s, op, out, 0, COUNT);
      check_call(tutti_allreduce(in, in, COUNT, dt, (tutti_op_t)op, comm), "in-place allreduce");
      check16("in-place allreduce", s, op, in, 0, COUNT);
      /* Reduce-scatter: slice j of this rank's input is elements j*per ... of the pattern. */
      size_t per = COUNT / (size_t)nranks + 1;
      for (size_t i = 0; i < per * (size_t)nranks; i++) in[i] = in16(op, rank, i);
      check_call(tutti_reduce_scatter(in, out, per, dt, (tutti_op_t)op, comm),
                 "tutti_reduce_scatter");
      check16("reduce_scatter", s, op, out, per * (size_t)rank, per);
      int root = nranks - 1;
      memset(out, 0, COUNT * sizeof *out);
      check_call(tutti_reduce(in, out, COUNT, dt, (tutti_op_t)op, root, comm), "tutti_reduce");
      if (rank == root) check16("reduce", s, op, out, 0, COUNT);
    }
  }
  free(in);
  free(out);
}

/* bfloat16 from the format's definition: the top 16 bits of a float32, rounded to nearest,
 * ties to even; NaN stays a (quiet) NaN. */
static float bf16_to_f(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t f_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  uint32_t lower = u & 0xffffu, upper = u >> 16;
  if (lower > 0x8000u || (lower == 0x8000u && (upper & 1))) upper++;
  return (uint16_t)upper;
}

/* Inputs of many magnitudes, so that additions round. */
static uint16_t inbf(int r, size_t i) {
  uint64_t x = mix(0xbf16, r, i);
  float v = (float)((double)(x >> 40) / (double)(1 << 24) - 0.5) *
            (float)(1u << (unsigned)((x >> 8) % 12));
  return f_to_bf16(v);
}

static void bf16_deterministic(void) {
  uint16_t *in = malloc(COUNT * sizeof *in), *out = malloc(COUNT * sizeof *out);
  for (size_t i = 0; i < COUNT; i++) in[i] = inbf(rank, i);
  check_call(tutti_allreduce(in, out, COUNT, TUTTI_BFLOAT16, TUTTI_SUM, comm),
             "bfloat16 allreduce");
  size_t once_differs = 0;
  for (size_t i = 0; i < COUNT; i++) {
    uint16_t fold = inbf(0, i);
    float wide = bf16_to_f(fold);
    for (int r = 1; r < nranks; r++) {
      fold = f_to_bf16(bf16_to_f(fold) + bf16_to_f(inbf(r, i)));
      wide += bf16_to_f(inbf(r, i));
    }
    if (f_to_bf16(wide) != fold) once_differs++;
    if (out[i] != fold) {
      fprintf(stderr, "dtype_check rank %d: deterministic bfloat16 sum element %zu is %#x, the "
              "rank-order fold rounded at each step is %#x\n", rank, i, out[i], fold);
      failures++;
      break;
    }
  }
  if (rank == 0)
    printf("dtype_check: bfloat16 sum at n = %d: %zu of %d elements differ from the float32 "
           "sum rounded once\n", nranks, once_differs, COUNT);
  free(in);
  free(out);
}

int main(void) {
  check_call(tutti_comm_init_env(&comm), "tutti_comm_init_env");
  check_call(tutti_comm_rank(comm, &rank), "tutti_comm_rank");
  check_call(tutti_comm_size(comm, &nranks), "tutti_comm_size");
  int16_ops();
  const char *det = getenv("TUTTI_DETERMINISTIC");
  if (det && strcmp(det, "1") == 0) bf16_deterministic();
  int total = 0;
  check_call(tutti_allreduce(&failures, &total, 1, TUTTI_INT32, TUTTI_SUM, comm), "summary");
  check_call(tutti_comm_destroy(comm), "tutti_comm_destroy");
  if (total) {
    fprintf(stderr, "dtype_check rank %d: %d failures over all ranks\n", rank, total);
    return 1;
  }
  if (rank == 0) printf("dtype_check: all passed on %d ranks\n", nranks);
  return 0;
}
