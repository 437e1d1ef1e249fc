/* libFuzzer target: the unique id a user hands to every rank (tutti__uid_unpack). The bytes
 * of a tutti_unique_id_t come from outside the process (a file, an MPI broadcast, a store). */
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tutti_unique_id_t id;
  memset(&id, 0, sizeof id);
  memcpy(id.internal, data, size < sizeof id.internal ? size : sizeof id.internal);
  tutti_uid_fields_t f;
  if (tutti__uid_unpack(&id, &f) != TUTTI_SUCCESS) return 0;
  FUZZ_CHECK(f.port != 0);
  /* What was accepted survives a round trip through pack and unpack unchanged. */
  tutti_unique_id_t again;
  tutti_uid_fields_t g;
  tutti__uid_pack(&f, &again);
  FUZZ_CHECK(tutti__uid_unpack(&again, &g) == TUTTI_SUCCESS);
  FUZZ_CHECK(g.ip == f.ip && g.port == f.port && !memcmp(g.secret, f.secret, sizeof f.secret));
  return 0;
}
