/*
 * Copies and reductions whose output bypasses the cache (non-temporal stores), for outputs
 * larger than the last-level cache: an ordinary store first reads the destination line into
 * the cache (a read for ownership) and later writes it back, so a copy of m bytes moves 3m
 * through memory; a streaming store writes the line whole, 2m, and leaves the cache to the
 * data that will be read again. Below the cache's size the ordinary store wins, since the
 * output is then usually read again soon from the cache. The caller decides (it knows the
 * whole call's footprint and the measured cache size); these functions only do it.
 */
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define HAVE_STREAM_STORES 1
#include <emmintrin.h>
#endif

#include "kernels.h"

/* Bytes of output a streaming reduction computes at a time, into a buffer that stays in L1. */
#define STAGE_BYTES 4096

#ifdef HAVE_STREAM_STORES
/* src to dst with 16-byte streaming stores: dst 16-byte aligned, bytes a multiple of 64.
 * SSE2 is part of x86-64, so this needs no CPU check; wider stores fill the same
 * write-combining line and are no faster. */
static void stream_lines(char *dst, const char *src, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 64) {
    __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
    __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 16));
    __m128i v2 = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 32));
    __m128i v3 = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 48));
    _mm_stream_si128((__m128i *)(void *)(dst + i), v0);
    _mm_stream_si128((__m128i *)(void *)(dst + i + 16), v1);
    _mm_stream_si128((__m128i *)(void *)(dst + i + 32), v2);
    _mm_stream_si128((__m128i *)(void *)(dst + i + 48), v3);
  }
}

/* The streaming part of a copy: the unaligned head and the short tail go through memcpy.
 * No fence: the caller fences once after its last streaming store. */
static void stream_copy(char *dst, const char *src, size_t bytes) {
  size_t head = (size_t)(-(uintptr_t)dst & 15);
  if (head > bytes) head = bytes;
  memcpy(dst, src, head);
  dst += head, src += head, bytes -= head;
  size_t body = bytes & ~(size_t)63;
  stream_lines(dst, src, body);
  memcpy(dst + body, src + body, bytes - body);
}
#endif

void tutti__copy(void *dst, const void *src, size_t bytes, int nt) {
#ifdef HAVE_STREAM_STORES
  if (nt && bytes >= 256) {
    stream_copy(dst, src, bytes);
    /* Streaming stores are weakly ordered: a peer told "done" after this must see them. */
    _mm_sfence();
    return;
  }
#endif
  (void)nt;
  if (bytes) memcpy(dst, src, bytes);
}

void tutti__reduce_to(void *dst, const void *a, const void *b, size_t count,
                      tutti_dtype_t dtype, tutti_op_t op, int nt) {
#ifdef HAVE_STREAM_STORES
  size_t es = tutti__dtype_size(dtype);
  if (nt && es && count * es >= 2 * STAGE_BYTES && tutti__op_supports((int)op, (int)dtype)) {
    /* Each stage is read from a and b once, combined into the L1 buffer, and streamed out:
     * the same kernel on the same elements, so the bits are tutti__reduce's. dst may be a
     * or b exactly, since a stage is read before it is written. */
    _Alignas(64) char stage[STAGE_BYTES];
    size_t per = STAGE_BYTES / es;
    char *d = dst;
    const char *x = a, *y = b;
    for (size_t i = 0; i < count; i += per) {
      size_t m = count - i < per ? count - i : per;
      size_t off = i * es;
      tutti__reduce(stage, x + off, y + off, m, dtype, op);
      stream_copy(d + off, stage, m * es);
    }
    _mm_sfence();
    return;
  }
#endif
  (void)nt;
  tutti__reduce(dst, a, b, count, dtype, op);
}
