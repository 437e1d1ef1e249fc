/*
 * The streaming kernels (kernels/stream.c): tutti__copy and tutti__reduce_to, with and
 * without non-temporal stores, at odd lengths, unaligned pointers and sizes on both sides of
 * the length where the streaming path starts. The copy is checked against libc's memcpy,
 * with the bytes around it untouched; the reduction against a scalar reference, the kernels'
 * element operation applied one element at a time (a call of count 1 never reaches the
 * blocked or SIMD loops; test_kernels.c checks that element operation against values
 * computed another way).
 */
#include "harness.h"
#include "kernels/half.h" /* tutti__simd_disabled */
#include "kernels/kernels.h"

static uint64_t rng = 0x2545f4914f6cdd1du;
static uint8_t rnd8(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint8_t)(rng >> 24);
}
static void fill(void *p, size_t n) {
  for (size_t i = 0; i < n; i++) ((uint8_t *)p)[i] = rnd8();
}

/* Lengths around the 64-byte lines, the 256-byte floor of the streaming copy, a page, and
 * one larger than most L1 and L2 caches' worth of lines in flight. */
static const size_t copy_lens[] = {0,   1,   15,  16,   17,   63,   64,         65,
                                   255, 256, 257, 1000, 4095, 4109, 65536 + 33, (1u << 20) + 7};

/* One copy of len bytes to dst + doff from src + soff, checked with the bytes around it.
 * len is 32-bit so that gcc sees len + 64 cannot wrap (its -Wstringop-overflow guessed it
 * could when this was inlined with a size_t). */
static void check_copy(uint8_t *src, uint8_t *dst, uint8_t *want, uint32_t len, size_t doff,
                       size_t soff, int nt) {
  size_t span = (size_t)len + 64; /* offsets below 20, then guard bytes */
  fill(src, span), fill(dst, span);
  memcpy(want, dst, span);
  memcpy(want + doff, src + soff, len); /* the reference: libc's copy */
  tutti__copy(dst + doff, src + soff, len, nt);
  if (memcmp(dst, want, span) != 0)
    harness_fail(__FILE__, __LINE__, "copy of %u bytes, dst +%zu, src +%zu, nt %d",
                 (unsigned)len, doff, soff, nt);
}

TEST(copy_matches_bytes) {
  enum { MAX = (1 << 20) + 128 };
  uint8_t *src = malloc(MAX), *dst = malloc(MAX), *want = malloc(MAX);
  for (size_t l = 0; l < sizeof copy_lens / sizeof copy_lens[0]; l++) {
    size_t len = copy_lens[l];
    for (int nt = 0; nt < 2; nt++)
      for (size_t doff = 0; doff < 20; doff += (len > 5000 ? 7 : 1))
        check_copy(src, dst, want, (uint32_t)len, doff, (doff * 5 + 3) % 17, nt);
  }
  free(src), free(dst), free(want);
}

/* Element by element through the kernels' scalar path. */
static void ref_reduce(char *out, const char *a, const char *b, size_t n, tutti_dtype_t d,
                       tutti_op_t op) {
  size_t es = tutti__dtype_size(d);
  for (size_t i = 0; i < n; i++) tutti__reduce(out + i * es, a + i * es, b + i * es, 1, d, op);
}

/* 1 if element i of p is a NaN of dtype d (0 for integers). */
static int is_nan(const char *p, size_t i, tutti_dtype_t d) {
  uint64_t v = 0;
  memcpy(&v, p + i * tutti__dtype_size(d), tutti__dtype_size(d));
  switch (d) {
  case TUTTI_FLOAT16: return (v & 0x7fff) > 0x7c00;
  case TUTTI_BFLOAT16: return (v & 0x7fff) > 0x7f80;
  case TUTTI_FLOAT32: return (v & 0x7fffffffu) > 0x7f800000u;
  case TUTTI_FLOAT64: return (v & ~(1ull << 63)) > 0x7ff0000000000000ull;
  case TUTTI_FLOAT8_E4M3: return (v & 0x7f) == 0x7f;
  case TUTTI_FLOAT8_E5M2: return (v & 0x7f) > 0x7c;
  default: return 0;
  }
}

/* Equal bit for bit, except that any NaN matches any NaN: which payload survives a NaN op
 * NaN is the compiler's choice of operand order (reduce.c). */
static int same(const char *p, const char *q, size_t n, tutti_dtype_t d) {
  size_t es = tutti__dtype_size(d);
  for (size_t i = 0; i < n; i++)
    if (memcmp(p + i * es, q + i * es, es) != 0 && !(is_nan(p, i, d) && is_nan(q, i, d)))
      return 0;
  return 1;
}

/* Every supported dtype x op: out of place with nt 0 and 1 at pointers one element off a
 * 16-byte boundary, then aliased (dst = a, dst = b), against the reference; the bytes around
 * dst stay untouched. */
static void check_reduce(size_t bytes_target) {
  for (int d = 0; d < 14; d++) {
    tutti_dtype_t dt = (tutti_dtype_t)d;
    size_t es = tutti__dtype_size(dt);
    size_t n = bytes_target / es + (bytes_target % 2); /* odd targets give odd counts */
    size_t bytes = n * es, pad = 64; /* dst + bytes + pad stays inside 3 pads */
    char *a = malloc(bytes + 3 * pad), *b = malloc(bytes + 3 * pad);
    char *out = malloc(bytes + 3 * pad), *want = malloc(bytes + 3 * pad);
    char *tmp = malloc(bytes + 3 * pad);
    for (int o = 0; o < TUTTI_NUM_OPS; o++) {
      tutti_op_t op = (tutti_op_t)o;
      if (!tutti__op_supports(o, d)) continue;
      char *x = a + pad + es, *y = b + pad + 2 * es, *z = out + pad + es;
      fill(a, bytes + 3 * pad), fill(b, bytes + 3 * pad);
      ref_reduce(want, x, y, n, dt, op);
      for (int nt = 0; nt < 2; nt++) {
        memset(out, 0x5a, bytes + 3 * pad);
        tutti__reduce_to(z, x, y, n, dt, op, nt);
        if (!same(z, want, n, dt))
          harness_fail(__FILE__, __LINE__, "%s %s count %zu nt %d", tutti__dtype_name(d),
                       tutti__op_name(o), n, nt);
        for (size_t i = 0; i < pad; i++) {
          ASSERT_EQ((unsigned char)out[i], 0x5a);
          ASSERT_EQ((unsigned char)z[bytes + i], 0x5a);
        }
        memcpy(tmp, x, bytes), tutti__reduce_to(tmp, tmp, y, n, dt, op, nt);
        ASSERT(same(tmp, want, n, dt));
        memcpy(tmp + es, y, bytes), tutti__reduce_to(tmp + es, x, tmp + es, n, dt, op, nt);
        ASSERT(same(tmp + es, want, n, dt));
      }
    }
    free(a), free(b), free(out), free(want), free(tmp);
  }
}

/* The streaming reduction starts at 8 KiB of output (two 4 KiB stages); a count that ends in
 * a partial stage, and ones just below and above the start. */
TEST(reduce_to_small) {
  for (size_t t = 1; t <= 130; t += 3) check_reduce(t);
}
TEST(reduce_to_around_threshold) {
  static const size_t t[] = {8191, 8192, 8200, 12289, 3 * 4096 + 77, 65536 + 5};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) check_reduce(t[i]);
}
TEST(reduce_to_portable_kernels) {
  tutti__simd_disabled = 1;
  check_reduce(8192 + 64 + 3);
  tutti__simd_disabled = 0;
}

TEST(zero_counts_accept_null) {
  tutti__copy(NULL, NULL, 0, 1);
  tutti__reduce_to(NULL, NULL, NULL, 0, TUTTI_FLOAT32, TUTTI_SUM, 1);
}

int main(int c, char **v) { return harness_main(c, v); }
