/*
 * IEEE binary16 and bfloat16 <-> binary32 by bit manipulation, so results do not depend on
 * the CPU having F16C or on the FPU's flush-to-zero and rounding modes.
 */
#include <string.h>

#include "kernels.h"

#define F32_EXP_MASK 0x7f800000u
#define F32_QUIET 0x00400000u

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Adds 1 to the truncated value when the dropped bits are above half an ulp, or exactly half
 * and the kept value is odd: round to nearest, ties to even. */
static uint32_t round_even(uint32_t kept, uint32_t dropped, uint32_t half) {
  return kept + (dropped > half || (dropped == half && (kept & 1)));
}

float tutti__half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  if (exp == 0x1f) /* Quieting matches what F16C and Arm FCVT do with a signalling NaN. */
    return float_of(sign | F32_EXP_MASK | man << 13 | (man ? F32_QUIET : 0));
  if (exp != 0) return float_of(sign | (exp + 112) << 23 | man << 13);
  if (man == 0) return float_of(sign);
  /* Every half subnormal (man * 2^-24) is a normal float: move the leading 1 to the
   * implicit position and lower the exponent by as many places. */
  uint32_t e = 113;
  while (!(man & 0x400)) {
    man <<= 1;
    e--;
  }
  return float_of(sign | e << 23 | (man & 0x3ff) << 13);
}

uint16_t tutti__float_to_half(float f) {
  uint32_t x = bits_of(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  uint32_t abs = x & 0x7fffffff;
  if (abs > F32_EXP_MASK) /* Keep the payload's top bits, but force quiet so it stays a NaN. */
    return (uint16_t)(sign | 0x7e00 | ((abs >> 13) & 0x3ff));
  /* 65520 is halfway between the largest half (65504) and 2^16; the tie goes to the even
   * side, which is infinity. Everything above (including inf) overflows too. */
  if (abs >= 0x477ff000) return (uint16_t)(sign | 0x7c00);
  if (abs >= 0x38800000) { /* Normal half: rebias the exponent (127 -> 15) in place. */
    uint32_t h = round_even((abs >> 13) - (112u << 10), abs & 0x1fff, 0x1000);
    return (uint16_t)(sign | h); /* A carry out of the mantissa bumps the exponent: correct. */
  }
  /* At most 2^-25, half the smallest subnormal: rounds to (even) zero. */
  if (abs <= 0x33000000) return sign;
  /* Subnormal half: the result counts units of 2^-24; shift is 14..24 here. */
  uint32_t man = (abs & 0x7fffff) | 0x800000;
  uint32_t shift = 126 - (abs >> 23);
  uint32_t h = round_even(man >> shift, man & ((1u << shift) - 1), 1u << (shift - 1));
  return (uint16_t)(sign | h); /* Rounding up to 0x400 gives the smallest normal: correct. */
}

float tutti__bf16_to_float(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  if ((x & 0x7fffffff) > F32_EXP_MASK) x |= F32_QUIET;
  return float_of(x);
}

uint16_t tutti__float_to_bf16(float f) {
  uint32_t x = bits_of(f);
  /* Truncating a NaN whose payload lies in the low 16 bits would leave infinity. */
  if ((x & 0x7fffffff) > F32_EXP_MASK) return (uint16_t)((x >> 16) | 0x40);
  /* bfloat16 is float's top half, so the same exponent range: subnormals need no care, and a
   * carry out of the largest finite value lands exactly on infinity. */
  return (uint16_t)(round_even(x >> 16, x & 0xffff, 0x8000));
}
