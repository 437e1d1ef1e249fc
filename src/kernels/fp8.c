/*
 * OCP 8-bit float (E4M3, E5M2) <-> binary32 by bit manipulation, independent of the FPU's
 * rounding and flush-to-zero modes. The algorithms live in fp8.h, inline, for the reduction
 * kernels; these are the out-of-line entry points.
 */
#include "kernels.h"

#include "fp8.h"

float tutti__fp8e4m3_to_float(uint8_t b) { return tutti__e4m3_decode(b); }

uint8_t tutti__float_to_fp8e4m3(float f) { return tutti__e4m3_encode(f); }

float tutti__fp8e5m2_to_float(uint8_t b) { return tutti__e5m2_decode(b); }

uint8_t tutti__float_to_fp8e5m2(float f) { return tutti__e5m2_encode(f); }
