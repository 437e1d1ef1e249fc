/* Requests and the progress thread of a communicator. See engine.h. */
#include "core/engine.h"
#include "kernels/kernels.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct tutti_request {
  struct tutti_comm *comm;
  tutti_task_t task;
  tutti_xfer_t xfer;        /* point-to-point transfer, when the task is one */
  int64_t deadline;         /* of the point-to-point transfer */
  struct tutti_request *next;
  int done;                 /* under the engine lock */
  tutti_result_t result;
  int user_owned;           /* handed to the user, released by tutti_request_free */
  int released;             /* the user released it before it finished */
  struct tutti_request *members; /* a group: its calls in issue order (linked by next) */
  struct tutti_request *group_next; /* tutti_group_end's list of per-communicator groups */
  int queued;               /* a group handed to the progress thread */
};

typedef struct tutti_engine {
  pthread_mutex_t mu;
  pthread_cond_t work;  /* the progress thread waits here for tasks */
  pthread_cond_t done;  /* waiters wait here for completions */
  pthread_t thread;
  int started;
  int stop;
  int busy;             /* the thread is running something outside the lock */
  int nactive;          /* point-to-point transfers posted and unfinished */
  struct tutti_request *head, *tail; /* queued, not started */
  struct tutti_request *active;      /* progress thread only */
} tutti_engine_t;

/* Tasks of this thread between tutti_group_start and tutti_group_end. A group belongs to the
 * calling thread, as ncclGroupStart's does, so this is thread-local rather than per
 * communicator: one group may span communicators. */
static _Thread_local struct {
  int depth;
  struct tutti_request *head, *tail;
} group;

static struct tutti_request *request_new(struct tutti_comm *comm, const tutti_task_t *t) {
  struct tutti_request *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->comm = comm;
  if (!t) return r;
  r->task = *t;
  /* The caller's arrays may be gone when the task runs. */
  const size_t **src[4] = {&r->task.a.counts, &r->task.a.displs, &r->task.a.rcounts,
                           &r->task.a.rdispls};
  size_t n = (size_t)comm->nranks, used = 0;
  for (int i = 0; i < 4; i++) used += *src[i] ? n : 0;
  if (used) {
    r->task.arrays = malloc(used * sizeof(size_t));
    if (!r->task.arrays) {
      free(r);
      return NULL;
    }
    size_t *dst = r->task.arrays;
    for (int i = 0; i < 4; i++)
      if (*src[i]) {
        memcpy(dst, *src[i], n * sizeof(size_t));
        *src[i] = dst;
        dst += n;
      }
  }
  return r;
}

static void request_destroy(struct tutti_request *r) {
  while (r->members) {
    struct tutti_request *m = r->members;
    r->members = m->next;
    if (!m->user_owned) request_destroy(m);
  }
  free(r->task.arrays);
  free(r);
}

static tutti_result_t engine_create(struct tutti_comm *comm) {
  tutti_engine_t *e = calloc(1, sizeof *e);
  if (!e) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory for the request engine");
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->work, NULL);
  pthread_cond_init(&e->done, NULL);
  comm->engine = e;
  return TUTTI_SUCCESS;
}

/* A failed group reports its failure on every member that has no error of its own. */
static void finish_members(struct tutti_request *g, tutti_result_t res) {
  for (struct tutti_request *m = g->members; m; m = m->next) {
    if (m->result == TUTTI_SUCCESS) m->result = res;
    m->done = 1;
  }
}

/* Marks r finished and wakes its waiters. Called with the lock held. */
static void complete_locked(tutti_engine_t *e, struct tutti_request *r, tutti_result_t res) {
  r->result = res;
  r->done = 1;
  finish_members(r, res);
  pthread_cond_broadcast(&e->done);
  if (r->released) request_destroy(r);
}

static tutti_result_t post_p2p(struct tutti_comm *comm, struct tutti_request *r) {
  return tutti__p2p_post(comm, &r->task, &r->xfer, &r->deadline);
}

/* The most bytes of small all-reduces a group packs into one message. */
#define FUSE_MAX_BYTES (4u << 20)

static int fusable(const tutti_task_t *t, const tutti_task_t *first) {
  return t->a.coll == TUTTI_COLL_ALLREDUCE && t->a.op < TUTTI_NUM_OPS &&
         t->a.dtype == first->a.dtype && t->a.op == first->a.op;
}

static int spans_overlap(const void *a, size_t na, const void *b, size_t nb) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return na && nb && x < y + nb && y < x + na;
}

/* Whether member x reads or writes bytes an earlier member of [from, x) writes: then packing
 * x with them would read (or overwrite) those bytes before the earlier call finished. */
static int depends_on_earlier(const struct tutti_request *from, const struct tutti_request *x,
                              size_t es) {
  size_t bytes = x->task.a.count * es;
  for (const struct tutti_request *y = from; y != x; y = y->next) {
    if (tutti__task_is_p2p(&y->task)) continue;
    size_t yb = y->task.a.count * es;
    if (spans_overlap(y->task.a.recvbuf, yb, x->task.a.sendbuf, bytes) ||
        spans_overlap(y->task.a.recvbuf, yb, x->task.a.recvbuf, bytes))
      return 1;
  }
  return 0;
}

/* Runs the collectives of [m, end) (point-to-point members skipped) as one all-reduce over a
 * packed buffer. */
static tutti_result_t run_packed(struct tutti_comm *comm, struct tutti_request *m,
                                 struct tutti_request *end, size_t total, size_t es) {
  char *buf = malloc(total * es);
  if (!buf) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory fusing a group");
  size_t off = 0;
  for (struct tutti_request *x = m; x != end; x = x->next)
    if (!tutti__task_is_p2p(&x->task)) {
      memcpy(buf + off, x->task.a.sendbuf, x->task.a.count * es);
      off += x->task.a.count * es;
    }
  tutti_task_t fused = m->task;
  fused.a.sendbuf = fused.a.recvbuf = buf;
  fused.a.count = total;
  tutti_result_t res = tutti__task_run(comm, &fused);
  off = 0;
  for (struct tutti_request *x = m; res == TUTTI_SUCCESS && x != end; x = x->next)
    if (!tutti__task_is_p2p(&x->task)) {
      memcpy(x->task.a.recvbuf, buf + off, x->task.a.count * es);
      off += x->task.a.count * es;
    }
  free(buf);
  return res;
}

/* Runs m, and the compatible all-reduces after it (point-to-point members in between are
 * run later and do not break the run), packed into as few all-reduces as issue order allows.
 * Which calls are compatible depends only on what every rank's group holds alike (kind,
 * dtype, op, count), but whether a call reads an earlier one's output depends on this rank's
 * buffers, which may differ between ranks; so the ranks first agree (one small MAX
 * all-reduce) where the run must be cut, and every rank packs alike. *last is the last member
 * handled. */
static tutti_result_t run_fused(struct tutti_comm *comm, struct tutti_request *m,
                                struct tutti_request **last) {
  size_t es = tutti__dtype_size(m->task.a.dtype), total = 0;
  int n = 0;
  *last = m;
  if (tutti__dtype_valid((int)m->task.a.dtype))
    for (struct tutti_request *x = m; x; x = x->next) {
      if (tutti__task_is_p2p(&x->task)) continue;
      if (!fusable(&x->task, &m->task) || (total + x->task.a.count) * es > FUSE_MAX_BYTES) break;
      total += x->task.a.count;
      n++;
      *last = x;
    }
  if (n < 2) {
    *last = m;
    return tutti__task_run(comm, &m->task);
  }
  uint8_t *cut = calloc((size_t)n, 1);
  if (!cut) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory fusing a group");
  int i = 0;
  for (struct tutti_request *x = m; x != (*last)->next; x = x->next)
    if (!tutti__task_is_p2p(&x->task)) cut[i++] = x != m && depends_on_earlier(m, x, es);
  tutti_task_t agree = {{.coll = TUTTI_COLL_ALLREDUCE, .sendbuf = cut, .recvbuf = cut,
                         .count = (size_t)n, .dtype = TUTTI_UINT8, .op = TUTTI_MAX},
                        m->task.api, NULL};
  tutti_result_t res = tutti__task_run(comm, &agree);
  struct tutti_request *seg = m, *end = (*last)->next;
  size_t seg_total = 0;
  int seg_n = 0;
  i = 0;
  for (struct tutti_request *x = m; res == TUTTI_SUCCESS; x = x->next) {
    int at_end = x == end;
    if (!at_end && tutti__task_is_p2p(&x->task)) continue;
    if (at_end || (x != seg && cut[i])) {
      res = seg_n == 1 ? tutti__task_run(comm, &seg->task)
                       : run_packed(comm, seg, x, seg_total, es);
      seg = x;
      seg_total = 0;
      seg_n = 0;
    }
    if (at_end) break;
    seg_total += x->task.a.count;
    seg_n++;
    i++;
  }
  free(cut);
  return res;
}

/* A group on one communicator: collectives in issue order, consecutive compatible
 * all-reduces fused into one message, then every send and receive posted at once. */
static tutti_result_t run_group(struct tutti_comm *comm, struct tutti_request *g) {
  tutti_result_t res = TUTTI_SUCCESS;
  for (struct tutti_request *m = g->members; m && res == TUTTI_SUCCESS; m = m->next) {
    if (tutti__task_is_p2p(&m->task)) continue;
    struct tutti_request *last;
    res = run_fused(comm, m, &last);
    for (struct tutti_request *x = m; x != last->next; x = x->next)
      if (!tutti__task_is_p2p(&x->task)) x->result = res;
    m = last;
  }
  if (res != TUTTI_SUCCESS) return res;
  for (struct tutti_request *m = g->members; m && res == TUTTI_SUCCESS; m = m->next)
    if (tutti__task_is_p2p(&m->task)) res = post_p2p(comm, m);
  for (struct tutti_request *m = g->members; m && res == TUTTI_SUCCESS; m = m->next)
    if (tutti__task_is_p2p(&m->task)) res = m->result = tutti__wait(comm, &m->xfer, m->deadline);
  if (res != TUTTI_SUCCESS) {
    tutti__comm_fail(comm, res);
    tutti__drop_ops(comm);
  }
  return res;
}

static tutti_result_t run_request(struct tutti_comm *comm, struct tutti_request *r) {
  if (r->members) return run_group(comm, r);
  return tutti__task_run(comm, &r->task);
}

/* Sweeps finished point-to-point transfers out of the active list. */
static void sweep_active(tutti_engine_t *e, tutti_result_t failed) {
  struct tutti_request **pp = &e->active;
  pthread_mutex_lock(&e->mu);
  while (*pp) {
    struct tutti_request *r = *pp;
    if (failed == TUTTI_SUCCESS && !r->xfer.complete) {
      pp = &r->next;
      continue;
    }
    *pp = r->next;
    e->nactive--;
    complete_locked(e, r, failed);
  }
  pthread_mutex_unlock(&e->mu);
}

/* Point-to-point transfers stay posted while newer ones arrive, so an isend followed by an
 * irecv cannot deadlock against the same pair on the peer. A collective waits until every
 * earlier transfer finished: operations complete in issue order. */
static void *progress_main(void *arg) {
  struct tutti_comm *comm = arg;
  tutti_engine_t *e = comm->engine;
  pthread_mutex_lock(&e->mu);
  for (;;) {
    while (!e->head && !e->active && !e->stop) pthread_cond_wait(&e->work, &e->mu);
    if (e->stop && !e->head && !e->active) break;
    atomic_store(&comm->work_pending, 0);
    struct tutti_request *fresh = NULL, **fp = &fresh, *coll = NULL;
    while (e->head && !e->head->members && tutti__task_is_p2p(&e->head->task)) {
      *fp = e->head;
      e->head = e->head->next;
      (*fp)->next = NULL;
      fp = &(*fp)->next;
    }
    if (!fresh && !e->active && e->head) {
      coll = e->head;
      e->head = coll->next;
    }
    if (!e->head) e->tail = NULL;
    e->busy = 1;
    /* Read under the lock: tutti__engine_destroy sets it from another thread. */
    int stopping = e->stop;
    pthread_mutex_unlock(&e->mu);

    if (coll) {
      tutti_result_t res = stopping ? TUTTI_ERR_ABORTED : run_request(comm, coll);
      pthread_mutex_lock(&e->mu);
      complete_locked(e, coll, res);
      e->busy = 0;
      continue;
    }
    tutti_result_t res = TUTTI_SUCCESS;
    while (fresh) {
      struct tutti_request *r = fresh;
      fresh = r->next;
      r->next = e->active;
      e->active = r;
      pthread_mutex_lock(&e->mu);
      e->nactive++;
      pthread_mutex_unlock(&e->mu);
      if (res == TUTTI_SUCCESS) res = post_p2p(comm, r);
    }
    if (res == TUTTI_SUCCESS && e->active) {
      /* Wait on the oldest; a slice ends early when new work arrives. */
      struct tutti_request *oldest = e->active;
      while (oldest->next) oldest = oldest->next;
      res = tutti__wait_slice(comm, &oldest->xfer, oldest->deadline,
                              tutti__now_ns() + 100000000LL);
      if (res == TUTTI_IN_PROGRESS) res = TUTTI_SUCCESS;
    }
    if (res != TUTTI_SUCCESS) {
      tutti__comm_fail(comm, res);
      tutti__drop_ops(comm);
    }
    sweep_active(e, res);
    pthread_mutex_lock(&e->mu);
    e->busy = 0;
  }
  pthread_mutex_unlock(&e->mu);
  return NULL;
}

static tutti_result_t enqueue(struct tutti_comm *comm, struct tutti_request *r) {
  if (!comm->engine) TRY(engine_create(comm));
  tutti_engine_t *e = comm->engine;
  pthread_mutex_lock(&e->mu);
  if (!e->started) {
    if (pthread_create(&e->thread, NULL, progress_main, comm) != 0) {
      pthread_mutex_unlock(&e->mu);
      return tutti__error(comm, TUTTI_ERR_SYSTEM, "cannot start the progress thread");
    }
    e->started = 1;
  }
  r->next = NULL;
  if (e->tail)
    e->tail->next = r;
  else
    e->head = r;
  e->tail = r;
  pthread_cond_signal(&e->work);
  pthread_mutex_unlock(&e->mu);
  tutti__engine_kick(comm);
  return TUTTI_SUCCESS;
}

void tutti__engine_kick(struct tutti_comm *comm) {
  atomic_store(&comm->work_pending, 1);
  for (int i = 0; i < comm->ntps; i++) comm->tps[i]->ops->wake(comm->tps[i]);
}

int tutti__engine_idle(struct tutti_comm *comm) {
  tutti_engine_t *e = comm->engine;
  if (!e) return 1;
  pthread_mutex_lock(&e->mu);
  int idle = !e->head && !e->busy && e->nactive == 0;
  pthread_mutex_unlock(&e->mu);
  return idle;
}

static tutti_result_t wait_request(struct tutti_request *r) {
  tutti_engine_t *e = r->comm->engine;
  pthread_mutex_lock(&e->mu);
  while (!r->done) pthread_cond_wait(&e->done, &e->mu);
  tutti_result_t res = r->result;
  pthread_mutex_unlock(&e->mu);
  return res;
}

tutti_result_t tutti__engine_submit(struct tutti_comm *comm, const tutti_task_t *t,
                                    tutti_request_t *req) {
  if (!group.depth && !req && tutti__engine_idle(comm)) return tutti__task_run(comm, (tutti_task_t *)t);
  struct tutti_request *r = request_new(comm, t);
  if (!r) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory for a request");
  r->user_owned = req != NULL;
  if (req) *req = r;
  if (group.depth) {
    r->next = NULL;
    if (group.tail)
      group.tail->next = r;
    else
      group.head = r;
    group.tail = r;
    return TUTTI_SUCCESS;
  }
  tutti_result_t res = enqueue(comm, r);
  if (res != TUTTI_SUCCESS) {
    if (req) *req = NULL;
    request_destroy(r);
    return res;
  }
  if (req) return TUTTI_SUCCESS;
  res = wait_request(r);
  request_destroy(r);
  return res;
}

tutti_result_t tutti_wait(tutti_request_t req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  if (!req->comm->engine) return req->result; /* finished before any engine existed */
  return wait_request(req);
}

tutti_result_t tutti_test(tutti_request_t req, int *done) {
  if (!req || !done) return TUTTI_ERR_INVALID_ARGUMENT;
  if (!req->comm->engine) {
    *done = req->done;
    return req->done ? req->result : TUTTI_SUCCESS;
  }
  tutti_engine_t *e = req->comm->engine;
  pthread_mutex_lock(&e->mu);
  *done = req->done;
  tutti_result_t res = req->done ? req->result : TUTTI_SUCCESS;
  pthread_mutex_unlock(&e->mu);
  return res;
}

tutti_result_t tutti_request_free(tutti_request_t req) {
  if (!req) return TUTTI_ERR_INVALID_ARGUMENT;
  tutti_engine_t *e = req->comm->engine;
  if (e) pthread_mutex_lock(&e->mu);
  int done = req->done;
  req->user_owned = 0;
  if (!done) req->released = 1; /* freed when it completes */
  if (e) pthread_mutex_unlock(&e->mu);
  if (done) request_destroy(req);
  return TUTTI_SUCCESS;
}

tutti_result_t tutti_request_status(tutti_request_t req, tutti_status_t *status) {
  if (!req || !status) return TUTTI_ERR_INVALID_ARGUMENT;
  tutti_engine_t *e = req->comm->engine;
  if (e) pthread_mutex_lock(&e->mu);
  int done = req->done;
  if (e) pthread_mutex_unlock(&e->mu);
  if (!done) return TUTTI_IN_PROGRESS;
  *status = (tutti_status_t){-1, -1};
  /* The matched receive wrote its source and tag into the transfer (p2p_match.c). */
  if (req->task.a.coll == TUTTI_COLL_RECV && req->xfer.complete)
    *status = (tutti_status_t){req->xfer.peer, (int)req->xfer.got.fp.root};
  return TUTTI_SUCCESS;
}

tutti_result_t tutti_group_start(void) {
  /* From here error.c keeps the first error of this thread's calls for tutti_group_end. */
  if (group.depth++ == 0) tutti__group_errors(1);
  return TUTTI_SUCCESS;
}

/* Runs one communicator's share of a group: inline when nothing is queued on it, else
 * through its progress thread. Returns the group request, to be waited for. */
static tutti_result_t launch_group(struct tutti_comm *comm, struct tutti_request *g, int *queued) {
  *queued = 0;
  if (tutti__engine_idle(comm)) {
    tutti_result_t res = run_request(comm, g);
    g->result = res;
    g->done = 1;
    finish_members(g, res);
    return res;
  }
  tutti_result_t res = enqueue(comm, g);
  if (res != TUTTI_SUCCESS) {
    g->result = res;
    g->done = 1;
    finish_members(g, res);
  }
  *queued = res == TUTTI_SUCCESS;
  return res;
}

/* Fails the members of rest that could not be grouped, with a sentence on their
 * communicators, so that no request of the group silently never runs. */
static tutti_result_t fail_ungrouped(struct tutti_request *rest) {
  for (struct tutti_request *m = rest; m; m = m->next) {
    TUTTI_SET_OP(m->comm, "tutti_group_end");
    tutti__error(m->comm, TUTTI_ERR_SYSTEM, "out of memory grouping the calls of a group; "
                 "its call %s did not run", m->task.api ? m->task.api : "");
  }
  while (rest) {
    struct tutti_request *m = rest;
    rest = m->next;
    m->next = NULL;
    m->result = TUTTI_ERR_SYSTEM;
    m->done = 1;
    if (!m->user_owned) request_destroy(m);
  }
  return TUTTI_ERR_SYSTEM;
}

tutti_result_t tutti_group_end(void) {
  if (group.depth == 0) {
    WARN("coll", -1, "tutti_group_end without tutti_group_start");
    return TUTTI_ERR_INVALID_USAGE;
  }
  if (--group.depth > 0) return TUTTI_SUCCESS;
  /* A call that failed its checks inside the group returned its error then, with its
   * sentence on its communicator; the group's other calls still run (the ranks' groups
   * stay alike when every rank made the same mistake), and the group reports it too. */
  tutti_result_t first = tutti__group_errors(0);
  struct tutti_request *rest = group.head, *groups = NULL, **gtail = &groups;
  group.head = group.tail = NULL;
  /* One group request per communicator, members kept in issue order. */
  while (rest) {
    struct tutti_comm *comm = rest->comm;
    struct tutti_request *g = request_new(comm, NULL), **tail;
    if (!g) {
      tutti_result_t res = fail_ungrouped(rest);
      if (first == TUTTI_SUCCESS) first = res;
      break;
    }
    tail = &g->members;
    for (struct tutti_request **pp = &rest; *pp;) {
      struct tutti_request *m = *pp;
      if (m->comm != comm) {
        pp = &m->next;
        continue;
      }
      *pp = m->next;
      m->next = NULL;
      *tail = m;
      tail = &m->next;
    }
    *gtail = g;
    gtail = &g->group_next;
  }
  for (struct tutti_request *g = groups; g; g = g->group_next) {
    tutti_result_t res = launch_group(g->comm, g, &g->queued);
    if (res != TUTTI_SUCCESS && first == TUTTI_SUCCESS) first = res;
  }
  while (groups) {
    struct tutti_request *g = groups;
    groups = g->group_next;
    tutti_result_t res = g->queued ? wait_request(g) : g->result;
    if (res != TUTTI_SUCCESS && first == TUTTI_SUCCESS) first = res;
    request_destroy(g);
  }
  return first;
}

void tutti__engine_destroy(struct tutti_comm *comm) {
  tutti_engine_t *e = comm->engine;
  if (!e) return;
  pthread_mutex_lock(&e->mu);
  e->stop = 1;
  int running = e->busy || e->head || e->active;
  pthread_cond_signal(&e->work);
  pthread_mutex_unlock(&e->mu);
  if (running) {
    /* Whatever still runs would wait for peers: abort it rather than block here. */
    atomic_store(&comm->aborted, 1);
    tutti__engine_kick(comm);
  }
  if (e->started) pthread_join(e->thread, NULL);
  pthread_mutex_destroy(&e->mu);
  pthread_cond_destroy(&e->work);
  pthread_cond_destroy(&e->done);
  free(e);
  comm->engine = NULL;
}
