/* Regression tests for configuration values the config fuzzer (tests/fuzz/fuzz_config.c)
 * showed were accepted as something other than what they say: a size with a sign, a size
 * whose suffix overflows size_t, and times (NaN, infinity, 1e300 s) that overflow the int64
 * nanosecond deadlines built from them. Each must be refused with INVALID_ARGUMENT, naming
 * the variable. */
#include <stdint.h>
#include <stdio.h>

#include "core/config_parse.h"
#include "harness.h"

typedef struct one_var {
  const char *name, *value;
} one_var_t;

static const char *lookup_one(const char *name, void *ctx) {
  const one_var_t *v = ctx;
  return !strcmp(name, v->name) ? v->value : NULL;
}

static tutti_result_t parse_one(const char *name, const char *value, tutti_config_t *cfg,
                                char *err, size_t errlen) {
  one_var_t v = {name, value};
  return tutti__config_parse(lookup_one, &v, cfg, err, errlen);
}

static void expect_refused(const char *name, const char *value) {
  tutti_config_t cfg;
  char err[256] = "";
  tutti_result_t res = parse_one(name, value, &cfg, err, sizeof err);
  if (res != TUTTI_ERR_INVALID_ARGUMENT)
    harness_fail(__FILE__, __LINE__, "%s=%s was accepted (result %d)", name, value, (int)res);
  ASSERT(strstr(err, name) != NULL);
}

TEST(signed_sizes_are_refused) {
  /* strtoull reads "-64" as 2^64 - 64: it used to become a huge chunk size. */
  expect_refused("TUTTI_CHUNK_SIZE", "-64");
  expect_refused("TUTTI_CHUNK_SIZE", "-1");
  expect_refused("TUTTI_CHUNK_SIZE", "+64");
  expect_refused("TUTTI_CHUNK_SIZE", " 64");
  expect_refused("TUTTI_SHM_QUEUE_SIZE", "-4096");
}

TEST(size_suffix_overflow_is_refused) {
  char text[64];
  /* (2^34 + 1) GiB wrapped to exactly 1 GiB before the fix. */
  snprintf(text, sizeof text, "%llug", (1ull << 34) + 1);
  expect_refused("TUTTI_CHUNK_SIZE", text);
  expect_refused("TUTTI_SHM_QUEUE_SIZE", text);
  snprintf(text, sizeof text, "%lluk", (unsigned long long)(SIZE_MAX >> 10) + 1);
  expect_refused("TUTTI_CHUNK_SIZE", text);
  expect_refused("TUTTI_CHUNK_SIZE", "99999999999999999999999");
}

TEST(largest_sizes_are_exact) {
  tutti_config_t cfg;
  char err[256], text[64];
  /* The largest value each suffix allows still comes back exactly. */
  snprintf(text, sizeof text, "%llug", (unsigned long long)(SIZE_MAX >> 30));
  ASSERT_EQ(parse_one("TUTTI_CHUNK_SIZE", text, &cfg, err, sizeof err), TUTTI_SUCCESS);
  ASSERT(cfg.chunk_bytes == (SIZE_MAX >> 30) << 30);
  ASSERT_EQ(parse_one("TUTTI_CHUNK_SIZE", "64", &cfg, err, sizeof err), TUTTI_SUCCESS);
  ASSERT_EQ(cfg.chunk_bytes, 64);
  ASSERT_EQ(parse_one("TUTTI_SHM_QUEUE_SIZE", "1G", &cfg, err, sizeof err), TUTTI_SUCCESS);
  ASSERT(cfg.shm_queue_bytes == (size_t)1 << 30);
}

TEST(times_that_overflow_deadlines_are_refused) {
  static const char *bad[] = {"nan", "NaN", "inf", "infinity", "1e300", "1e10", "-nan"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    expect_refused("TUTTI_TIMEOUT", bad[i]);
    expect_refused("TUTTI_SPIN_US", bad[i]);
  }
}

TEST(ordinary_times_still_work) {
  tutti_config_t cfg;
  char err[256];
  ASSERT_EQ(parse_one("TUTTI_TIMEOUT", "1e6", &cfg, err, sizeof err), TUTTI_SUCCESS);
  ASSERT(cfg.timeout_s == 1e6);
  ASSERT_EQ(parse_one("TUTTI_TIMEOUT", "0.25", &cfg, err, sizeof err), TUTTI_SUCCESS);
  ASSERT(cfg.timeout_s == 0.25);
  ASSERT_EQ(parse_one("TUTTI_SPIN_US", "0", &cfg, err, sizeof err), TUTTI_SUCCESS);
  ASSERT(cfg.spin_us == 0);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
