/*
 * Reduction kernels and dtype facts. Pure functions over memory: no communicator, no I/O.
 */
#ifndef TUTTI_KERNELS_H
#define TUTTI_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "tutti.h"

/* 1 if dtype / op is a value the API accepts, else 0. */
int tutti__dtype_valid(int dtype);
int tutti__op_valid(int op);

/* Bytes per element of a valid dtype. */
size_t tutti__dtype_size(tutti_dtype_t dtype);

/* Names for messages and tools: "float32", "sum". "?" for invalid values. */
const char *tutti__dtype_name(int dtype);
const char *tutti__op_name(int op);

/*
 * dst[i] = a[i] (op) b[i] for i < count. dst may be a or b (exact alias), other overlap is not
 * allowed. AVG combines as SUM here; the division by nranks is tutti__avg_finish's job, done
 * once by whoever holds the complete sum. Signed integers wrap (computed as unsigned), so no
 * input is undefined behaviour. FLOAT16/BFLOAT16 combine in float32 and round to nearest even.
 * MIN/MAX on floats propagate NaN.
 */
void tutti__reduce(void *dst, const void *a, const void *b, size_t count, tutti_dtype_t dtype,
                   tutti_op_t op);

/* buf[i] = buf[i] / nranks: floats divide (fp16/bf16 through float32, rounded to nearest
 * even), integers divide truncating toward zero. */
void tutti__avg_finish(void *buf, size_t count, tutti_dtype_t dtype, int nranks);

/* IEEE binary16 and bfloat16 conversions; float -> 16 bit rounds to nearest even, keeps
 * infinities, and turns NaN into a quiet NaN. */
float tutti__half_to_float(uint16_t h);
uint16_t tutti__float_to_half(float f);
float tutti__bf16_to_float(uint16_t b);
uint16_t tutti__float_to_bf16(float f);

#endif
