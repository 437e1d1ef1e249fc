/*
 * forensics_check: the wait report names the rank that holds a job up.
 *
 *   TUTTI_TIMEOUT=30 tutti-run -n 3 forensics_check
 *
 * The program sets its communicator's deadline to 2 s with tutti_comm_set_timeout (after
 * checking that 0, a negative and NaN are refused), so TUTTI_TIMEOUT must not be what fires.
 * Call 1: rank 1 is 1.2 s late to an all-reduce; ranks 0 and 2 send themselves SIGUSR1 while
 * they wait. Each must log a report ("wait report (SIGUSR1)") and still complete the call
 * correctly; at least one of them (the one that receives from rank 1 first) must say that
 * rank 1, by pid, never posted call #1, and no report may say so of another rank.
 * Call 2: rank 1 is 3.5 s late, past TUTTI_TIMEOUT=2. A rank that times out waiting for rank 1
 * must say rank 1 never posted the call (one waiting for another rank must not say so of it),
 * and log the timeout report; every rank's call must fail (rank 1's too, when it arrives) and
 * none hang.
 * Each rank's stderr goes to a file it reads back; failures go to the real stderr.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tutti.h"

#define COUNT 4096
#define LATE 1

static int rank = -1;
static FILE *out; /* the real stderr */

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(out, "forensics_check rank %d: FAIL: ", rank);
  vfprintf(out, fmt, ap);
  fputc('\n', out);
  va_end(ap);
  exit(1);
}

static void *poke(void *arg) {
  (void)arg;
  usleep(400000);
  kill(getpid(), SIGUSR1);
  return NULL;
}

/* Everything this process logged since the start. */
static char *logged(const char *path) {
  fflush(stderr);
  FILE *f = fopen(path, "r");
  if (!f) die("cannot read back %s", path);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* Whether some line of text contains both a and b. */
static int line_with(const char *text, const char *a, const char *b) {
  for (const char *p = text; (p = strstr(p, a)) != NULL; p++) {
    const char *start = p, *end = strchr(p, '\n');
    while (start > text && start[-1] != '\n') start--;
    const char *q = strstr(start, b);
    if (q && (!end || q < end)) return 1;
  }
  return 0;
}

int main(void) {
  alarm(60);
  out = fdopen(dup(2), "w");
  setvbuf(out, NULL, _IONBF, 0);
  char path[] = "/tmp/tutti_forensics_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || dup2(fd, 2) < 0) die("cannot capture stderr");
  close(fd);
  unlink(path); /* gone when the process is; read back through /proc below */
  char proc_path[64];
  snprintf(proc_path, sizeof proc_path, "/proc/self/fd/2");
  setvbuf(stderr, NULL, _IONBF, 0);

  tutti_comm_t comm;
  tutti_result_t rc = tutti_comm_init_env(&comm);
  if (rc != TUTTI_SUCCESS) die("init: %s", tutti_result_string(rc));
  int n;
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &n);
  if (n != 3) die("run with 3 ranks");
  if (tutti_comm_set_timeout(comm, 0) != TUTTI_ERR_INVALID_ARGUMENT ||
      tutti_comm_set_timeout(comm, -1) != TUTTI_ERR_INVALID_ARGUMENT ||
      tutti_comm_set_timeout(comm, 0.0 / 0.0) != TUTTI_ERR_INVALID_ARGUMENT ||
      tutti_comm_set_timeout(NULL, 1) != TUTTI_ERR_INVALID_ARGUMENT)
    die("tutti_comm_set_timeout accepted a bad value");
  if (tutti_comm_set_timeout(comm, 2.0) != TUTTI_SUCCESS) die("tutti_comm_set_timeout(2) failed");
  int32_t pids[3], me = (int32_t)getpid();
  if (tutti_allgather(&me, pids, 1, TUTTI_INT32, comm) != TUTTI_SUCCESS)
    die("all-gather of pids: %s", tutti_comm_last_error(comm));
  char late_rank[64];
  snprintf(late_rank, sizeof late_rank, "rank %d (pid %d ", LATE, (int)pids[LATE]);

  /* Call 1 (the all-gather was call #1: this is #2 on the wire). */
  float send[COUNT], recv[COUNT];
  for (int i = 0; i < COUNT; i++) send[i] = (float)(rank + 1);
  pthread_t th;
  if (rank == LATE) usleep(1200000);
  else pthread_create(&th, NULL, poke, NULL);
  rc = tutti_allreduce(send, recv, COUNT, TUTTI_FLOAT32, TUTTI_SUM, comm);
  if (rc != TUTTI_SUCCESS) die("late all-reduce failed: %s", tutti_comm_last_error(comm));
  for (int i = 0; i < COUNT; i++)
    if (recv[i] != 6.0f) die("late all-reduce: element %d is %g, not 6", i, (double)recv[i]);
  int32_t named = 0;
  if (rank != LATE) {
    pthread_join(th, NULL);
    const char *log = logged(proc_path);
    if (!strstr(log, "wait report (SIGUSR1)")) die("no SIGUSR1 report in:\n%s", log);
    named = line_with(log, late_rank, "never posted call #2");
    fprintf(out, "rank %d logged:\n%s", rank, log);
    for (int r = 0; r < n; r++) {
      char other[64];
      snprintf(other, sizeof other, "rank %d (pid %d ", r, (int)pids[r]);
      if (r != LATE && line_with(log, other, "never posted"))
        die("the report blames rank %d, which was not late:\n%s", r, log);
    }
  }
  int32_t all_named[3];
  if (tutti_allgather(&named, all_named, 1, TUTTI_INT32, comm) != TUTTI_SUCCESS)
    die("all-gather of verdicts: %s", tutti_comm_last_error(comm));
  if (all_named[0] + all_named[2] < 1)
    die("no SIGUSR1 report said that rank %d never posted call #2", LATE);

  /* Call 4: rank 1 is later than the timeout. */
  if (rank == LATE) usleep(3500000);
  rc = tutti_allreduce(send, recv, COUNT, TUTTI_FLOAT32, TUTTI_SUM, comm);
  /* The late rank may find every message it needs already sent before the others gave up
   * (then it rightly succeeds); the others cannot. */
  if (rc == TUTTI_SUCCESS && rank != LATE) die("the all-reduce past the timeout succeeded");
  const char *err = tutti_comm_last_error(comm);
  /* The rank that waits on rank 1 directly must say it never posted; one that waits on a
   * rank that waits on rank 1 sees that rank posted, and must not call it a no-show. */
  /* A rank told by a peer that gave up ("abandoned", "gave up") reports the peer's verdict. */
  if (rc == TUTTI_ERR_TIMEOUT && rank != LATE && !strstr(err, "abandoned") &&
      !strstr(err, "gave up")) {
    if (!strstr(err, "timed out after 2.0 s"))
      die("the deadline was not the communicator's 2 s: %s", err);
    if (strstr(err, late_rank) ? !strstr(err, "never posted call #4")
                               : strstr(err, "never posted") != NULL)
      die("the timeout blames the wrong rank or in the wrong words: %s", err);
    if (!strstr(logged(proc_path), "wait report (timeout)")) die("no timeout report logged");
  }
  fprintf(out, "rank %d: %s: %s\nrank %d: PASS\n", rank, tutti_result_string(rc), err, rank);
  tutti_comm_destroy(comm);
  return 0;
}
