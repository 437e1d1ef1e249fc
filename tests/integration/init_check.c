/*
 * init_check: communicator creation with tutti_get_unique_id + tutti_comm_init_rank, without
 * tutti-run, ranks being forked children.
 *
 * Every case runs in its own process group (so its environment, TUTTI_TIMEOUT included, and any
 * state the library keeps are its own) with a deadline: a hang is a failure. Inside a case the
 * case process forks the ranks, then calls tutti_get_unique_id (which starts the rendezvous
 * thread in it) and hands each rank the id through a pipe, so no rank is forked beside that
 * thread; each rank reports its result and how long it took through a pipe and leaves with
 * _exit.
 *
 *   a_shm, a_tcp  3 ranks join, all-reduce, destroy: all succeed
 *   b             ranks {0, 1, 1} of 3: every rank fails within TUTTI_TIMEOUT=5 (+ slack)
 *   c             nranks 3, 2, 2: every rank fails within TUTTI_TIMEOUT=5 (+ slack)
 *   d             bad rank, bad nranks, NULL id or comm: TUTTI_ERR_INVALID_ARGUMENT at once
 *   e             2 of 3 ranks come: both fail within TUTTI_TIMEOUT=3 (+ slack)
 *   f             a stale id (its job formed and ended): every rank fails at once (< 2 s)
 *   g             two jobs on one port (tutti_comm_init_env, different secrets): the first
 *                 runs correctly; each rank of the second fails within TUTTI_TIMEOUT=3
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tutti.h"

#define MAX_CHILDREN 4
#define CASE_DEADLINE_S 60
#define SLACK_S 4.0

typedef struct {
  int rank, nranks, delay_ms;
} rank_spec_t;

/* How the ranks of the running case start (a case is a process of its own, so this is set
 * once by the case before it forks ranks): with a unique id the case hands them, or from the
 * environment as a launched job (env_port != 0: TUTTI_ADDR 127.0.0.1:port,
 * TUTTI_SECRET secret). A rank that joins stays hold_ms before its all-reduce. */
static struct {
  int env_port;
  const char *secret;
  int hold_ms;
} mode;

/* What a rank reports to its case process. */
typedef struct {
  int init_rc;
  int work_ok; /* after a successful init: all-reduce correct and destroy succeeded */
  double elapsed;
  char err[160];
} rank_report_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The body of one forked rank; never returns. With a unique id (not env mode) it first waits
 * for the id on idfd: ranks are forked before any rendezvous thread exists in the case process,
 * since a child forked beside a running thread may inherit a lock held by it (seen as a hang
 * under ASan's allocator). */
static void rank_main(int idfd, rank_spec_t spec, int fd) {
  rank_report_t rep;
  memset(&rep, 0, sizeof rep);
  tutti_unique_id_t id;
  if (!mode.env_port) {
    size_t got = 0;
    while (got < sizeof id) {
      ssize_t r = read(idfd, (char *)&id + got, sizeof id - got);
      if (r <= 0 && !(r < 0 && errno == EINTR)) _exit(4); /* the case gave up on this rank */
      if (r > 0) got += (size_t)r;
    }
  }
  close(idfd);
  if (spec.delay_ms) usleep((useconds_t)spec.delay_ms * 1000);
  tutti_comm_t comm = NULL;
  double t0 = now_s();
  if (mode.env_port) {
    char v[32];
    snprintf(v, sizeof v, "127.0.0.1:%d", mode.env_port);
    setenv("TUTTI_ADDR", v, 1);
    snprintf(v, sizeof v, "%d", spec.rank);
    setenv("TUTTI_RANK", v, 1);
    snprintf(v, sizeof v, "%d", spec.nranks);
    setenv("TUTTI_WORLD_SIZE", v, 1);
    setenv("TUTTI_SECRET", mode.secret, 1);
    rep.init_rc = tutti_comm_init_env(&comm);
  } else {
    rep.init_rc = tutti_comm_init_rank(&comm, spec.nranks, &id, spec.rank);
  }
  rep.elapsed = now_s() - t0;
  if (rep.init_rc == TUTTI_SUCCESS && mode.hold_ms) usleep((useconds_t)mode.hold_ms * 1000);
  if (rep.init_rc == TUTTI_SUCCESS) {
    int in = spec.rank + 1, out = 0;
    tutti_result_t rc = tutti_allreduce(&in, &out, 1, TUTTI_INT32, TUTTI_SUM, comm);
    int want = spec.nranks * (spec.nranks + 1) / 2;
    rep.work_ok = rc == TUTTI_SUCCESS && out == want;
    if (!rep.work_ok)
      snprintf(rep.err, sizeof rep.err, "all-reduce: %s, got %d want %d: %s",
               tutti_result_string(rc), out, want, tutti_comm_last_error(comm));
    rc = tutti_comm_destroy(comm);
    if (rc != TUTTI_SUCCESS) {
      rep.work_ok = 0;
      snprintf(rep.err, sizeof rep.err, "tutti_comm_destroy: %s", tutti_result_string(rc));
    }
  }
  ssize_t w = write(fd, &rep, sizeof rep);
  _exit(w == (ssize_t)sizeof rep ? 0 : 3);
}

/* A set of forked ranks: spawned (waiting for their id), then started, then collected. */
typedef struct {
  const rank_spec_t *specs;
  int n;
  pid_t pids[MAX_CHILDREN];
  int idfds[MAX_CHILDREN]; /* write ends of the ranks' id pipes, -1 once started */
  int fds[MAX_CHILDREN];   /* read ends of their report pipes */
} ranks_t;

/* Forks one rank per spec; they wait for start_ranks. Call before any tutti_get_unique_id of
 * the case process. Returns 0, or -1 if a pipe or fork failed. */
static int spawn_ranks(ranks_t *rs, const rank_spec_t *specs, int n) {
  rs->specs = specs;
  rs->n = n;
  fflush(NULL);
  for (int i = 0; i < n; i++) {
    int p[2], q[2];
    if (pipe(p) != 0 || pipe(q) != 0) return -1;
    rs->pids[i] = fork();
    if (rs->pids[i] < 0) return -1;
    if (rs->pids[i] == 0) {
      for (int j = 0; j < i; j++) { /* the earlier ranks' pipes are not this rank's */
        if (rs->idfds[j] >= 0) close(rs->idfds[j]);
        close(rs->fds[j]);
      }
      close(p[0]);
      close(q[1]);
      rank_main(q[0], specs[i], p[1]);
    }
    close(p[1]);
    close(q[0]);
    rs->fds[i] = p[0];
    rs->idfds[i] = q[1];
  }
  return 0;
}

/* Hands every rank its unique id (ignored in env mode) and lets it run. */
static void start_ranks(ranks_t *rs, const tutti_unique_id_t *id) {
  for (int i = 0; i < rs->n; i++) {
    if (!mode.env_port && write(rs->idfds[i], id, sizeof *id) != (ssize_t)sizeof *id)
      printf("  could not hand rank %d its id\n", rs->specs[i].rank);
    close(rs->idfds[i]);
    rs->idfds[i] = -1;
  }
}

/* Collects the started ranks' reports within deadline_s; a rank that has not reported by then
 * is killed and counted as hung. Returns the number of ranks that reported. */
static int collect_ranks(ranks_t *rs, rank_report_t *reps, double deadline_s) {
  const rank_spec_t *specs = rs->specs;
  int n = rs->n, got[MAX_CHILDREN] = {0}, reported = 0;
  for (int i = 0; i < n; i++) { /* what stays when a rank never reports */
    memset(&reps[i], 0, sizeof reps[i]);
    reps[i].init_rc = -1;
    snprintf(reps[i].err, sizeof reps[i].err, "no report: hung or crashed");
  }
  double end = now_s() + deadline_s;
  while (reported < n && now_s() < end) {
    struct pollfd pf[MAX_CHILDREN];
    int map[MAX_CHILDREN], k = 0;
    for (int i = 0; i < n; i++)
      if (!got[i]) {
        pf[k].fd = rs->fds[i];
        pf[k].events = POLLIN;
        map[k++] = i;
      }
    int ms = (int)((end - now_s()) * 1000) + 1;
    if (poll(pf, (nfds_t)k, ms) < 0 && errno != EINTR) break;
    for (int j = 0; j < k; j++) {
      if (!(pf[j].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int i = map[j];
      got[i] = 1;
      if (read(rs->fds[i], &reps[i], sizeof reps[i]) == (ssize_t)sizeof reps[i])
        reported++;
      else
        printf("  rank %d (child %d) died without reporting\n", specs[i].rank, i);
    }
  }
  for (int i = 0; i < n; i++) {
    if (!got[i]) {
      printf("  rank %d (child %d) HUNG: no answer within %.0f s, killed\n", specs[i].rank, i,
             deadline_s);
      kill(rs->pids[i], SIGKILL);
    }
    waitpid(rs->pids[i], NULL, 0);
    close(rs->fds[i]);
  }
  return reported;
}

/* Runs ranks already spawned in rs with id (a fresh one if NULL and not in env mode) and
 * collects their reports. Returns the number of ranks that reported, or -1. */
static int start_and_collect(ranks_t *rs, const tutti_unique_id_t *id, rank_report_t *reps,
                             double deadline_s) {
  tutti_unique_id_t fresh;
  memset(&fresh, 0, sizeof fresh);
  if (!id && !mode.env_port) {
    tutti_result_t rc = tutti_get_unique_id(&fresh);
    if (rc != TUTTI_SUCCESS) {
      printf("  tutti_get_unique_id: %s\n", tutti_result_string(rc));
      start_ranks(rs, &fresh); /* they read a zero id and fail; collected below */
      collect_ranks(rs, reps, deadline_s);
      return -1;
    }
  }
  start_ranks(rs, id ? id : &fresh);
  return collect_ranks(rs, reps, deadline_s);
}

/* Forks the ranks, then makes the id, runs and collects them. */
static int run_ranks(const rank_spec_t *specs, int n, rank_report_t *reps, double deadline_s) {
  ranks_t rs;
  if (spawn_ranks(&rs, specs, n) != 0) return -1;
  return start_and_collect(&rs, NULL, reps, deadline_s);
}

static void print_report(const rank_spec_t *s, const rank_report_t *r) {
  if (r->init_rc < 0) {
    printf("  rank %d of %d: %s\n", s->rank, s->nranks, r->err);
    return;
  }
  printf("  rank %d of %d: init %s after %.3f s%s%s\n", s->rank, s->nranks,
         tutti_result_string((tutti_result_t)r->init_rc), r->elapsed, r->err[0] ? ": " : "",
         r->err);
}

/* Checks that every rank reported and failed its init, each within max_s. Returns 0 on pass. */
static int check_all_fail(const rank_spec_t *specs, int n, const rank_report_t *reps,
                          int reported, double max_s) {
  int bad = reported != n;
  for (int i = 0; i < n && reported >= 0; i++) {
    print_report(&specs[i], &reps[i]);
    if (reps[i].init_rc < 0) {
      bad = 1;
    } else if (reps[i].init_rc == TUTTI_SUCCESS) {
      printf("  rank %d: init SUCCEEDED, expected an error\n", specs[i].rank);
      bad = 1;
    } else if (reps[i].elapsed > max_s) {
      printf("  rank %d: the error took %.3f s, more than %.1f s\n", specs[i].rank,
             reps[i].elapsed, max_s);
      bad = 1;
    }
  }
  return bad;
}

/* Checks that every rank reported, joined, computed the right all-reduce and destroyed its
 * communicator. Returns 0 on pass. */
static int check_all_ok(const rank_spec_t *specs, int n, const rank_report_t *reps,
                        int reported) {
  int bad = reported != n;
  for (int i = 0; i < n && reported >= 0; i++) {
    print_report(&specs[i], &reps[i]);
    if (reps[i].init_rc != TUTTI_SUCCESS || !reps[i].work_ok) bad = 1;
  }
  return bad;
}

/* Runs ranks that must all fail in init, each within max_s. Returns 0 on pass. */
static int expect_all_fail(const rank_spec_t *specs, int n, double max_s) {
  rank_report_t reps[MAX_CHILDREN];
  memset(reps, 0, sizeof reps);
  int reported = run_ranks(specs, n, reps, max_s + 10.0);
  return check_all_fail(specs, n, reps, reported, max_s);
}

static int case_a(void) {
  rank_spec_t specs[3] = {{0, 3, 0}, {1, 3, 0}, {2, 3, 0}};
  rank_report_t reps[3];
  memset(reps, 0, sizeof reps);
  return check_all_ok(specs, 3, reps, run_ranks(specs, 3, reps, 40.0));
}

static int case_b(void) {
  rank_spec_t specs[3] = {{0, 3, 0}, {1, 3, 0}, {1, 3, 0}};
  return expect_all_fail(specs, 3, 5.0 + SLACK_S);
}

static int case_c(void) {
  /* The rank that says 3 comes first: were the two that say 2 first, they could complete a
   * world of 2 before the third one showed up, and whether they fail would be a race. */
  rank_spec_t specs[3] = {{2, 3, 0}, {0, 2, 500}, {1, 2, 500}};
  return expect_all_fail(specs, 3, 5.0 + SLACK_S);
}

static int case_d(void) {
  tutti_unique_id_t id;
  tutti_result_t rc = tutti_get_unique_id(&id);
  if (rc != TUTTI_SUCCESS) {
    printf("  tutti_get_unique_id: %s\n", tutti_result_string(rc));
    return 1;
  }
  struct {
    const char *what;
    int nranks, rank, null_id, null_comm;
  } calls[] = {
      {"rank == nranks", 3, 3, 0, 0}, {"rank > nranks", 3, 7, 0, 0},
      {"rank < 0", 3, -1, 0, 0},      {"nranks 0", 0, 0, 0, 0},
      {"nranks -1", -1, 0, 0, 0},     {"NULL id", 3, 0, 1, 0},
      {"NULL comm", 3, 0, 0, 1},
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
    tutti_comm_t comm = NULL;
    double t0 = now_s();
    rc = tutti_comm_init_rank(calls[i].null_comm ? NULL : &comm, calls[i].nranks,
                              calls[i].null_id ? NULL : &id, calls[i].rank);
    double dt = now_s() - t0;
    int ok = rc == TUTTI_ERR_INVALID_ARGUMENT && dt < 1.0;
    printf("  %-15s -> %s after %.3f s%s\n", calls[i].what, tutti_result_string(rc), dt,
           ok ? "" : "  <-- expected TUTTI_ERR_INVALID_ARGUMENT at once");
    if (rc == TUTTI_SUCCESS && comm) tutti_comm_destroy(comm);
    bad |= !ok;
  }
  rc = tutti_get_unique_id(NULL);
  printf("  %-15s -> %s\n", "get_unique_id(NULL)", tutti_result_string(rc));
  bad |= rc != TUTTI_ERR_INVALID_ARGUMENT;
  return bad;
}

static int case_e(void) {
  rank_spec_t specs[2] = {{0, 3, 0}, {1, 3, 0}};
  return expect_all_fail(specs, 2, 3.0 + SLACK_S);
}

static int case_f(void) {
  /* Both jobs' ranks are forked before the id exists (see rank_main). */
  rank_spec_t specs1[3] = {{0, 3, 0}, {1, 3, 0}, {2, 3, 0}}, specs2[2] = {{0, 2, 0}, {1, 2, 0}};
  ranks_t job1, job2;
  if (spawn_ranks(&job1, specs1, 3) != 0 || spawn_ranks(&job2, specs2, 2) != 0) return 1;
  tutti_unique_id_t id;
  memset(&id, 0, sizeof id);
  tutti_result_t rc = tutti_get_unique_id(&id);
  rank_report_t reps[3];
  memset(reps, 0, sizeof reps);
  printf("  a job forms and ends with the id:\n");
  int bad = check_all_ok(specs1, 3, reps, start_and_collect(&job1, &id, reps, 40.0));
  printf("  a second job with the same id:\n");
  memset(reps, 0, sizeof reps);
  bad |= check_all_fail(specs2, 2, reps, start_and_collect(&job2, &id, reps, 12.0), 2.0);
  return bad || rc != TUTTI_SUCCESS;
}

/* A free loopback port (a short race with other programs is possible and harmless here). */
static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof sa;
  if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      getsockname(s, (struct sockaddr *)&sa, &sl) != 0)
    return -1;
  close(s);
  return ntohs(sa.sin_port);
}

static int case_g(void) {
  int port = free_port();
  if (port <= 0) return 1;
  /* Job 1's last rank comes 2 s late, so its rendezvous still runs when job 2 starts on the
   * same port 0.3 s in: job 2's rank 0 cannot listen there, its rank 1 reaches job 1's
   * rendezvous and cannot prove job 1's secret. Job 1 must not notice. */
  pid_t job1 = fork();
  if (job1 == 0) {
    mode.env_port = port;
    mode.secret = "1111111111111111111111111111111111111111111111111111111111111111";
    rank_spec_t specs[3] = {{0, 3, 0}, {1, 3, 0}, {2, 3, 2000}};
    rank_report_t reps[3];
    int reported = run_ranks(specs, 3, reps, 40.0);
    int bad = reported != 3;
    printf("  job 1:\n");
    for (int i = 0; i < 3 && reported >= 0; i++) {
      print_report(&specs[i], &reps[i]);
      if (reps[i].init_rc != TUTTI_SUCCESS || !reps[i].work_ok) bad = 1;
    }
    fflush(NULL);
    _exit(bad);
  }
  usleep(300000);
  mode.env_port = port;
  mode.secret = "2222222222222222222222222222222222222222222222222222222222222222";
  rank_spec_t specs[2] = {{0, 2, 0}, {1, 2, 0}};
  printf("  job 2 on the same port:\n");
  int bad = expect_all_fail(specs, 2, 3.0 + SLACK_S);
  int status = 0;
  waitpid(job1, &status, 0);
  return bad || !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static const struct {
  const char *name, *transport, *timeout;
  int (*fn)(void);
  const char *desc;
} cases[] = {
    {"a_shm", "shm", "30", case_a, "3 ranks join, all-reduce, destroy (shm)"},
    {"a_tcp", "tcp", "30", case_a, "3 ranks join, all-reduce, destroy (tcp)"},
    {"b", NULL, "5", case_b, "duplicate rank {0,1,1} of 3: every rank fails"},
    {"c", NULL, "5", case_c, "world size mismatch (3,2,2): every rank fails"},
    {"d", NULL, "5", case_d, "invalid arguments fail at once"},
    {"e", NULL, "3", case_e, "2 of 3 ranks come: both fail near TUTTI_TIMEOUT=3"},
    {"f", NULL, "10", case_f, "a stale unique id: every rank fails at once"},
    {"g", NULL, "3", case_g, "two jobs on one port: the first works, the second fails"},
};

/* Runs one case in its own process group with a deadline. Returns 0 on pass. */
static int run_case(int i) {
  printf("init_check: case %s: %s\n", cases[i].name, cases[i].desc);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    setenv("TUTTI_TIMEOUT", cases[i].timeout, 1);
    if (cases[i].transport) setenv("TUTTI_TRANSPORT", cases[i].transport, 1);
    int rc = cases[i].fn();
    fflush(NULL);
    _exit(rc ? 1 : 0);
  }
  if (pid < 0) return 1;
  setpgid(pid, pid); /* both sides set it, whichever runs first */
  double end = now_s() + CASE_DEADLINE_S;
  int status = 0;
  pid_t w;
  while ((w = waitpid(pid, &status, WNOHANG)) == 0 && now_s() < end) usleep(20000);
  if (w == 0) {
    printf("  case HUNG past %d s: killed\n", CASE_DEADLINE_S);
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    return 1;
  }
  kill(-pid, SIGKILL); /* any rank left behind */
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int failed = 0, ran = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int selected = argc < 2;
    for (int a = 1; a < argc; a++) selected |= strcmp(argv[a], cases[i].name) == 0;
    if (!selected) continue;
    int bad = run_case((int)i);
    printf("init_check: case %s: %s\n", cases[i].name, bad ? "FAIL" : "PASS");
    failed += bad;
    ran++;
  }
  printf("init_check: %d of %d cases passed\n", ran - failed, ran);
  return failed ? 1 : 0;
}
