/* Communicator life cycle: unique id, init (bootstrap, then transports), abort, destroy. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "algo/algo.h"
#include "algo/cma.h"
#include "bootstrap/bootstrap.h"
#include "core/auth.h"
#include "core/comm_create.h"
#include "core/engine.h"
#include "core/forensics.h"
#include "core/memreg.h"
#include "core/sock.h"
#include "core/topo.h"
#include "transport/transport.h"

/* The address a listener of this process should use: TUTTI_SOCKET_IFNAME's, else fallback. */
static tutti_result_t listen_ip(const tutti_config_t *cfg, uint32_t fallback, uint32_t *ip,
                                char *err, size_t errlen) {
  if (cfg->ifname[0]) return tutti__sock_ifaddr(cfg->ifname, ip, err, errlen);
  *ip = fallback;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__unique_id_at(const uint32_t *ip, tutti_unique_id_t *id) {
  if (!id) {
    WARN("boot", -1, "tutti_get_unique_id: id is NULL");
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  tutti_config_t cfg;
  char err[256];
  tutti_uid_fields_t f;
  int lfd = -1;
  tutti_result_t res = tutti__config_load(&cfg, err, sizeof err);
  /* Without an interface named, the rendezvous stays on loopback: nothing off this host can
   * reach it unless the user asks for it. */
  if (res == TUTTI_SUCCESS && ip) f.ip = *ip;
  else if (res == TUTTI_SUCCESS)
    res = listen_ip(&cfg, htonl(INADDR_LOOPBACK), &f.ip, err, sizeof err);
  if (res == TUTTI_SUCCESS) res = tutti__sock_listen(f.ip, 0, 1024, &lfd, &f.port, err, sizeof err);
  if (res == TUTTI_SUCCESS && getrandom(f.secret, sizeof f.secret, 0) != sizeof f.secret) {
    snprintf(err, sizeof err, "getrandom failed");
    res = TUTTI_ERR_SYSTEM;
  }
  if (res == TUTTI_SUCCESS) {
    /* The rendezvous thread answers SIGUSR1 from now on; it must not kill the process. */
    tutti__forensics_install(&cfg);
    res = tutti__rdv_serve(lfd, f.secret, cfg.init_timeout_s);
  }
  if (res != TUTTI_SUCCESS) {
    if (lfd >= 0) close(lfd);
    WARN("boot", -1, "tutti_get_unique_id: %s", err);
    return res;
  }
  tutti__uid_pack(&f, id);
  return TUTTI_SUCCESS;
}

tutti_result_t tutti_get_unique_id(tutti_unique_id_t *id) { return tutti__unique_id_at(NULL, id); }

/* Groups ranks by host and picks each peer's transport (the registry's rule). */
static tutti_result_t place_peers(struct tutti_comm *comm) {
  tutti_peer_t *me = &comm->peers[comm->rank];
  comm->nlocal = 0;
  for (int r = 0; r < comm->nranks; r++) {
    tutti_peer_t *p = &comm->peers[r];
    int same = !strcmp(p->host, me->host) && !strcmp(p->boot_id, me->boot_id);
    p->local_index = same ? comm->nlocal++ : -1;
  }
  TRY(tutti__transport_place(comm));
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  comm->oversubscribed = cpus > 0 && comm->nlocal > cpus;
  return TUTTI_SUCCESS;
}

static const char *lookup_env(const char *name, void *ctx) {
  (void)ctx;
  return getenv(name);
}

/* A launched job's claim to check against the table: the launcher's local rank + 1, or 0. */
static uint16_t launcher_local_claim(void) {
  tutti_env_info_t env;
  char err[320];
  if (tutti__env_parse(lookup_env, NULL, &env, err, sizeof err) != TUTTI_SUCCESS ||
      env.local_rank < 0 || env.local_rank >= UINT16_MAX)
    return 0;
  return (uint16_t)(env.local_rank + 1);
}

/* Everything after the rendezvous address is known: hello, table, transports. */
static tutti_result_t comm_build(struct tutti_comm *comm, uint32_t root_ip, uint16_t root_port,
                                 const uint8_t *secret, int wait_for_root) {
  char err[320];
  int rfd = -1, dfd = -1;
  tutti_rdv_entry_t me = {0}, *table = NULL;
  tutti_result_t res;
  int64_t t_start = tutti__now_ns();
  int64_t deadline = tutti__deadline_after(comm->cfg.init_timeout_s);
  uint32_t local_ip;

  /* The data connections prove this secret too, after the rendezvous. */
  _Static_assert(sizeof comm->secret == TUTTI_SECRET_BYTES, "secret size");
  memcpy(comm->secret, secret, TUTTI_SECRET_BYTES);

  res = tutti__rdv_connect(root_ip, root_port, comm->rank, deadline, wait_for_root, &rfd,
                           &local_ip, err, sizeof err);
  if (res != TUTTI_SUCCESS) {
    char a[64], why[sizeof err];
    snprintf(why, sizeof why, "%s", err);
    snprintf(err, sizeof err, "no rendezvous answers at %s (%.120s): %s",
             tutti__sock_addr_str(root_ip, root_port, a, sizeof a), why,
             wait_for_root ? "rank 0 never started it, or it ended (another job's address?)"
                           : "the unique id is stale (its job formed or ended already) or its "
                             "creator is gone");
    goto fail_err;
  }
  /* Data listeners use the interface that reaches the rendezvous unless told otherwise. */
  TRY_GOTO(listen_ip(&comm->cfg, local_ip, &me.ip, err, sizeof err), res, fail_err);
  TRY_GOTO(tutti__sock_listen(me.ip, 0, comm->nranks + 16, &dfd, &me.port, err, sizeof err),
           res, fail_err);
  me.pid = (int32_t)getpid();
  /* A launcher's local rank counts real hosts; TUTTI_HOST_ID regroups them, so its claim
   * no longer applies. */
  me.local_claim = wait_for_root && !comm->cfg.host_id[0] ? launcher_local_claim() : 0;
  tutti__host_identity(me.host, me.boot_id);
  tutti__topo_identity(&comm->cfg, me.host, me.boot_id);
  TRY_GOTO(tutti__rdv_exchange(rfd, secret, comm->nranks, comm->rank, &me, deadline, &table,
                               &comm->job_id, err, sizeof err),
           res, fail_err);
  close(rfd);
  rfd = -1;
  if (tutti__env_local_mismatch(table, comm->nranks, err, sizeof err)) {
    free(table);
    res = TUTTI_ERR_INVALID_USAGE;
    goto fail_err;
  }
  for (int r = 0; r < comm->nranks; r++) {
    tutti_peer_t *p = &comm->peers[r];
    p->pid = table[r].pid;
    p->ip = table[r].ip;
    p->port = table[r].port;
    memcpy(p->host, table[r].host, sizeof p->host);
    memcpy(p->boot_id, table[r].boot_id, sizeof p->boot_id);
  }
  free(table);
  int64_t t_rdv = tutti__now_ns();
  TRY_GOTO(place_peers(comm), res, out);
  TRY_GOTO(tutti__topo_init(comm), res, out);
  TRY_GOTO(tutti__transport_connect(comm, dfd), res, out);
  TRY_GOTO(tutti__model_agree(comm), res, out);
  /* After the agreement, so that every rank chunks alike. */
  if (comm->cfg.chunk_auto)
    comm->cfg.chunk_bytes = tutti__chunk_for_cache(comm->cfg.model.l2_bytes,
                                                   comm->cfg.chunk_bytes);
  /* Kept for tutti_comm_shrink: the survivors find each other through these listeners. */
  comm->listen_fd = dfd;
  dfd = -1;
  char tp[64];
  tutti__transport_label(comm, tp, sizeof tp);
  /* Where init's time goes: the rendezvous (bootstrap) or the transports' set-up. */
  INFO("boot", comm->rank, "joined: %d ranks, %d on this host, transport %s; rendezvous %.3f s, "
       "transports %.3f s", comm->nranks, comm->nlocal, tp, (double)(t_rdv - t_start) / 1e9,
       (double)(tutti__now_ns() - t_rdv) / 1e9);
  tutti__log_banner(comm->rank, comm->nranks, comm->nlocal, tp, comm->cma);
  goto out;
fail_err:
  res = tutti__error(comm, res, "%s", err);
out:
  if (rfd >= 0) close(rfd);
  if (dfd >= 0) close(dfd);
  return res;
}

void tutti__comm_free(struct tutti_comm *comm) {
  if (!comm) return;
  tutti__engine_destroy(comm);
  tutti__p2p_drop(comm);
  if (comm->listen_fd >= 0) close(comm->listen_fd);
  if (comm->retired_fd >= 0) close(comm->retired_fd);
  free(comm->userops);
  tutti__topo_free(comm);
  for (int i = 0; i < comm->ntps; i++) comm->tps[i]->ops->destroy(comm->tps[i]);
  if (comm->scratch) munmap(comm->scratch, comm->scratch_bytes);
  tutti__memreg_destroy(comm);
  free(comm->wants);
  free(comm->active);
  free(comm->cma_ops);
  free(comm->cma_pending);
  free(comm->cma_descs);
  free(comm->cma_tokens);
  free(comm->peers);
  tutti__auth_cleanse(comm->secret, sizeof comm->secret);
  free(comm);
}

tutti_result_t tutti__comm_alloc(int nranks, int rank, const char *op,
                                 const tutti_config_t *inherit, struct tutti_comm **out) {
  char err[256];
  tutti_result_t res = TUTTI_SUCCESS;
  struct tutti_comm *comm = calloc(1, sizeof *comm);
  *out = NULL;
  if (!comm) return TUTTI_ERR_SYSTEM;
  comm->listen_fd = -1;
  comm->retired_fd = -1;
  comm->rank = rank;
  comm->nranks = nranks;
  TUTTI_SET_OP(comm, op);
  comm->peers = calloc((size_t)nranks, sizeof *comm->peers);
  comm->wants = calloc((size_t)nranks, sizeof *comm->wants);
  comm->active = calloc((size_t)nranks, sizeof *comm->active);
  comm->cma_ops = calloc(2 * (size_t)nranks, sizeof(tutti_xfer_t));
  comm->cma_pending = calloc((size_t)nranks, sizeof *comm->cma_pending);
  comm->cma_descs = calloc((size_t)nranks, sizeof(cma_desc_t));
  comm->cma_tokens = calloc((size_t)nranks, sizeof *comm->cma_tokens);
  if (!comm->peers || !comm->wants || !comm->active || !comm->cma_ops || !comm->cma_pending ||
      !comm->cma_descs || !comm->cma_tokens) {
    res = tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory for %d ranks", nranks);
    goto fail;
  }
  if (inherit)
    comm->cfg = *inherit;
  else
    res = tutti__config_load(&comm->cfg, err, sizeof err);
  if (res == TUTTI_SUCCESS && !tutti__algo_find(comm->cfg.algo)) {
    snprintf(err, sizeof err, "TUTTI_ALGO=%s is not an algorithm (see tutti-info)",
             comm->cfg.algo);
    res = TUTTI_ERR_INVALID_ARGUMENT;
  }
  if (res != TUTTI_SUCCESS) {
    tutti__error(comm, res, "%s", err);
    goto fail;
  }
  *out = comm;
  return TUTTI_SUCCESS;
fail:
  tutti__comm_free(comm);
  return res;
}

tutti_result_t tutti__comm_create(tutti_comm_t *out, int nranks, int rank, uint32_t ip,
                                  uint16_t port, const uint8_t *secret, const char *op,
                                  const tutti_config_t *inherit, int wait_for_root) {
  struct tutti_comm *comm;
  tutti_result_t res = tutti__comm_alloc(nranks, rank, op, inherit, &comm);
  if (res != TUTTI_SUCCESS) return res;
  /* Before the rendezvous, which may take long: SIGUSR1 there reports, never kills. */
  tutti__forensics_install(&comm->cfg);
  /* A unique id's rendezvous listens from the moment the id exists, so a refusal is final;
   * a launched job's rank 0 may start its rendezvous after the others try. */
  TRY_GOTO(comm_build(comm, ip, port, secret, wait_for_root), res, fail);
  tutti__forensics_attach(comm);
  TUTTI_SET_OP(comm, NULL);
  *out = comm;
  return TUTTI_SUCCESS;
fail:
  tutti__init_error("%s", comm->last_error[0] ? comm->last_error : tutti_result_string(res));
  tutti__comm_free(comm);
  return res;
}

tutti_result_t tutti_comm_init_rank(tutti_comm_t *comm, int nranks, const tutti_unique_id_t *id,
                                    int rank) {
  const char *op = "tutti_comm_init_rank";
  tutti_uid_fields_t f;
  if (!comm || !id || nranks < 1 || nranks > TUTTI_MAX_RANKS || rank < 0 || rank >= nranks) {
    WARN("boot", rank, "%s: invalid argument (comm %p, id %p, rank %d of %d)", op,
         (void *)comm, (const void *)id, rank, nranks);
    tutti__init_error("%s: invalid argument (comm %p, id %p, rank %d of %d ranks; at most "
                      "%d ranks)", op, (void *)comm, (const void *)id, rank, nranks,
                      TUTTI_MAX_RANKS);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  *comm = NULL;
  if (tutti__uid_unpack(id, &f) != TUTTI_SUCCESS) {
    WARN("boot", rank, "%s: the id was not made by tutti_get_unique_id", op);
    tutti__init_error("%s: the id was not made by tutti_get_unique_id", op);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  return tutti__comm_create(comm, nranks, rank, f.ip, f.port, f.secret, op, NULL, 0);
}

/* The job secret of a launched job: TUTTI_SECRET (64 hex digits, set by tutti-run), else all
 * zeros, which authenticates nothing, so a job launched another way is as open as before. */
static tutti_result_t env_secret(uint8_t secret[TUTTI_SECRET_BYTES], int rank, char *err,
                                 size_t errlen) {
  static atomic_int told;
  const char *hex = getenv("TUTTI_SECRET");
  if (!hex || !*hex) {
    memset(secret, 0, TUTTI_SECRET_BYTES);
    /* Once, from rank 0: a launcher other than tutti-run sets no secret. */
    if (rank == 0 && !atomic_exchange(&told, 1))
      WARN("boot", 0, "TUTTI_SECRET is not set: this job's connections are not authenticated "
           "(any process that reaches its ports can join or inject data); export TUTTI_SECRET="
           "$(openssl rand -hex 32) to every rank, or launch with tutti-run, which sets one");
    return TUTTI_SUCCESS;
  }
  if (tutti__auth_parse_secret(hex, secret) != 0) {
    /* The value is never echoed: it is, or is meant to be, a secret. */
    snprintf(err, errlen, "TUTTI_SECRET must be %d hex digits (a %d-bit job secret), not a "
             "%zu-character string with other characters or another length",
             2 * TUTTI_SECRET_BYTES, 8 * TUTTI_SECRET_BYTES, strlen(hex));
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti_comm_init_env(tutti_comm_t *comm) {
  const char *op = "tutti_comm_init_env";
  if (!comm) {
    WARN("boot", -1, "%s: comm is NULL", op);
    tutti__init_error("%s: comm is NULL", op);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  *comm = NULL;
  tutti_env_info_t env;
  tutti_config_t cfg;
  char err[320];
  uint32_t ip;
  uint8_t secret[TUTTI_SECRET_BYTES] = {0};
  tutti_result_t res = tutti__config_load(&cfg, err, sizeof err);
  if (res == TUTTI_SUCCESS) res = tutti__env_parse(lookup_env, NULL, &env, err, sizeof err);
  if (res == TUTTI_SUCCESS) res = env_secret(secret, env.rank, err, sizeof err);
  if (res == TUTTI_SUCCESS) res = tutti__sock_resolve(env.host, &ip, err, sizeof err);
  if (res == TUTTI_SUCCESS && env.rank == 0) {
    int lfd;
    res = tutti__sock_listen(ip, htons(env.port), 1024, &lfd, NULL, err, sizeof err);
    if (res == TUTTI_SUCCESS) {
      tutti__forensics_install(&cfg);
      res = tutti__rdv_serve(lfd, secret, cfg.init_timeout_s);
      if (res != TUTTI_SUCCESS) {
        close(lfd);
        snprintf(err, sizeof err, "cannot start the rendezvous thread");
      }
    }
  }
  if (res != TUTTI_SUCCESS) {
    WARN("boot", -1, "%s: %s", op, err);
    tutti__init_error("%s: %s", op, err);
    tutti__auth_cleanse(secret, sizeof secret);
    return res;
  }
  res = tutti__comm_create(comm, env.size, env.rank, ip, htons(env.port), secret, op, NULL, 1);
  tutti__auth_cleanse(secret, sizeof secret);
  return res;
}

tutti_result_t tutti_comm_destroy(tutti_comm_t comm) {
  if (!comm) return TUTTI_ERR_INVALID_ARGUMENT;
  tutti__remember_save(comm);
  tutti__comm_free(comm);
  return TUTTI_SUCCESS;
}

tutti_result_t tutti_comm_abort(tutti_comm_t comm) {
  if (!comm) return TUTTI_ERR_INVALID_ARGUMENT;
  /* The owning thread may be inside a collective: only the flag, the peers and the wake-ups
   * are touched here; the owner sees the flag and unwinds its own state. */
  static const char why[] = "tutti_comm_abort was called";
  atomic_store(&comm->aborted, 1);
  for (int i = 0; i < comm->ntps; i++) {
    comm->tps[i]->ops->fail(comm->tps[i], why);
    comm->tps[i]->ops->wake(comm->tps[i]);
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti_comm_set_timeout(tutti_comm_t comm, double seconds) {
  if (!comm) return TUTTI_ERR_INVALID_ARGUMENT;
  if (!(seconds > 0) || seconds > 1e9) {
    TUTTI_SET_OP(comm, "tutti_comm_set_timeout");
    return tutti__error(comm, TUTTI_ERR_INVALID_ARGUMENT, "timeout %g is not a positive number "
                        "of seconds", seconds);
  }
  /* The progress thread reads the timeout while it runs a request. */
  if (!tutti__engine_idle(comm)) {
    TUTTI_SET_OP(comm, "tutti_comm_set_timeout");
    return tutti__error_soft(comm, TUTTI_ERR_INVALID_USAGE, "requests of this communicator are "
                             "still in flight; wait for them (or test them done) first");
  }
  comm->cfg.timeout_s = seconds;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti_comm_rank(tutti_comm_t comm, int *rank) {
  if (!comm || !rank) return TUTTI_ERR_INVALID_ARGUMENT;
  *rank = comm->rank;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti_comm_size(tutti_comm_t comm, int *size) {
  if (!comm || !size) return TUTTI_ERR_INVALID_ARGUMENT;
  *size = comm->nranks;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__scratch(struct tutti_comm *comm, size_t bytes, void **out) {
  if (bytes <= comm->scratch_bytes) {
    *out = comm->scratch;
    return TUTTI_SUCCESS;
  }
  /* mmap, not malloc: the memory is kept for the communicator's life, so pages are faulted
   * in once rather than on every call (the MPIs' 64 MiB cliff). */
  size_t sz = (bytes + 0xFFFFF) & ~(size_t)0xFFFFF;
  void *p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return tutti__error(comm, TUTTI_ERR_SYSTEM, "cannot map %zu bytes of scratch memory", sz);
  if (comm->scratch) munmap(comm->scratch, comm->scratch_bytes);
  tutti__first_use(comm, p, sz);
  comm->scratch = p;
  comm->scratch_bytes = sz;
  *out = p;
  return TUTTI_SUCCESS;
}
