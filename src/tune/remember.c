/*
 * Online selection's settled picks, kept between jobs (TUTTI_TUNE_REMEMBER, default 1).
 *
 * A size's trials cost a job its first dozen or so calls of that size, and where ranks
 * outnumber CPUs many more: n = 8 on 2 CPUs, a 1 MiB all-reduce tries four candidates 8
 * calls each (online.c), about 33 calls of 1.1-2.5 ms, where a benchmark (and many a short
 * job) makes fewer than 20 such calls; the trials were all it timed (tutti-bench there ran
 * 1780-2500 us a call against 1140-1280 for the best candidates forced). The same job run
 * again on the same host tries the same candidates again and, mostly, settles alike. So rank
 * 0 keeps each settled (collective, size) in a file next to the machine cache, keyed by the
 * host key (a new boot, kernel or CPU starts afresh) and by the job's shape (ranks, hosts,
 * ranks on the most crowded host, the link class, single copy, a forced chunk size, the
 * mailbox's capacity: what the tuner's query holds besides the size), and a later job of that
 * shape starts those sizes settled on rank 0's remembered pick, sent with the model, so every
 * rank starts alike. A remembered pick is taken only where it is still among the model's
 * candidates for that size and no rank's buffers of its first call are registered (online.c),
 * and is re-checked like one the trials made, as far apart as its job had come to. The file
 * is written at tutti_comm_destroy (never in a call), by read, merge and rename: two jobs
 * ending at once lose one's update, nothing more.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/tuner.h"
#include "core/colls.h"
#include "core/internal.h"
#include "core/topo.h"
#include "transport/transport.h"
#include "tune/model.h"
#include "tune/online.h"

#define PICKS_FILE "picks"
#define PICKS_HEADER "tutti-picks 1"
/* Lines kept (the newest): a few shapes of a few dozen sizes each; 400 lines of at most
 * ~150 characters stay under the 64 KiB tutti__table_slurp reads. */
#define PICKS_MAX_LINES 400
#define PICKS_LINE 320

void tutti__remember_shape(const tutti_tune_query_t *q, int chunk_auto, char *buf, size_t len) {
  snprintf(buf, len, "n=%d,hosts=%d,local=%d,net=%d,cma=%d,chunk=%zu,mbox=%zu", q->nranks,
           q->nhosts > 1 ? q->nhosts : 1, q->max_local, q->network, q->cma,
           chunk_auto ? (size_t)0 : q->chunk_bytes, q->mbox_bytes);
}

/* What the tuner's query of comm holds besides the size, so a remembered pick is used only
 * where the model was asked the same question. */
static void job_shape(const struct tutti_comm *comm, char *buf, size_t len) {
  tutti_coll_args_t a = {.coll = TUTTI_COLL_ALLREDUCE, .esize = 1};
  tutti_tune_query_t q;
  tutti__tune_query(comm, &a, &q);
  tutti__remember_shape(&q, comm->cfg.chunk_auto, buf, len);
}

static int coll_of(const char *name) {
  for (int c = 0; c < TUTTI_COLL_COUNT; c++)
    if (!strcmp(tutti__coll_name((tutti_coll_t)c), name)) return c;
  return -1;
}

/* The file's lines after its header and key, if it is this host's (else NULL: none yet, or
 * stale). The caller frees the text. */
static char *load_lines(const char *path, char **body) {
  char err[320], key[512];
  char *text = tutti__table_slurp(path, err, sizeof err);
  if (!text) return NULL;
  tutti__host_key(key, sizeof key);
  size_t hl = strlen(PICKS_HEADER), kl = strlen(key);
  char *p = text;
  if (strncmp(p, PICKS_HEADER "\n", hl + 1)) goto stale;
  p += hl + 1;
  if (strncmp(p, "key ", 4) || strncmp(p + 4, key, kl) || p[4 + kl] != '\n') goto stale;
  *body = p + 4 + kl + 1;
  return text;
stale:
  INFO("tune", 0, "the remembered picks %s are for another host, boot or version: not used",
       path);
  free(text);
  return NULL;
}

/* Splits a body line into shape, collective, size, algorithm name and re-check gap (0 where
 * the line has none): 0, or -1. */
static int parse_line(const char *line, char *shape, int *coll, size_t *bytes, char *algo,
                      unsigned *gap) {
  char cname[32];
  *gap = 0;
  if (sscanf(line, "%255s %31s %zu %27s %u", shape, cname, bytes, algo, gap) < 4) return -1;
  *coll = coll_of(cname);
  return *coll < 0 ? -1 : 0;
}

int tutti__remember_read(const char *shape, tutti_remember_wire_t *w, char *path, size_t plen) {
  char *body = NULL;
  memset(w, 0, sizeof *w);
  if (tutti__host_cache_file(PICKS_FILE, path, plen)) return -1;
  char *text = load_lines(path, &body);
  if (!text) return -1;
  /* Later lines are newer: a size's last line wins. */
  char *save = NULL;
  for (char *line = strtok_r(body, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char sh[256], algo[28];
    int coll;
    size_t bytes;
    unsigned gap;
    if (parse_line(line, sh, &coll, &bytes, algo, &gap) || strcmp(sh, shape)) continue;
    uint32_t i = 0;
    while (i < w->n && !(w->e[i].coll == (uint32_t)coll && w->e[i].bytes == bytes)) i++;
    if (i == w->n) {
      if (w->n == TUTTI_ONLINE_SLOTS) continue;
      w->n++;
    }
    w->e[i].coll = (uint32_t)coll;
    w->e[i].bytes = bytes;
    w->e[i].gap = gap;
    snprintf(w->e[i].algo, sizeof w->e[i].algo, "%s", algo);
  }
  free(text);
  return 0;
}

void tutti__remember_load(const struct tutti_comm *comm, tutti_remember_wire_t *w) {
  char path[1024], shape[256];
  memset(w, 0, sizeof *w);
  if (!comm->cfg.tune_remember || !comm->cfg.tune_online) return;
  job_shape(comm, shape, sizeof shape);
  if (tutti__remember_read(shape, w, path, sizeof path) == 0 && w->n)
    INFO("tune", 0, "%u sizes remembered for this job's shape (%s) in %s", w->n, shape, path);
}

void tutti__remember_take(struct tutti_comm *comm, const tutti_remember_wire_t *w) {
  tutti_online_t *o = &comm->online;
  o->nknown = 0;
  for (uint32_t i = 0; i < w->n && i < TUTTI_ONLINE_SLOTS; i++) {
    char name[sizeof w->e[i].algo];
    memcpy(name, w->e[i].algo, sizeof name);
    name[sizeof name - 1] = '\0';
    const tutti_algo_t *a = tutti__algo_find(name);
    if (!a || w->e[i].coll >= TUTTI_COLL_COUNT) continue; /* another build's name */
    o->known[o->nknown].coll = (int)w->e[i].coll;
    o->known[o->nknown].bytes = (size_t)w->e[i].bytes;
    o->known[o->nknown].algo = a;
    o->known[o->nknown].gap = w->e[i].gap;
    o->nknown++;
  }
}

void tutti__remember_save(const struct tutti_comm *comm) {
  const tutti_online_t *o = &comm->online;
  /* A failed or aborted communicator's trials may have ended in the failure. */
  if (comm->rank != 0 || !comm->cfg.tune_remember || !comm->cfg.tune_online || comm->failed ||
      atomic_load(&comm->aborted))
    return;
  /* Each size's pick: the agreed one, or for a size whose trials this job did not finish,
   * the winner of every candidate's first turn (a short job's trials of a crowded host's
   * size are all its calls of it: a 20-call benchmark against 33 trials; the next job then
   * starts where this one's trials pointed rather than trying again). */
  const tutti_algo_t *pick[TUTTI_ONLINE_SLOTS];
  int settled = 0;
  for (int i = 0; i < o->used; i++) {
    const tutti_online_slot_t *s = &o->slot[i];
    /* Single-copy algorithms run several times faster on registered buffers, and the shape
     * cannot tell such calls from plain ones: sizes run on them are not kept. */
    pick[i] = s->ncand < 2 || s->reg || s->reg_seen ? NULL
              : s->pick    ? s->pick
              : s->first_done ? s->cand[tutti__online_winner(s, s->first_t)]
                              : NULL;
    settled += pick[i] != NULL;
  }
  if (!settled) return;
  char path[1024], shape[256], key[512], err[320], *body = NULL;
  if (tutti__host_cache_file(PICKS_FILE, path, sizeof path)) return;
  job_shape(comm, shape, sizeof shape);
  tutti__host_key(key, sizeof key);
  char *old = load_lines(path, &body);
  /* The kept old lines, then this job's: the newest PICKS_MAX_LINES. */
  char(*lines)[PICKS_LINE] = calloc(PICKS_MAX_LINES + TUTTI_ONLINE_SLOTS, PICKS_LINE);
  if (!lines) {
    free(old);
    return;
  }
  int n = 0;
  char *save = NULL;
  for (char *line = old ? strtok_r(body, "\n", &save) : NULL; line;
       line = strtok_r(NULL, "\n", &save)) {
    char sh[256], algo[28];
    int coll, mine = 0;
    size_t bytes;
    unsigned gap;
    if (parse_line(line, sh, &coll, &bytes, algo, &gap) || strlen(line) >= PICKS_LINE)
      continue;
    for (int i = 0; i < o->used && !strcmp(sh, shape); i++)
      mine |= pick[i] && o->slot[i].coll == coll && o->slot[i].bytes == bytes;
    if (mine) continue; /* this job's newer line replaces it */
    if (n == PICKS_MAX_LINES) { /* drop the oldest */
      memmove(lines[0], lines[1], (size_t)(n - 1) * PICKS_LINE);
      n--;
    }
    snprintf(lines[n++], PICKS_LINE, "%s", line);
  }
  free(old);
  for (int i = 0; i < o->used; i++) {
    const tutti_online_slot_t *s = &o->slot[i];
    if (!pick[i]) continue;
    snprintf(lines[n++], PICKS_LINE, "%s %s %zu %s %u", shape,
             tutti__coll_name((tutti_coll_t)s->coll), s->bytes, pick[i]->name,
             s->pick ? (unsigned)s->gap : 0u);
  }
  int first = n > PICKS_MAX_LINES ? n - PICKS_MAX_LINES : 0;
  size_t cap = strlen(PICKS_HEADER) + strlen(key) + 8 + (size_t)(n - first) * PICKS_LINE;
  char *text = malloc(cap);
  if (text) {
    size_t len = (size_t)snprintf(text, cap, PICKS_HEADER "\nkey %s\n", key);
    for (int i = first; i < n; i++)
      len += (size_t)snprintf(text + len, cap - len, "%s\n", lines[i]);
    errno = 0;
    if (tutti__make_parents(path) || tutti__table_store(path, text, err, sizeof err))
      INFO("tune", 0, "cannot save the remembered picks %s (%s)", path,
           errno ? strerror(errno) : err);
    else
      TRACE("tune", 0, "%d settled sizes remembered in %s", settled, path);
  }
  free(text);
  free(lines);
}
