/*
 * Reduction kernels and dtype facts. Pure functions over memory: no communicator, no I/O.
 */
#ifndef TUTTI_KERNELS_H
#define TUTTI_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "tutti.h"

/* 1 if dtype / op is a value the API accepts, else 0. Built-in ops only: TUTTI_SUM up to
 * TUTTI_BXOR; TUTTI_NUM_OPS and the user-created ops above it are not valid here. */
int tutti__dtype_valid(int dtype);
int tutti__op_valid(int op);

/* 1 if the built-in op applies to dtype: the bitwise ops (BAND, BOR, BXOR) to the integer
 * dtypes only, the others to every dtype. 0 if not, or if either is invalid. */
int tutti__op_supports(int op, int dtype);

/* 1 for the integer dtypes (INT8 ... UINT64, INT16, UINT16), else 0. */
int tutti__dtype_is_int(int dtype);

/* Bytes per element of a valid dtype. */
size_t tutti__dtype_size(tutti_dtype_t dtype);

/* Names for messages and tools: "float32", "float8_e4m3", "sum", "bxor". "?" for invalid
 * values. */
const char *tutti__dtype_name(int dtype);
const char *tutti__op_name(int op);

/*
 * dst[i] = a[i] (op) b[i] for i < count. dst may be a or b (exact alias), other overlap is not
 * allowed. AVG combines as SUM here; the division by nranks is tutti__avg_finish's job, done
 * once by whoever holds the complete sum. Signed integers wrap (computed as unsigned), so no
 * input is undefined behaviour. FLOAT16/BFLOAT16/FLOAT8 combine in float32 and round once to
 * nearest even (E4M3 saturating, see below). MIN/MAX on floats propagate NaN and order -0
 * before +0. A pair that tutti__op_supports rejects (or an invalid dtype or op) does nothing.
 */
void tutti__reduce(void *dst, const void *a, const void *b, size_t count, tutti_dtype_t dtype,
                   tutti_op_t op);

/* memcpy(dst, src, bytes), with non-temporal (streaming) stores when nt is set and the CPU
 * has them (x86-64), which write dst without first reading it into the cache. Meant for an
 * output larger than the last-level cache that is not read again soon; the caller decides.
 * Streaming stores are fenced before return, so a peer told afterwards sees the data. No
 * overlap allowed; any alignment. */
void tutti__copy(void *dst, const void *src, size_t bytes, int nt);

/* tutti__reduce(dst, a, b, count, dtype, op), with dst written by streaming stores when nt is
 * set (as tutti__copy): each input is read once and the output never read. The same bits as
 * tutti__reduce; the same aliasing rule (dst may be a or b exactly). */
void tutti__reduce_to(void *dst, const void *a, const void *b, size_t count,
                      tutti_dtype_t dtype, tutti_op_t op, int nt);

/* buf[i] = buf[i] / nranks: floats divide (fp16/bf16/fp8 through float32, rounded to nearest
 * even), integers divide truncating toward zero. */
void tutti__avg_finish(void *buf, size_t count, tutti_dtype_t dtype, int nranks);

/* dst[i] = src[i] * *scalar for i < count, the first step of a pre-multiplied sum. scalar
 * points to one element of dtype (any alignment). Integers multiply with wrapping; float32
 * and float64 natively; FLOAT16/BFLOAT16/FLOAT8 in float32 with one rounding back. dst may
 * be src (exact alias), other overlap is not allowed. An invalid dtype does nothing. */
void tutti__premul(void *dst, const void *src, size_t count, tutti_dtype_t dtype,
                   const void *scalar);

/* IEEE binary16 and bfloat16 conversions; float -> 16 bit rounds to nearest even, keeps
 * infinities, and turns NaN into a quiet NaN. */
float tutti__half_to_float(uint16_t h);
uint16_t tutti__float_to_half(float f);
float tutti__bf16_to_float(uint16_t b);
uint16_t tutti__float_to_bf16(float f);

/* OCP 8-bit float conversions (fp8.h has the formats). float -> fp8 rounds to nearest even.
 * E4M3 has no infinity: overflow and infinities saturate to +-448, NaN gives 0x7f / 0xff.
 * E5M2 is IEEE-like: overflow and infinities give +-inf, NaN gives a quiet NaN, sign kept. */
float tutti__fp8e4m3_to_float(uint8_t b);
uint8_t tutti__float_to_fp8e4m3(float f);
float tutti__fp8e5m2_to_float(uint8_t b);
uint8_t tutti__float_to_fp8e5m2(float f);

#endif
