/*
 * OCP 8-bit floats (OFP8) <-> binary32, inline so that the reduction kernels can use them per
 * element (fp8.c exports the same functions under the names in kernels.h).
 *
 *   E4M3: bias 7, 3 fraction bits, no infinities; S.1111.111 is the only NaN, so the largest
 *         finite value is S.1111.110 = 448. Subnormals go down to 2^-9.
 *   E5M2: bias 15, 2 fraction bits, IEEE-like: infinities, NaNs, largest finite 57344,
 *         subnormals down to 2^-16. It is exactly the top byte of an IEEE binary16.
 *
 * Built like half.h, and for the same reasons: branch-free, so that a loop of them vectorises,
 * and independent of the FPU's rounding mode and flush-to-zero flags (every float operation
 * used is exact, and none has a denormal operand or result).
 */
#ifndef TUTTI_KERNELS_FP8_H
#define TUTTI_KERNELS_FP8_H

#include <stdint.h>

#include "half.h"

/* E4M3 -> float, exact. Its one NaN becomes the default quiet NaN, with the sign kept. */
static inline float tutti__e4m3_decode(uint8_t b) {
  uint32_t sign = (uint32_t)(b & 0x80) << 24;
  uint32_t em = b & 0x7fu; /* exponent and mantissa */
  /* Normal: rebias the exponent (7 -> 127) in place. */
  uint32_t normal = (em << 20) + (120u << 23);
  /* Zero / subnormal: man * 2^-9, a normal float (or +0); exact, like half.h's. */
  uint32_t sub = tutti__f32_bits((float)(int32_t)em * 0x1p-9f);
  uint32_t is_nan = 0u - (uint32_t)(em == 0x7f), is_normal = 0u - (uint32_t)(em >= 0x08);
  uint32_t r = (normal & is_normal) | (sub & ~is_normal);
  r = (r & ~is_nan) | (0x7fc00000u & is_nan);
  return tutti__f32_of(sign | r);
}

/* E5M2 -> float, exact: the byte is a binary16 with its low 8 bits zero. A NaN is quieted
 * with its payload kept, as half.h does. */
static inline float tutti__e5m2_decode(uint8_t b) {
  return tutti__half_decode((uint16_t)((uint16_t)b << 8));
}

/*
 * The rounding shared by both encoders, for |f|'s bits abs (NaN excluded by the caller):
 * round to nearest even with mbits fraction bits and the given bias, where the smallest
 * normal is 2^(1-bias). Returns the 7-bit magnitude code, uncapped (callers saturate or
 * overflow to infinity), meaningless for NaN.
 *
 * Normal range: rebias the exponent in place and round the dropped bits with the add-a-bias
 * trick (half, minus one, plus the kept value's last bit carries exactly when nearest-even
 * goes up; a carry out of the mantissa bumps the exponent, which is correct). Below the
 * normal range that wraps to garbage, which is not selected.
 *
 * Subnormal range (|f| in (2^(-bias-mbits), 2^(1-bias))): w = |f| * 2^(bias+mbits-1) counts
 * subnormal units and is exact; t = trunc(w) and w - t are exact too, so the rounding to even
 * is done here, whatever the FPU's rounding mode. Anything up to half the smallest subnormal
 * goes in as 0 and rounds to (even) zero, so no operand is ever denormal. A w that rounds up
 * to 2^mbits is the smallest normal's code, which is right.
 */
static inline int32_t tutti__fp8_round(int32_t abs, int mbits, int bias) {
  int drop = 23 - mbits;
  uint32_t odd = (uint32_t)abs >> drop & 1;
  uint32_t rebias = (uint32_t)(127 - bias) << 23;
  int32_t normal = (int32_t)(((uint32_t)abs - rebias + ((1u << (drop - 1)) - 1) + odd) >> drop);
  int32_t min_normal = (128 - bias) << 23;                /* 2^(1-bias) */
  int32_t half_min_sub = (127 - bias - mbits) << 23;      /* 2^(-bias-mbits) */
  int32_t in_sub = -(int32_t)(abs > half_min_sub && abs < min_normal);
  float w = tutti__f32_of((uint32_t)(abs & in_sub)) * (float)(1 << (bias + mbits - 1));
  int32_t t = (int32_t)w; /* w < 2^mbits */
  float frac = w - (float)t;
  int32_t sub = t + ((int32_t)(frac > 0.5f) | ((int32_t)(frac == 0.5f) & t));
  int32_t is_normal = -(int32_t)(abs >= min_normal);
  return (normal & is_normal) | (sub & ~is_normal);
}

/* float -> E4M3, round to nearest even. There is no infinity to overflow to, so anything
 * past the largest finite value (infinity included) saturates to +-448, as OCP's "saturate"
 * conversion mode does and as training recipes expect of E4M3. NaN gives the NaN, sign kept. */
static inline uint8_t tutti__e4m3_encode(float f) {
  uint32_t x = tutti__f32_bits(f);
  uint32_t sign = (x >> 24) & 0x80;
  int32_t abs = (int32_t)(x & 0x7fffffff);
  int32_t r = tutti__fp8_round(abs, 3, 7);
  r = r < 0x7e ? r : 0x7e;
  r |= -(int32_t)(abs > 0x7f800000) & 0x7f;
  return (uint8_t)(sign | (uint32_t)r);
}

/* float -> E5M2, round to nearest even, IEEE style: overflow (from the midpoint 61440 up,
 * which ties to the even side, infinity) and infinities give infinity; a NaN stays a NaN,
 * quiet, with the top bit of its payload, like binary16's. */
static inline uint8_t tutti__e5m2_encode(float f) {
  uint32_t x = tutti__f32_bits(f);
  uint32_t sign = (x >> 24) & 0x80;
  int32_t abs = (int32_t)(x & 0x7fffffff);
  int32_t r = tutti__fp8_round(abs, 2, 15);
  r = r < 0x7c ? r : 0x7c;
  r |= -(int32_t)(abs > 0x7f800000) & (0x02 | (abs >> 21 & 0x01));
  return (uint8_t)(sign | (uint32_t)r);
}

#endif
