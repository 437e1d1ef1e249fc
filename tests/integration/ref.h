/*
 * The independent reference for coll_check: input generation from (seed, rank, index), the
 * expected result of every reduction computed in int64/uint64/double arithmetic, and the test's
 * own fp16/bf16 conversions. Nothing here comes from src/; it is written against tutti.h only,
 * so that a bug in the library's kernels cannot hide in a shared helper.
 */
#ifndef TUTTI_TEST_REF_H
#define TUTTI_TEST_REF_H

#include <stddef.h>
#include <stdint.h>

#include "tutti.h"

#define REF_NUM_DTYPES 10
#define REF_NUM_OPS 5

/* How the inputs of a case are generated. */
typedef enum {
  REF_EXACT,  /* small integers chosen per op so that every combining order gives exact bits */
  REF_RAW,    /* arbitrary bit patterns (data-movement collectives: nothing is computed)     */
  REF_RANDOM  /* uniform floats in [-1, 1): results depend on the order of combination      */
} ref_mode_t;

/* Everything that determines the inputs and the expected result of one case. */
typedef struct {
  tutti_dtype_t dtype;
  tutti_op_t op;
  ref_mode_t mode;
  uint64_t seed;
  int nranks;
} ref_case_t;

size_t ref_dtype_size(tutti_dtype_t dtype);
const char *ref_dtype_name(tutti_dtype_t dtype);
const char *ref_op_name(tutti_op_t op);
int ref_dtype_is_float(tutti_dtype_t dtype);
int ref_dtype_is_signed(tutti_dtype_t dtype);

/* IEEE binary16 and bfloat16 conversions; float -> 16 bits rounds to nearest, ties to even. */
uint16_t ref_f32_to_f16(float f);
float ref_f16_to_f32(uint16_t h);
uint16_t ref_f32_to_bf16(float f);
float ref_bf16_to_f32(uint16_t b);

/* A 64-bit mix of (seed, rank, idx); the source of every input element. */
uint64_t ref_hash(uint64_t seed, int rank, size_t idx);

/* Writes rank's input element idx (its dtype's bytes) to out. */
void ref_input(const ref_case_t *c, int rank, size_t idx, void *out);

/* Fills buf with rank's input elements first .. first+n-1. */
void ref_fill(const ref_case_t *c, int rank, size_t first, size_t n, void *buf);

/* REF_EXACT only: writes to out, for elements first .. first+n-1, the exact bytes every
 * correct library must produce for the reduction over all ranks of that input element. */
void ref_expect_reduce(const ref_case_t *c, size_t first, size_t n, void *out);

/* REF_RANDOM only: for elements first .. first+n-1, the reduction over all ranks computed in
 * double (want) and a bound on how far a correct float result may be from it (tol; 0 for MIN
 * and MAX: they are exact). */
void ref_reduce_approx(const ref_case_t *c, size_t first, size_t n, double *want, double *tol);

/* The value of one element of dtype as a double. */
double ref_to_double(tutti_dtype_t dtype, const void *elem);

/* FNV-1a 64 over n bytes. */
uint64_t ref_fnv1a(const void *data, size_t n);

#endif /* TUTTI_TEST_REF_H */
