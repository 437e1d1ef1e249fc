/* Unit tests of the bootstrap's pure logic: unique-id packing and environment parsing. */
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "harness.h"

TEST(uid_round_trip) {
  tutti_uid_fields_t in = {.ip = 0x0100007f, .port = 0x3930}, out;
  for (int i = 0; i < TUTTI_SECRET_BYTES; i++) in.secret[i] = (uint8_t)(i * 37 + 1);
  tutti_unique_id_t id;
  memset(&id, 0xAB, sizeof id);
  tutti__uid_pack(&in, &id);
  ASSERT_EQ(tutti__uid_unpack(&id, &out), TUTTI_SUCCESS);
  ASSERT_EQ(out.ip, in.ip);
  ASSERT_EQ(out.port, in.port);
  ASSERT_MEM_EQ(out.secret, in.secret, TUTTI_SECRET_BYTES);
  /* Unused bytes are zeroed, so ids compare equal byte for byte. */
  for (size_t i = 16 + TUTTI_SECRET_BYTES; i < sizeof id.internal; i++)
    ASSERT_EQ(id.internal[i], 0);
}

TEST(uid_rejects_garbage) {
  tutti_unique_id_t id;
  tutti_uid_fields_t out;
  memset(&id, 0, sizeof id);
  ASSERT_EQ(tutti__uid_unpack(&id, &out), TUTTI_ERR_INVALID_ARGUMENT);
  tutti_uid_fields_t in = {.ip = 1, .port = 0};
  tutti__uid_pack(&in, &id);
  ASSERT_EQ(tutti__uid_unpack(&id, &out), TUTTI_ERR_INVALID_ARGUMENT); /* port 0 */
  in.port = 5;
  tutti__uid_pack(&in, &id);
  id.internal[4] ^= 1; /* version */
  ASSERT_EQ(tutti__uid_unpack(&id, &out), TUTTI_ERR_INVALID_ARGUMENT);
}

/* A fake environment: "NAME=value" strings. */
static const char *fake_lookup(const char *name, void *ctx) {
  for (const char **e = ctx; *e; e++) {
    size_t n = strlen(name);
    if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
  }
  return NULL;
}

static tutti_result_t parse(const char **env, tutti_env_info_t *info) {
  char err[256];
  return tutti__env_parse(fake_lookup, env, info, err, sizeof err);
}

TEST(env_tutti_family) {
  const char *env[] = {"TUTTI_RANK=2", "TUTTI_WORLD_SIZE=5", "TUTTI_ADDR=10.1.2.3:4567",
                       "RANK=9", "WORLD_SIZE=10", NULL};
  tutti_env_info_t i;
  ASSERT_EQ(parse(env, &i), TUTTI_SUCCESS);
  ASSERT_EQ(i.rank, 2);
  ASSERT_EQ(i.size, 5);
  ASSERT_STR_EQ(i.host, "10.1.2.3");
  ASSERT_EQ(i.port, 4567);
  ASSERT_STR_EQ(i.source, "tutti");
}

TEST(env_torchrun_family) {
  const char *env[] = {"RANK=3", "WORLD_SIZE=4", "MASTER_ADDR=node1", "MASTER_PORT=29500",
                       NULL};
  tutti_env_info_t i;
  ASSERT_EQ(parse(env, &i), TUTTI_SUCCESS);
  ASSERT_EQ(i.rank, 3);
  ASSERT_EQ(i.size, 4);
  ASSERT_STR_EQ(i.host, "node1");
  ASSERT_EQ(i.port, 29500);
  ASSERT_STR_EQ(i.source, "torchrun");
}

TEST(env_openmpi_and_slurm_take_address_from_tutti_or_master) {
  const char *ompi[] = {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2",
                        "TUTTI_ADDR=h:1000", "MASTER_ADDR=x", "MASTER_PORT=1", NULL};
  const char *slurm[] = {"SLURM_PROCID=0", "SLURM_NTASKS=8", "MASTER_ADDR=x",
                         "MASTER_PORT=77", NULL};
  tutti_env_info_t i;
  ASSERT_EQ(parse(ompi, &i), TUTTI_SUCCESS);
  ASSERT_STR_EQ(i.source, "openmpi");
  ASSERT_STR_EQ(i.host, "h");
  ASSERT_EQ(i.port, 1000);
  ASSERT_EQ(parse(slurm, &i), TUTTI_SUCCESS);
  ASSERT_STR_EQ(i.source, "slurm");
  ASSERT_EQ(i.size, 8);
  ASSERT_STR_EQ(i.host, "x");
  ASSERT_EQ(i.port, 77);
}

TEST(env_errors) {
  tutti_env_info_t i;
  const char *none[] = {NULL};
  const char *rank_too_big[] = {"TUTTI_RANK=4", "TUTTI_WORLD_SIZE=4", "TUTTI_ADDR=h:1", NULL};
  const char *not_number[] = {"TUTTI_RANK=1x", "TUTTI_WORLD_SIZE=4", "TUTTI_ADDR=h:1", NULL};
  const char *no_size[] = {"RANK=0", "MASTER_ADDR=h", "MASTER_PORT=1", NULL};
  const char *no_addr[] = {"RANK=0", "WORLD_SIZE=1", NULL};
  const char *bad_port[] = {"TUTTI_RANK=0", "TUTTI_WORLD_SIZE=1", "TUTTI_ADDR=h:70000", NULL};
  const char *no_port[] = {"TUTTI_RANK=0", "TUTTI_WORLD_SIZE=1", "TUTTI_ADDR=h", NULL};
  const char *zero_world[] = {"TUTTI_RANK=0", "TUTTI_WORLD_SIZE=0", "TUTTI_ADDR=h:1", NULL};
  const char **cases[] = {none, rank_too_big, not_number, no_size, no_addr, bad_port, no_port,
                          zero_world};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    ASSERT_EQ(parse(cases[c], &i), TUTTI_ERR_INVALID_ARGUMENT);
}
int main(int argc, char **argv) { return harness_main(argc, argv); }
