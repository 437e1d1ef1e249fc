/* Unit tests of configuration parsing (each test runs in its own process, so setenv is
 * local to it). */
#include <stdlib.h>

#include "core/internal.h"
#include "harness.h"

static tutti_result_t load(tutti_config_t *cfg) {
  char err[256];
  return tutti__config_load(cfg, err, sizeof err);
}

TEST(defaults) {
  unsetenv("TUTTI_TRANSPORT");
  unsetenv("TUTTI_TIMEOUT");
  unsetenv("TUTTI_CHUNK_SIZE");
  tutti_config_t c;
  ASSERT_EQ(load(&c), TUTTI_SUCCESS);
  ASSERT_EQ(c.transport, TUTTI_TRANSPORT_AUTO);
  ASSERT(c.timeout_s == 600.0);
  ASSERT_EQ(c.chunk_bytes, 262144);
  ASSERT(c.chunk_auto); /* the communicator derives it from the measured L2 */
}

TEST(values_and_suffixes) {
  setenv("TUTTI_TRANSPORT", "TCP", 1);
  setenv("TUTTI_TIMEOUT", "2.5", 1);
  setenv("TUTTI_CHUNK_SIZE", "64k", 1);
  setenv("TUTTI_SHM_QUEUE_SIZE", "4M", 1);
  tutti_config_t c;
  ASSERT_EQ(load(&c), TUTTI_SUCCESS);
  ASSERT_EQ(c.transport, TUTTI_TRANSPORT_TCP);
  ASSERT(c.timeout_s == 2.5);
  ASSERT_EQ(c.chunk_bytes, 65536);
  ASSERT(!c.chunk_auto);
  ASSERT_EQ(c.shm_queue_bytes, 4 << 20);
}

TEST(bad_values_are_rejected) {
  static const char *bad[][2] = {{"TUTTI_TRANSPORT", "ib"},    {"TUTTI_TIMEOUT", "0"},
                                 {"TUTTI_TIMEOUT", "soon"},    {"TUTTI_CHUNK_SIZE", "12q"},
                                 {"TUTTI_CHUNK_SIZE", "8"},    {"TUTTI_SHM_QUEUE_SIZE", "5000"},
                                 {"TUTTI_SPIN_US", "-1"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    unsetenv("TUTTI_TRANSPORT");
    unsetenv("TUTTI_TIMEOUT");
    unsetenv("TUTTI_CHUNK_SIZE");
    unsetenv("TUTTI_SHM_QUEUE_SIZE");
    unsetenv("TUTTI_SPIN_US");
    setenv(bad[i][0], bad[i][1], 1);
    tutti_config_t c;
    ASSERT_EQ(load(&c), TUTTI_ERR_INVALID_ARGUMENT);
  }
}

TEST(table_lists_every_variable_once) {
  int n;
  const tutti_config_var_t *t = tutti__config_table(&n);
  ASSERT(n >= 9);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) ASSERT(strcmp(t[i].name, t[j].name) != 0);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
