/*
 * The transport registry: one row per transport, and the loops that core/ runs over a
 * communicator's live transports. This is the one file that names every transport; adding
 * one means writing its file and adding its row here (docs/adding-a-transport.md).
 */
#include <stdio.h>
#include <string.h>

#include "transport/transport.h"

/* The constructors of the rows below (each in its transport's file). */
tutti_result_t tutti__shm_create(struct tutti_comm *comm, int listen_fd, tutti_transport_t **out);
tutti_result_t tutti__tcp_create(struct tutti_comm *comm, int listen_fd, tutti_transport_t **out);

/* Auto placement takes, for each peer, the first row that can serve it. */
static const tutti_transport_row_t rows[] = {
    /* Ranks as threads of one process: made by tutti_comm_init_threads (mem.c), never placed
     * here. Threads are never stopped one by one, so it has no peer-state poll. */
    {"mem", TUTTI_TRANSPORT_MEM, TUTTI_SERVES_THREADS, TUTTI_COST_LOCAL, TUTTI_CAP_SINGLE_COPY,
     NULL, NULL},
    {"shm", TUTTI_TRANSPORT_SHM, TUTTI_SERVES_HOST, TUTTI_COST_LOCAL,
     TUTTI_CAP_MAILBOX | TUTTI_CAP_SINGLE_COPY, tutti__shm_create, tutti__host_stopped_peer},
    {"tcp", TUTTI_TRANSPORT_TCP, TUTTI_SERVES_HOST | TUTTI_SERVES_ANY, TUTTI_COST_NETWORK, 0,
     tutti__tcp_create, tutti__host_stopped_peer},
};
#define NROWS ((int)(sizeof rows / sizeof rows[0]))

const tutti_transport_row_t *tutti__transport_rows(int *count) {
  *count = NROWS;
  return rows;
}

static const tutti_transport_row_t *row_of(int kind) {
  for (int i = 0; i < NROWS; i++)
    if (rows[i].kind == kind) return &rows[i];
  return NULL;
}

tutti_result_t tutti__transport_place(struct tutti_comm *comm) {
  const tutti_transport_row_t *forced = row_of(comm->cfg.transport);
  for (int r = 0; r < comm->nranks; r++) {
    tutti_peer_t *p = &comm->peers[r];
    if (r == comm->rank) {
      p->kind = 0;
      continue;
    }
    int need = p->local_index >= 0 ? TUTTI_SERVES_HOST : TUTTI_SERVES_ANY;
    const tutti_transport_row_t *pick = NULL;
    if (forced) {
      if (forced->create && (forced->serves & need)) pick = forced;
    } else {
      for (int i = 0; i < NROWS && !pick; i++)
        if (rows[i].create && (rows[i].serves & need)) pick = &rows[i];
    }
    if (!pick) {
      char who[128];
      return tutti__error(comm, TUTTI_ERR_INVALID_USAGE, "TUTTI_TRANSPORT=%s, but %s is on "
                          "another host", forced ? forced->name : "auto",
                          tutti__peer_desc(comm, r, who, sizeof who));
    }
    p->kind = pick->kind;
  }
  return TUTTI_SUCCESS;
}

void tutti__transport_attach(struct tutti_comm *comm, int kind, tutti_transport_t *t) {
  t->row = row_of(kind);
  comm->tps[comm->ntps++] = t;
  if (t->row && (t->row->serves & TUTTI_SERVES_THREADS)) comm->thread_ranks = 1;
  if (t->ops->mbox && !comm->calls) comm->calls = t;
}

/* The capabilities every live transport's row declares. */
static int rows_caps(const struct tutti_comm *comm) {
  int caps = ~0;
  for (int i = 0; i < comm->ntps; i++) caps &= comm->tps[i]->row ? comm->tps[i]->row->caps : 0;
  return caps;
}

tutti_result_t tutti__transport_connect(struct tutti_comm *comm, int listen_fd) {
  for (int i = 0; i < NROWS; i++) {
    int needed = 0;
    for (int r = 0; r < comm->nranks && !needed; r++) needed = comm->peers[r].kind == rows[i].kind;
    if (!needed || !rows[i].create) continue;
    tutti_transport_t *t = NULL;
    TRY(rows[i].create(comm, listen_fd, &t));
    tutti__transport_attach(comm, rows[i].kind, t);
  }
  /* One-shot mailboxes need one transport with them serving every peer. */
  if (comm->ntps == 1 && comm->tps[0]->ops->mbox && (rows_caps(comm) & TUTTI_CAP_MAILBOX) &&
      comm->nlocal == comm->nranks)
    comm->mbox = comm->tps[0];
  /* Single-copy reads need every peer's memory readable: every live transport must say so
   * (a transport that set comm->cma at its creation says so for its own peers only). */
  if (!(rows_caps(comm) & TUTTI_CAP_SINGLE_COPY)) comm->cma = 0;
  return TUTTI_SUCCESS;
}

tutti_transport_t *tutti__transport_of(const struct tutti_comm *comm, int kind) {
  for (int i = 0; i < comm->ntps; i++)
    if (comm->tps[i]->row && comm->tps[i]->row->kind == kind) return comm->tps[i];
  return NULL;
}

const char *tutti__transport_label(const struct tutti_comm *comm, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < comm->ntps && at < len; i++)
    at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? "+" : "", comm->tps[i]->ops->name);
  if (!comm->ntps) snprintf(buf, len, "self");
  return buf;
}

void tutti__comm_fail(struct tutti_comm *comm, tutti_result_t res) {
  if (comm->failed != TUTTI_SUCCESS) return;
  comm->failed = res;
  for (int i = 0; i < comm->ntps; i++) comm->tps[i]->ops->fail(comm->tps[i], comm->last_error);
}

int tutti__transport_cost_class(const struct tutti_comm *comm) {
  int c = TUTTI_COST_LOCAL;
  for (int i = 0; i < comm->ntps; i++)
    if (comm->tps[i]->row && comm->tps[i]->row->cost_class > c) c = comm->tps[i]->row->cost_class;
  return c;
}

tutti_result_t tutti__transport_check(struct tutti_comm *comm) {
  for (int i = 0; i < comm->ntps; i++)
    if (comm->tps[i]->ops->check) TRY(comm->tps[i]->ops->check(comm->tps[i]));
  return TUTTI_SUCCESS;
}

int tutti__stopped_peer(const struct tutti_comm *comm) {
  for (int i = 0; i < comm->ntps; i++) {
    tutti_transport_t *t = comm->tps[i];
    int r = t->row && t->row->stopped_peer ? t->row->stopped_peer(t) : -1;
    if (r >= 0) return r;
  }
  return -1;
}

/* 1 if pid (of this host) is stopped by a signal: state T in /proc/pid/stat. Not t (traced):
 * LeakSanitizer briefly traces every exiting process of an ASan build. */
static int pid_stopped(int32_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
  return p && p[1] == ' ' && p[2] == 'T';
}

int tutti__host_stopped_peer(tutti_transport_t *t) {
  const struct tutti_comm *comm = t->comm;
  const tutti_peer_t *me = &comm->peers[comm->rank];
  for (int r = 0; r < comm->nranks; r++) {
    const tutti_peer_t *p = &comm->peers[r];
    /* A thread rank of this process is running this very code. */
    if (r != comm->rank && p->tp == t && p->pid != me->pid && strcmp(p->host, me->host) == 0 &&
        strcmp(p->boot_id, me->boot_id) == 0 && pid_stopped(p->pid))
      return r;
  }
  return -1;
}
