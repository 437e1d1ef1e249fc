/*
 * A tiny unit-test harness. Each TEST runs in its own forked child with a timeout (libuv's
 * runner does the same), so a crash or a hang fails that test only. The runner ends with a
 * line "N passed, N failed".
 *
 *   TEST(name) { ASSERT_EQ(1 + 1, 2); }
 *   int main(int argc, char **argv) { return harness_main(argc, argv); }
 */
#ifndef TUTTI_HARNESS_H
#define TUTTI_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*harness_fn)(void);
void harness_register(const char *name, harness_fn fn);
int harness_main(int argc, char **argv);
void harness_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

#define TEST(name)                                                                          \
  static void test_##name(void);                                                            \
  __attribute__((constructor)) static void register_##name(void) {                          \
    harness_register(#name, test_##name);                                                   \
  }                                                                                         \
  static void test_##name(void)

#define ASSERT(cond)                                                                        \
  do {                                                                                      \
    if (!(cond)) harness_fail(__FILE__, __LINE__, "assertion failed: %s", #cond);           \
  } while (0)

#define ASSERT_EQ(a, b)                                                                     \
  do {                                                                                      \
    long long a_ = (long long)(a), b_ = (long long)(b);                                     \
    if (a_ != b_)                                                                           \
      harness_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_);           \
  } while (0)

#define ASSERT_STR_EQ(a, b)                                                                 \
  do {                                                                                      \
    const char *a_ = (a), *b_ = (b);                                                        \
    if (strcmp(a_, b_) != 0)                                                                \
      harness_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b, a_, b_);       \
  } while (0)

#define ASSERT_MEM_EQ(a, b, n)                                                              \
  do {                                                                                      \
    if (memcmp((a), (b), (n)) != 0)                                                         \
      harness_fail(__FILE__, __LINE__, "memory %s != %s (%zu bytes)", #a, #b, (size_t)(n)); \
  } while (0)

#endif
