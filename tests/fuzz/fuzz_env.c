/* libFuzzer target: rank, world size and rendezvous address from launcher variables
 * (tutti__env_parse). The input is an environment, one "NAME=value" per line. */
#include "bootstrap/bootstrap.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_env_t env;
  fuzz_env_make(&env, data, size);
  tutti_env_info_t info;
  char err[256];
  memset(err, 'x', sizeof err);
  tutti_result_t res = tutti__env_parse(fuzz_env_get, &env, &info, err, sizeof err);
  if (res == TUTTI_SUCCESS) {
    FUZZ_CHECK(info.size >= 1 && info.size <= TUTTI_MAX_RANKS);
    FUZZ_CHECK(info.rank >= 0 && info.rank < info.size);
    FUZZ_CHECK(info.port >= 1);
    FUZZ_CHECK(fuzz_terminated(info.host, sizeof info.host) && info.host[0] != '\0');
    FUZZ_CHECK(info.source != NULL);
  } else {
    FUZZ_CHECK(res == TUTTI_ERR_INVALID_ARGUMENT);
    FUZZ_CHECK(fuzz_terminated(err, sizeof err) && err[0] != '\0');
  }
  fuzz_env_free(&env);
  return 0;
}
