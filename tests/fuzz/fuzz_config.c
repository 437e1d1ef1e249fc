/* libFuzzer target: the TUTTI_* configuration variables (tutti__config_parse). The input is
 * an environment, one "NAME=value" per line. Besides crashes, it checks that every accepted
 * value is one the library can use as it is: sizes as the text says, with no wrap-around,
 * and times finite and small enough to become nanosecond deadlines. */
#include <ctype.h>
#include <math.h>
#include <stdint.h>

#include "core/config_parse.h"
#include "fuzz_common.h"

/* An independent reading of a size: decimal digits, then k, m or g (powers of 1024); -1 when
 * the text is not one or does not fit a size_t. */
static int ref_size(const char *s, size_t *out) {
  if (!isdigit((unsigned char)*s)) return -1;
  unsigned __int128 v = 0;
  for (; isdigit((unsigned char)*s); s++) {
    v = v * 10 + (unsigned)(*s - '0');
    if (v > SIZE_MAX) return -1;
  }
  int shift = 0;
  switch (*s) {
  case 'k': case 'K': shift = 10; s++; break;
  case 'm': case 'M': shift = 20; s++; break;
  case 'g': case 'G': shift = 30; s++; break;
  default: break;
  }
  if (*s != '\0') return -1;
  v <<= shift;
  if (v > SIZE_MAX) return -1;
  *out = (size_t)v;
  return 0;
}

static const char *value(fuzz_env_t *env, const char *name, const char *def) {
  const char *v = fuzz_env_get(name, env);
  return v && *v ? v : def;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_env_t env;
  fuzz_env_make(&env, data, size);
  tutti_config_t cfg;
  char err[256];
  memset(err, 'x', sizeof err);
  tutti_result_t res = tutti__config_parse(fuzz_env_get, &env, &cfg, err, sizeof err);
  if (res == TUTTI_SUCCESS) {
    FUZZ_CHECK(cfg.transport >= TUTTI_TRANSPORT_AUTO && cfg.transport <= TUTTI_TRANSPORT_TCP);
    FUZZ_CHECK(fuzz_terminated(cfg.algo, sizeof cfg.algo));
    FUZZ_CHECK(fuzz_terminated(cfg.ifname, sizeof cfg.ifname));
    /* Deadlines are now + seconds * 1e9 in int64 nanoseconds. */
    FUZZ_CHECK(isfinite(cfg.timeout_s) && cfg.timeout_s > 0 && cfg.timeout_s * 1e9 < 4e18);
    FUZZ_CHECK(isfinite(cfg.spin_us) && cfg.spin_us >= 0 && cfg.spin_us * 1e3 < 4e18);
    size_t want;
    FUZZ_CHECK(ref_size(value(&env, "TUTTI_CHUNK_SIZE", "262144"), &want) == 0);
    FUZZ_CHECK(cfg.chunk_bytes == want && want >= 64);
    FUZZ_CHECK(ref_size(value(&env, "TUTTI_SHM_QUEUE_SIZE", "1048576"), &want) == 0);
    FUZZ_CHECK(cfg.shm_queue_bytes == want && want >= 4096 && !(want & (want - 1)));
  } else {
    FUZZ_CHECK(res == TUTTI_ERR_INVALID_ARGUMENT);
    FUZZ_CHECK(fuzz_terminated(err, sizeof err) && err[0] != '\0');
  }
  fuzz_env_free(&env);
  return 0;
}
