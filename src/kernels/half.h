/*
 * IEEE binary16 and bfloat16 <-> binary32, inline so that the reduction kernels can use them
 * per element (half.c exports the same functions under the names in kernels.h).
 *
 * Branch-free on purpose: every case is computed and the right one selected, which is what
 * lets the compiler vectorise a loop of them. The results do not depend on the CPU having
 * F16C, nor on the FPU's rounding mode or flush-to-zero / denormals-are-zero flags: the few
 * float operations used are exact, and none of them has a denormal operand or result.
 */
#ifndef TUTTI_KERNELS_HALF_H
#define TUTTI_KERNELS_HALF_H

#include <stdint.h>
#include <string.h>

#define TUTTI__F32_EXP_MASK 0x7f800000u
#define TUTTI__F32_QUIET 0x00400000u

static inline uint32_t tutti__f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float tutti__f32_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* binary16 -> float, exact. A NaN keeps its payload and is made quiet, which is what F16C
 * and Arm FCVT do with a signalling NaN. */
static inline float tutti__half_decode(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t em = h & 0x7fffu; /* exponent and mantissa */
  /* Normal: rebias the exponent (15 -> 127) in place. */
  uint32_t normal = (em << 13) + (112u << 23);
  /* Inf / NaN: maximal exponent, payload moved up, quiet bit forced for NaN. */
  uint32_t special = (em << 13) | TUTTI__F32_EXP_MASK | (em > 0x7c00 ? TUTTI__F32_QUIET : 0);
  /* Zero / subnormal: man * 2^-24, a normal float (or +0). Converting an integer below 2^15
   * and scaling by a power of two are both exact, so the rounding mode does not matter. */
  uint32_t sub = tutti__f32_bits((float)(int32_t)em * 0x1p-24f);
  uint32_t is_special = 0u - (uint32_t)(em >= 0x7c00), is_normal = 0u - (uint32_t)(em >= 0x400);
  uint32_t r = (special & is_special) | (normal & is_normal & ~is_special) | (sub & ~is_normal);
  return tutti__f32_of(sign | r);
}

/* float -> binary16, round to nearest even; infinities stay, overflow goes to infinity, NaN
 * keeps the top of its payload and is made quiet (so it cannot turn into infinity). Signed
 * 32-bit arithmetic on |f|'s bits (below 2^31) is what vectorises best on plain SSE2. */
static inline uint16_t tutti__half_encode(float f) {
  uint32_t x = tutti__f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t abs = (int32_t)(x & 0x7fffffff);
  /* Normal half (|f| in [2^-14, 65520)): rebias the exponent (127 -> 15) in place and round
   * the 13 dropped bits with the add-a-bias trick: 0xfff, plus 1 when the kept value is odd,
   * carries exactly when round-to-nearest-even goes up. A carry out of the mantissa bumps the
   * exponent, which is correct. 65520 is halfway between the largest half (65504) and 2^16;
   * the tie goes to the even side, which is infinity, and everything above overflows too, so
   * the result is capped at infinity's 0x7c00 (NaN included, fixed below). Smaller values
   * wrap around to garbage that is not selected. */
  uint32_t odd = (uint32_t)abs >> 13 & 1;
  int32_t normal = (int32_t)(((uint32_t)abs - (112u << 23) + 0xfffu + odd) >> 13);
  normal = normal < 0x7c00 ? normal : 0x7c00;
  /* Subnormal half (|f| in (2^-25, 2^-14)): w = |f| * 2^24 counts units of 2^-24 and is
   * exact; t = trunc(w) and w - t are exact too (Sterbenz), so the rounding to even is done
   * here, whatever the FPU's rounding mode. Anything up to 2^-25 (half the smallest
   * subnormal) goes in as 0 and rounds to (even) zero, so no operand is ever denormal. */
  int32_t in_sub = -(int32_t)(abs > 0x33000000 && abs < 0x38800000);
  float w = tutti__f32_of((uint32_t)(abs & in_sub)) * 0x1p24f;
  int32_t t = (int32_t)w; /* w < 1024 */
  float frac = w - (float)t;
  int32_t sub = t + ((int32_t)(frac > 0.5f) | ((int32_t)(frac == 0.5f) & t)); /* 0x400 is right */
  int32_t is_normal = -(int32_t)(abs >= 0x38800000);
  int32_t r = (normal & is_normal) | (sub & ~is_normal);
  /* NaN: 0x7c00 from the cap, plus the quiet bit and the payload's top 10 bits. */
  r |= -(int32_t)(abs > 0x7f800000) & (0x200 | (abs >> 13 & 0x3ff));
  return (uint16_t)(sign | (uint32_t)r);
}

/* bfloat16 -> float: the top half. A NaN is made quiet. */
static inline float tutti__bf16_decode(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  return tutti__f32_of(x | ((int32_t)(x & 0x7fffffff) > 0x7f800000 ? TUTTI__F32_QUIET : 0));
}

/* float -> bfloat16, round to nearest even. bfloat16 is float's top half, so the exponent
 * range is the same: subnormals need no care, and a carry out of the largest finite value
 * lands exactly on infinity. Adding 0x7fff, plus 1 when the kept half is odd, carries exactly
 * when rounding goes up. A NaN is made quiet rather than truncated, since truncating one whose
 * payload lies in the low 16 bits would leave infinity. */
static inline uint16_t tutti__bf16_encode(float f) {
  uint32_t x = tutti__f32_bits(f);
  uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1)) >> 16;
  uint32_t nan = (x >> 16) | 0x40;
  return (uint16_t)((int32_t)(x & 0x7fffffff) > 0x7f800000 ? nan : rounded);
}

/* Test hook: nonzero makes tutti__reduce and tutti__avg_finish use the portable FLOAT16 and
 * BFLOAT16 kernels even where x86 ones (F16C, AVX2) would run, so the tests can check both. */
extern int tutti__simd_disabled;

#endif
