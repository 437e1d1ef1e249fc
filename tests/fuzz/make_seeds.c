/* Writes the seed corpus of every fuzz target: a few valid inputs each, signed with the fuzz
 * secret where the message carries a proof. Run by build_and_run.sh --seeds; the output is
 * committed under tests/fuzz/corpus/<target>/. Usage: make_seeds <corpus-dir> */
#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>

#include "bootstrap/rdv_wire.h"
#include "fuzz_common.h"
#include "transport/header_check.h"

static const char *root;

static void put(const char *target, const char *name, const void *a, size_t alen,
                const void *b, size_t blen) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, target);
  if (mkdir(path, 0755) != 0 && errno != EEXIST) {
    perror(path);
    exit(1);
  }
  snprintf(path, sizeof path, "%s/%s/%s", root, target, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(a, 1, alen, f) != alen || (blen && fwrite(b, 1, blen, f) != blen) ||
      fclose(f) != 0) {
    perror(path);
    exit(1);
  }
}

static void put_text(const char *target, const char *name, const char *text) {
  put(target, name, text, strlen(text), NULL, 0);
}

static void seeds_uid(void) {
  tutti_uid_fields_t f = {.ip = 0x0100007f, .port = 0x3930};
  for (int i = 0; i < TUTTI_SECRET_BYTES; i++) f.secret[i] = (uint8_t)(i * 7 + 3);
  tutti_unique_id_t id;
  tutti__uid_pack(&f, &id);
  put("fuzz_uid", "loopback", &id, sizeof id, NULL, 0);
  f.ip = 0x0a01020a;
  f.port = 0xffff;
  tutti__uid_pack(&f, &id);
  put("fuzz_uid", "remote", &id, sizeof id, NULL, 0);
}

static void seeds_env(void) {
  put_text("fuzz_env", "tutti", "TUTTI_RANK=2\nTUTTI_WORLD_SIZE=5\nTUTTI_ADDR=10.1.2.3:4567\n");
  put_text("fuzz_env", "torchrun",
           "RANK=0\nWORLD_SIZE=2\nMASTER_ADDR=localhost\nMASTER_PORT=29500\n");
  put_text("fuzz_env", "openmpi",
           "OMPI_COMM_WORLD_RANK=3\nOMPI_COMM_WORLD_SIZE=4\nTUTTI_ADDR=node1:1000\n");
  put_text("fuzz_env", "slurm", "SLURM_PROCID=0\nSLURM_NTASKS=1\nMASTER_ADDR=h\nMASTER_PORT=1\n");
}

static void seeds_config(void) {
  put_text("fuzz_config", "defaults", "");
  put_text("fuzz_config", "values",
           "TUTTI_TRANSPORT=tcp\nTUTTI_TIMEOUT=2.5\nTUTTI_CHUNK_SIZE=64k\n"
           "TUTTI_SHM_QUEUE_SIZE=4M\nTUTTI_SPIN_US=10\n");
  put_text("fuzz_config", "names",
           "TUTTI_TRANSPORT=SHM\nTUTTI_ALGO=ring\nTUTTI_SOCKET_IFNAME=^docker\n"
           "TUTTI_CHUNK_SIZE=1g\nTUTTI_SHM_QUEUE_SIZE=4096\n");
}

static void seeds_auth(void) {
  char text[66] = {0};
  text[0] = 0;
  for (int i = 0; i < 64; i++) text[1 + i] = "0123456789abcdefABCDEF"[(i * 5) % 22];
  put("fuzz_auth", "secret_hex", text, 65, NULL, 0);
  uint8_t proof[1 + 96 + 40];
  proof[0] = 1;
  memcpy(proof + 1, fuzz_secret, 32);
  memcpy(proof + 33, fuzz_na, 32);
  memcpy(proof + 65, fuzz_nc, 32);
  for (int i = 0; i < 40; i++) proof[97 + i] = (uint8_t)(i * 13);
  put("fuzz_auth", "proof", proof, sizeof proof, NULL, 0);
}

static void seeds_header(void) {
  tutti_msg_hdr_t want = {TUTTI_MSG_MAGIC, 7, 4096, {1, 8, 0, 0, 0, 1024}};
  tutti_msg_hdr_t got = want;
  put("fuzz_header", "same", &want, sizeof want, &got, sizeof got);
  got.fp.count = 1000;
  put("fuzz_header", "count", &want, sizeof want, &got, sizeof got);
  got = want;
  got.fp.dtype = 9;
  put("fuzz_header", "dtype", &want, sizeof want, &got, sizeof got);
  memset(&got, 0, sizeof got);
  got.magic = TUTTI_ABORT_MAGIC;
  got.seq = TUTTI_ERR_INVALID_USAGE;
  put("fuzz_header", "abort", &want, sizeof want, &got, sizeof got);
}

static void seeds_rdv(void) {
  uint8_t mode;
  rdv_challenge_t ch = {RDV_MAGIC, RDV_VERSION, {0}};
  memcpy(ch.na, fuzz_na, sizeof ch.na);
  mode = 0;
  put("fuzz_rdv", "challenge", &mode, 1, &ch, sizeof ch);

  rdv_hello_t h;
  memset(&h, 0, sizeof h);
  h.f = (rdv_hello_fields_t){RDV_MAGIC, RDV_VERSION, 3, 1, {0}, 0x0100007f, 0x3a30, 0};
  h.f.entry.pid = 4242;
  h.f.entry.ip = 0x0100007f;
  h.f.entry.port = 0x3930;
  snprintf(h.f.entry.host, sizeof h.f.entry.host, "fuzzhost");
  snprintf(h.f.entry.boot_id, sizeof h.f.entry.boot_id, "0123-4567");
  memcpy(h.nc, fuzz_nc, sizeof h.nc);
  struct iovec part = {&h.f, sizeof h.f};
  if (tutti__auth_proof(fuzz_secret, TUTTI_AUTH_CONNECTOR, fuzz_na, h.nc, &part, 1, h.proof))
    exit(1);
  mode = 1;
  put("fuzz_rdv", "hello", &mode, 1, &h, sizeof h);
  mode = 2;
  put("fuzz_rdv", "hello_resign", &mode, 1, &h, sizeof h);

  /* A successful answer for 3 ranks to the tree's root (with the table), one to rank 2 (its
   * parent's address, no table) and a refusal, all signed as the server signs them. */
  enum { N = 3 };
  size_t len = sizeof(rdv_reply_t) + N * sizeof(tutti_rdv_entry_t) + TUTTI_AUTH_PROOF_BYTES;
  uint8_t *buf = calloc(1, 2 + len);
  rdv_reply_t r;
  memset(&r, 0, sizeof r);
  r.magic = RDV_MAGIC;
  r.status = TUTTI_SUCCESS;
  r.job_id = 0x1122334455667788ull;
  r.nranks = N;
  r.parent = -1;
  r.tree_ns = 5000000000ull;
  tutti_rdv_entry_t t[N];
  memset(t, 0, sizeof t);
  for (int i = 0; i < N; i++) {
    t[i] = h.f.entry;
    t[i].pid = 100 + i;
  }
  if (tutti__auth_digest(t, sizeof t, r.digest)) exit(1);
  part = (struct iovec){&r, sizeof r};
  buf[0] = 3;
  buf[1] = N;
  memcpy(buf + 2, &r, sizeof r);
  memcpy(buf + 2 + sizeof r, t, sizeof t);
  if (tutti__auth_proof(fuzz_secret, TUTTI_AUTH_ACCEPTOR, fuzz_na, fuzz_nc, &part, 1,
                        buf + 2 + sizeof r + sizeof t))
    exit(1);
  put("fuzz_rdv", "answer_table", buf, 2 + len, NULL, 0);
  buf[0] = 4;
  put("fuzz_rdv", "answer_table_resign", buf, 2 + len, NULL, 0);

  r.parent = 0;
  r.parent_entry = t[0];
  r.parent_tree_ip = 0x0100007f;
  r.parent_tree_port = 0x3a30;
  buf[0] = 3;
  memcpy(buf + 2, &r, sizeof r);
  if (tutti__auth_proof(fuzz_secret, TUTTI_AUTH_ACCEPTOR, fuzz_na, fuzz_nc, &part, 1,
                        buf + 2 + sizeof r))
    exit(1);
  put("fuzz_rdv", "answer_child", buf, 2 + sizeof r + TUTTI_AUTH_PROOF_BYTES, NULL, 0);

  rdv_reply_t no;
  memset(&no, 0, sizeof no);
  no.magic = RDV_MAGIC;
  no.status = TUTTI_ERR_INVALID_USAGE;
  no.nranks = N;
  snprintf(no.reason, sizeof no.reason, "rank 1 joined twice (pids 10 and 11)");
  buf[0] = 3;
  memcpy(buf + 2, &no, sizeof no);
  part.iov_base = &no;
  if (tutti__auth_proof(fuzz_secret, TUTTI_AUTH_ACCEPTOR, fuzz_na, fuzz_nc, &part, 1,
                        buf + 2 + sizeof no))
    exit(1);
  put("fuzz_rdv", "answer_refusal", buf, 2 + sizeof no + TUTTI_AUTH_PROOF_BYTES, NULL, 0);
  buf[0] = 4;
  put("fuzz_rdv", "answer_refusal_resign", buf, 2 + sizeof no + TUTTI_AUTH_PROOF_BYTES, NULL, 0);
  free(buf);

  /* A parent's answers in the tree: the table, and a failure it passes on. */
  tree_verdict_t v;
  memset(&v, 0, sizeof v);
  v.magic = TREE_MAGIC;
  v.job_id = 77;
  size_t vlen = sizeof v + sizeof t + TUTTI_AUTH_PROOF_BYTES;
  buf = calloc(1, 2 + vlen);
  buf[0] = 6;
  buf[1] = N;
  memcpy(buf + 2, &v, sizeof v);
  memcpy(buf + 2 + sizeof v, t, sizeof t);
  put("fuzz_rdv", "tree_table_resign", buf, 2 + vlen, NULL, 0);
  v.status = TUTTI_ERR_TIMEOUT;
  snprintf(v.reason, sizeof v.reason, "rank 1 (pid 9 on h), the parent of rank 3 in the "
           "bootstrap tree, did not pass on the address table within 9.0 s");
  memcpy(buf + 2, &v, sizeof v);
  part = (struct iovec){&v, sizeof v};
  if (tutti__auth_proof(fuzz_secret, TUTTI_AUTH_ACCEPTOR, fuzz_na, fuzz_nc, &part, 1,
                        buf + 2 + sizeof v))
    exit(1);
  buf[0] = 5;
  put("fuzz_rdv", "tree_failure", buf, 2 + sizeof v + TUTTI_AUTH_PROOF_BYTES, NULL, 0);
  buf[0] = 6;
  put("fuzz_rdv", "tree_failure_resign", buf, 2 + sizeof v + TUTTI_AUTH_PROOF_BYTES, NULL, 0);
  free(buf);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <corpus-dir>\n", argv[0]);
    return 2;
  }
  root = argv[1];
  if (mkdir(root, 0755) != 0 && errno != EEXIST) {
    perror(root);
    return 1;
  }
  seeds_uid();
  seeds_env();
  seeds_config();
  seeds_auth();
  seeds_header();
  seeds_rdv();
  return 0;
}
