/* Unit tests of the transport registry: which row serves which peer (auto, and under
 * TUTTI_TRANSPORT), the error for a peer a forced transport cannot reach, and what a
 * communicator's live transports say about it (label, cost class, mailboxes). */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "harness.h"
#include "transport/transport.h"

/* Four ranks, this one rank 0: ranks 0 and 1 on host a, ranks 2 and 3 on host b. */
static struct tutti_comm *fake_comm(int transport) {
  struct tutti_comm *c = calloc(1, sizeof *c);
  c->nranks = 4;
  c->rank = 0;
  c->cfg.transport = transport;
  c->peers = calloc(4, sizeof *c->peers);
  for (int r = 0; r < 4; r++) {
    strcpy(c->peers[r].host, r < 2 ? "a" : "b");
    c->peers[r].pid = 100 + r;
    c->peers[r].local_index = r < 2 ? r : -1;
  }
  c->nlocal = 2;
  return c;
}

static void free_comm(struct tutti_comm *c) {
  free(c->peers);
  free(c);
}

TEST(auto_takes_shm_within_a_host_and_tcp_across) {
  struct tutti_comm *c = fake_comm(TUTTI_TRANSPORT_AUTO);
  ASSERT_EQ(tutti__transport_place(c), TUTTI_SUCCESS);
  ASSERT_EQ(c->peers[0].kind, 0);
  ASSERT_EQ(c->peers[1].kind, TUTTI_TRANSPORT_SHM);
  ASSERT_EQ(c->peers[2].kind, TUTTI_TRANSPORT_TCP);
  ASSERT_EQ(c->peers[3].kind, TUTTI_TRANSPORT_TCP);
  free_comm(c);
}

TEST(forced_tcp_serves_every_peer) {
  struct tutti_comm *c = fake_comm(TUTTI_TRANSPORT_TCP);
  ASSERT_EQ(tutti__transport_place(c), TUTTI_SUCCESS);
  for (int r = 1; r < 4; r++) ASSERT_EQ(c->peers[r].kind, TUTTI_TRANSPORT_TCP);
  free_comm(c);
}

TEST(forced_shm_refuses_a_peer_on_another_host) {
  struct tutti_comm *c = fake_comm(TUTTI_TRANSPORT_SHM);
  ASSERT_EQ(tutti__transport_place(c), TUTTI_ERR_INVALID_USAGE);
  ASSERT(strstr(c->last_error, "TUTTI_TRANSPORT=shm") != NULL);
  ASSERT(strstr(c->last_error, "rank 2") != NULL);
  ASSERT(strstr(c->last_error, "another host") != NULL);
  free_comm(c);
}

TEST(forced_shm_on_one_host_serves_every_peer) {
  struct tutti_comm *c = fake_comm(TUTTI_TRANSPORT_SHM);
  for (int r = 0; r < 4; r++) {
    strcpy(c->peers[r].host, "a");
    c->peers[r].local_index = r;
  }
  c->nlocal = 4;
  ASSERT_EQ(tutti__transport_place(c), TUTTI_SUCCESS);
  for (int r = 1; r < 4; r++) ASSERT_EQ(c->peers[r].kind, TUTTI_TRANSPORT_SHM);
  free_comm(c);
}

TEST(rows_are_unique_and_mem_is_never_placed) {
  int n;
  const tutti_transport_row_t *rows = tutti__transport_rows(&n);
  ASSERT(n >= 3);
  for (int i = 0; i < n; i++) {
    for (int j = i + 1; j < n; j++) {
      ASSERT(rows[i].kind != rows[j].kind);
      ASSERT(strcmp(rows[i].name, rows[j].name) != 0);
    }
    /* A row that serves only threads makes its own communicators: nothing to create. */
    if (rows[i].serves == TUTTI_SERVES_THREADS) ASSERT(rows[i].create == NULL);
    else ASSERT(rows[i].create != NULL);
  }
}

static void noop(tutti_transport_t *t) { (void)t; }
static const tutti_transport_ops_t fake_shm = {.name = "shm", .destroy = noop};
static const tutti_transport_ops_t fake_tcp = {.name = "tcp", .destroy = noop};

TEST(live_transports_give_label_and_cost_class) {
  struct tutti_comm *c = fake_comm(TUTTI_TRANSPORT_AUTO);
  char buf[64];
  ASSERT_STR_EQ(tutti__transport_label(c, buf, sizeof buf), "self");
  tutti_transport_t s = {&fake_shm, c, NULL}, t = {&fake_tcp, c, NULL};
  tutti__transport_attach(c, TUTTI_TRANSPORT_SHM, &s);
  ASSERT_EQ(tutti__transport_cost_class(c), TUTTI_COST_LOCAL);
  tutti__transport_attach(c, TUTTI_TRANSPORT_TCP, &t);
  ASSERT_STR_EQ(tutti__transport_label(c, buf, sizeof buf), "shm+tcp");
  ASSERT_EQ(tutti__transport_cost_class(c), TUTTI_COST_NETWORK);
  ASSERT(tutti__transport_of(c, TUTTI_TRANSPORT_TCP) == &t);
  ASSERT(tutti__transport_of(c, TUTTI_TRANSPORT_MEM) == NULL);
  ASSERT_EQ(c->thread_ranks, 0);
  free_comm(c);
}

TEST(thread_ranks_use_mem_without_mailboxes) {
  tutti_comm_t comms[3];
  ASSERT_EQ(tutti_comm_init_threads(comms, 3), TUTTI_SUCCESS);
  for (int r = 0; r < 3; r++) {
    struct tutti_comm *c = comms[r];
    char buf[64];
    ASSERT_STR_EQ(tutti__transport_label(c, buf, sizeof buf), "mem");
    ASSERT_EQ(c->ntps, 1);
    ASSERT(c->tps[0]->row != NULL && !strcmp(c->tps[0]->row->name, "mem"));
    ASSERT_EQ(tutti__transport_cost_class(c), TUTTI_COST_LOCAL);
    ASSERT_EQ(tutti__mbox_capacity(c), (size_t)0);
    ASSERT_EQ(c->thread_ranks, 1);
    for (int p = 0; p < 3; p++) ASSERT(c->peers[p].tp == (p == r ? NULL : c->tps[0]));
  }
  for (int r = 0; r < 3; r++) tutti_comm_destroy(comms[r]);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
