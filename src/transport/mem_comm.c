/* The in-memory transport's communicators and counters (mem_int.h, mem.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "core/comm_create.h"
#include "core/forensics.h"
#include "transport/mem_int.h"

/* ---- Counters -------------------------------------------------------------------------- */

int tutti__mem_is(const struct tutti_comm *comm) {
  return comm && tutti__transport_of(comm, TUTTI_TRANSPORT_MEM);
}

void tutti__mem_stats(const struct tutti_comm *comm, tutti_mem_stats_t *out) {
  memset(out, 0, sizeof *out);
  if (!tutti__mem_is(comm)) return;
  const mem_transport_t *t = (const mem_transport_t *)tutti__transport_of(comm, TUTTI_TRANSPORT_MEM);
  *out = t->st;
  out->steps = t->steps;
  out->path_bytes = t->path_bytes;
  out->model_s = t->now;
}

void tutti__mem_stats_reset(struct tutti_comm *comm) {
  if (!tutti__mem_is(comm)) return;
  mem_transport_t *t = (mem_transport_t *)tutti__transport_of(comm, TUTTI_TRANSPORT_MEM);
  int queues = t->st.queues_out;
  memset(&t->st, 0, sizeof t->st);
  t->st.queues_out = queues;
  t->steps = t->path_bytes = 0;
  t->now = t->tx_free = t->rx_free = 0;
  t->epoch++; /* every queue's peer counts afresh */
}

void tutti__mem_set_model(struct tutti_comm *comm, double alpha, double beta) {
  if (!tutti__mem_is(comm)) return;
  mem_transport_t *t = (mem_transport_t *)tutti__transport_of(comm, TUTTI_TRANSPORT_MEM);
  t->alpha = alpha;
  t->beta = beta;
}

/* ---- Making the communicators ---------------------------------------------------------- */

/* Single-copy reads work between threads when the kernel lets this process read itself. */
static int self_readable(void) {
  uint64_t word = 0x6d656d21u, got = 0;
  struct iovec l = {&got, sizeof got}, r = {&word, sizeof word};
  return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)sizeof got && got == word;
}

static tutti_result_t make_rank(mem_group_t *g, int r, const tutti_config_t *cfg,
                                const tutti_peer_t *proto, int cma, struct tutti_comm **out) {
  struct tutti_comm *comm;
  TRY(tutti__comm_alloc(g->n, r, "tutti_comm_init_threads", cfg, &comm));
  mem_transport_t *t = calloc(1, sizeof *t);
  if (!t) {
    tutti__comm_free(comm);
    return TUTTI_ERR_SYSTEM;
  }
  t->base.ops = &tutti__mem_ops;
  t->base.comm = comm;
  t->g = g;
  atomic_fetch_add(&g->refs, 1);
  t->me = r;
  t->alpha = 1e-6;
  t->beta = 1.0 / 10e9;
  t->epoch = 1;
  tutti__transport_attach(comm, TUTTI_TRANSPORT_MEM, &t->base);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  comm->nlocal = g->n;
  comm->oversubscribed = cpus > 0 && g->n > cpus;
  comm->cma = cma && g->n > 1;
  for (int p = 0; p < g->n; p++) {
    comm->peers[p] = *proto;
    comm->peers[p].local_index = p;
    comm->peers[p].kind = p == r ? 0 : TUTTI_TRANSPORT_MEM;
    comm->peers[p].tp = p == r ? NULL : &t->base;
  }
  tutti__forensics_attach(comm);
  TUTTI_SET_OP(comm, NULL);
  *out = comm;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__comm_init_threads_cfg(tutti_comm_t *comms, int nranks,
                                            const tutti_config_t *cfg_in) {
  static const char op[] = "tutti_comm_init_threads";
  if (!comms || nranks < 1 || nranks > TUTTI_MAX_RANKS) {
    WARN("boot", -1, "%s: invalid argument (comms %p, nranks %d; 1 to %d ranks)", op,
         (void *)comms, nranks, TUTTI_MAX_RANKS);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  for (int r = 0; r < nranks; r++) comms[r] = NULL;
  tutti_config_t cfg;
  char err[256];
  if (cfg_in) {
    cfg = *cfg_in;
  } else if (tutti__config_load(&cfg, err, sizeof err) != TUTTI_SUCCESS) {
    WARN("boot", -1, "%s: %s", op, err);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  /* The tuner reads the transport setting; thread ranks are one host's, whatever it says. */
  cfg.transport = TUTTI_TRANSPORT_AUTO;
  mem_group_t *g = tutti__mem_group_new(nranks, cfg.shm_queue_bytes);
  if (!g) {
    WARN("boot", -1, "%s: out of memory for %d ranks", op, nranks);
    return TUTTI_ERR_SYSTEM;
  }
  tutti_peer_t proto;
  memset(&proto, 0, sizeof proto);
  proto.pid = (int32_t)getpid();
  tutti__host_identity(proto.host, proto.boot_id);
  int cma = cfg.cma && self_readable();
  tutti_result_t res = TUTTI_SUCCESS;
  for (int r = 0; r < nranks && res == TUTTI_SUCCESS; r++)
    res = make_rank(g, r, &cfg, &proto, cma, &comms[r]);
  tutti__mem_group_unref(g); /* the communicators hold it now */
  if (res != TUTTI_SUCCESS) {
    WARN("boot", -1, "%s: cannot make %d communicators (%s)", op, nranks,
         tutti_result_string(res));
    for (int r = 0; r < nranks; r++) {
      tutti__comm_free(comms[r]);
      comms[r] = NULL;
    }
    return res;
  }
  INFO("boot", 0, "%s: %d thread ranks, %zu-byte queues, single-copy %s", op, nranks, g->cap,
       cma ? "on" : "off");
  return TUTTI_SUCCESS;
}

tutti_result_t tutti_comm_init_threads(tutti_comm_t *comms, int nranks) {
  return tutti__comm_init_threads_cfg(comms, nranks, NULL);
}
