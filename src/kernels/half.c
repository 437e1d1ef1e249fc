/*
 * IEEE binary16 and bfloat16 <-> binary32 by bit manipulation (and a few exact float
 * operations), so results do not depend on the CPU having F16C or on the FPU's flush-to-zero
 * and rounding modes. The algorithms live in half.h, inline, for the reduction kernels; these
 * are the out-of-line entry points.
 */
#include "kernels.h"

#include "half.h"

float tutti__half_to_float(uint16_t h) { return tutti__half_decode(h); }

uint16_t tutti__float_to_half(float f) { return tutti__half_encode(f); }

float tutti__bf16_to_float(uint16_t b) { return tutti__bf16_decode(b); }

uint16_t tutti__float_to_bf16(float f) { return tutti__bf16_encode(f); }
