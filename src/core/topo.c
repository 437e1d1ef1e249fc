/* The topology of a communicator (topo.h). */
#include "core/topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int same_host(const tutti_peer_t *a, const tutti_peer_t *b) {
  return !strcmp(a->host, b->host) && !strcmp(a->boot_id, b->boot_id);
}

/* One allocation holds every array; quadratic in the number of hosts only, which is fine
 * for the host counts a rendezvous table serves. */
static tutti_topo_t *build(const struct tutti_comm *comm) {
  int n = comm->nranks;
  tutti_topo_t *t = calloc(1, sizeof *t + sizeof(int) * (6 * (size_t)n + 1));
  if (!t) return NULL;
  int *p = (int *)(t + 1);
  t->host_of = p;
  t->local_of = p + n;
  t->ranks = p + 2 * n;
  t->pos_of = p + 3 * n;
  int *leader = p + 4 * n; /* host -> its lowest rank */
  t->host_first = p + 5 * n;
  int *size = t->pos_of;   /* per-host counts, before pos_of is filled */
  for (int r = 0; r < n; r++) {
    int h = 0;
    while (h < t->nhosts && !same_host(&comm->peers[leader[h]], &comm->peers[r])) h++;
    if (h == t->nhosts) {
      leader[t->nhosts++] = r;
      size[h] = 0;
    }
    t->host_of[r] = h;
    t->local_of[r] = size[h]++;
  }
  t->host_first[0] = 0;
  t->max_local = 0;
  t->min_local = n;
  for (int h = 0; h < t->nhosts; h++) {
    t->host_first[h + 1] = t->host_first[h] + size[h];
    if (size[h] > t->max_local) t->max_local = size[h];
    if (size[h] < t->min_local) t->min_local = size[h];
  }
  for (int r = 0; r < n; r++) t->ranks[t->host_first[t->host_of[r]] + t->local_of[r]] = r;
  for (int i = 0; i < n; i++) t->pos_of[t->ranks[i]] = i;
  return t;
}

tutti_topo_t *tutti__topo(struct tutti_comm *comm) {
  if (!comm->topo) comm->topo = build(comm);
  return comm->topo;
}

tutti_result_t tutti__topo_init(struct tutti_comm *comm) {
  const tutti_topo_t *t = tutti__topo(comm);
  if (!t)
    return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory for the topology of %d ranks",
                        comm->nranks);
  if (tutti__log_enabled(TUTTI_LOG_INFO, "boot")) {
    char sizes[256];
    size_t len = 0;
    sizes[0] = '\0';
    for (int h = 0; h < t->nhosts && len + 16 < sizeof sizes; h++)
      len += (size_t)snprintf(sizes + len, sizeof sizes - len, "%s%d", h ? "+" : "",
                              tutti__topo_nlocal(t, h));
    if (len + 16 >= sizeof sizes) snprintf(sizes + len, sizeof sizes - len, "...");
    INFO("boot", comm->rank, "%d host%s: %s ranks; this rank is local rank %d of host %d",
         t->nhosts, t->nhosts == 1 ? "" : "s", sizes, t->local_of[comm->rank],
         t->host_of[comm->rank]);
  }
  return TUTTI_SUCCESS;
}

void tutti__topo_free(struct tutti_comm *comm) {
  if (comm->topo) free(comm->topo->work);
  free(comm->topo);
  comm->topo = NULL;
}

void tutti__topo_identity(const tutti_config_t *cfg, char *host, char *boot_id) {
  if (!cfg->host_id[0]) return;
  snprintf(host, TUTTI_HOST_BYTES, "%s", cfg->host_id);
  /* A fixed boot id: the id alone decides, so two machines given the same id are one host
   * to tutti (and would fail to share memory: the rule is the user's to keep). */
  snprintf(boot_id, 40, "TUTTI_HOST_ID");
}
