/* The reporting scaffolding shared by ops_check and nb_check; see check_report.h. */
#include "check_report.h"

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *prog = "check";
static int name_w, count_w;
static tutti_comm_t comm;
static int rank, nranks;
static long checks, failures;

static const char *section = "start";
static long sec_checks0, sec_failures0, sec_reports;
static char watch_msg[256];

static void on_alarm(int sig) {
  (void)sig;
  ssize_t w = write(2, watch_msg, strlen(watch_msg));
  (void)w;
  _exit(1);
}

void check_init(const char *name, int name_width, int count_width) {
  prog = name;
  name_w = name_width;
  count_w = count_width;
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGALRM, on_alarm);
}

void begin_section(const char *name) {
  section = name;
  sec_checks0 = checks;
  sec_failures0 = failures;
  sec_reports = 0;
  snprintf(watch_msg, sizeof watch_msg,
           "%s rank %d: FAIL: watchdog: section %s made no progress for %d s\n", prog, rank, name,
           WATCHDOG_S);
  alarm(WATCHDOG_S);
}

void end_section(void) {
  long c = checks - sec_checks0, f = failures - sec_failures0;
  if (f)
    fprintf(stderr, "%s rank %d: section %-*s %*ld checks, %ld FAILED\n", prog, rank, name_w,
            section, count_w, c, f);
  else if (rank == 0)
    printf("%s: section %-*s %*ld checks passed\n", prog, name_w, section, count_w, c);
}

int want_section(const char *only, const char *name) {
  if (!only) return 1;
  size_t n = strlen(name);
  for (const char *p = only; *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0) return 1;
    if (!e) break;
    p = e + 1;
  }
  return 0;
}

void pass(void) { checks++; }

void fail(const char *fmt, ...) {
  checks++;
  failures++;
  if (sec_reports++ >= MAX_REPORTS) {
    if (sec_reports == MAX_REPORTS + 1)
      fprintf(stderr, "%s rank %d: [%s] further failures not printed\n", prog, rank, section);
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s rank %d: FAIL [%s] ", prog, rank, section);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

const char *last_error(void) {
  const char *e = comm ? tutti_comm_last_error(comm) : NULL;
  return e && *e ? e : "(no last error)";
}

int call_ok(tutti_result_t rc, const char *desc) {
  if (rc == TUTTI_SUCCESS) return 1;
  fail("%s returned %s: %s", desc, tutti_result_string(rc), last_error());
  if (rc != TUTTI_ERR_INVALID_ARGUMENT && rc != TUTTI_ERR_INTERNAL) {
    fprintf(stderr, "%s rank %d: stopping: the communicator is not usable after %s\n", prog,
            rank, desc);
    exit(1);
  }
  return 0;
}

void *xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "%s rank %d: out of memory (%zu bytes)\n", prog, rank, bytes);
    exit(1);
  }
  return p;
}

int check_start(tutti_comm_t *out_comm, int *out_rank, int *out_nranks, int max_ranks,
                const char **transport) {
  begin_section("init");
  tutti_result_t rc = tutti_comm_init_env(&comm);
  *out_comm = comm;
  if (rc != TUTTI_SUCCESS) {
    fprintf(stderr, "%s: tutti_comm_init_env returned %s\n", prog, tutti_result_string(rc));
    return 1;
  }
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &nranks);
  *out_rank = rank;
  *out_nranks = nranks;
  if (nranks > max_ranks) {
    fprintf(stderr, "%s: at most %d ranks\n", prog, max_ranks);
    return 2;
  }
  const char *t = getenv("TUTTI_TRANSPORT");
  *transport = t && *t ? t : "auto";
  return 0;
}

int check_finish(const char *transport, const char *suffix) {
  begin_section("end");
  int64_t mine = failures, total = 0;
  if (!call_ok(tutti_allreduce(&mine, &total, 1, TUTTI_INT64, TUTTI_SUM, comm),
               "final allreduce of failure counts"))
    total = mine ? mine : 1;
  if (failures == 0)
    printf("%s: %ld checks passed (rank %d of %d, transport=%s%s)\n", prog, checks, rank, nranks,
           transport, suffix);
  else
    printf("%s: FAILED %ld of %ld checks (rank %d of %d, transport=%s)\n", prog, failures, checks,
           rank, nranks, transport);
  tutti_barrier(comm);
  tutti_comm_destroy(comm);
  alarm(0);
  return total == 0 ? 0 : 1;
}
