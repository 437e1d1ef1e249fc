/*
 * shrink_split_check: tutti_comm_shrink never splits the survivors into two communicators that
 * both succeed (issue 11, item 1).
 *
 *   TUTTI_TIMEOUT=4  tutti-run -n 3 shrink_split_check late|late_gone
 *   TUTTI_TIMEOUT=10 tutti-run -n 4 shrink_split_check strangers
 *   TUTTI_TRANSPORT=tcp tutti-run -n 2 shrink_split_check held
 *
 * late:       ranks 0 and 1 shrink a healthy communicator at once; rank 2 calls shrink only
 *             after the leader's collection window (half of TUTTI_TIMEOUT) has closed, while
 *             0 and 1 have destroyed the old communicator but still hold the new one. Rank 2
 *             must fail (TUTTI_ERR_TIMEOUT or TUTTI_ERR_REMOTE), never get a communicator of
 *             its own; 0 and 1 must get one communicator of 2.
 * late_gone:  the same, but 0 and 1 destroy the new communicator too before rank 2 calls
 *             shrink (the processes live on): rank 2 must still fail.
 * strangers:  rank 0 (the leader) holds 18 idle TCP connections open to its own listeners,
 *             then rank 3 leaves in the middle of an all-reduce. Ranks 0, 1 and 2 must all
 *             end in one communicator of 3 (checked by an all-reduce and an all-gather of
 *             their world ranks).
 * held:       (tcp, 2 ranks) rank 0 opens an idle connection to its own data listener, then
 *             waits in an all-reduce, whose tcp path accepts that connection and waits for
 *             its first message (as it does for a shrink member that connected an instant
 *             before its knock). A shrink must close it as it starts, since its collection
 *             loop never reads it: the connection must show EOF when the shrink returns,
 *             and the shrink must form one communicator of 2.
 *
 * A watchdog alarm turns any hang into a failure.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tutti.h"

static int world = -1;

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "shrink_split_check rank %d: FAIL: ", world);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void sleep_s(double s) {
  struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&t, NULL);
}

/* The new communicator must hold exactly the expected world ranks, in order. */
static void check_group(tutti_comm_t c, const int *expect, int n) {
  int r, size;
  tutti_comm_rank(c, &r);
  tutti_comm_size(c, &size);
  if (size != n) die("the new communicator has %d ranks, expected %d", size, n);
  if (expect[r] != world) die("new rank %d is world rank %d, expected %d", r, world, expect[r]);
  int32_t mine = world, all[8], one = 1, sum = 0;
  if (tutti_allgather(&mine, all, 1, TUTTI_INT32, c) != TUTTI_SUCCESS)
    die("all-gather on the new communicator: %s", tutti_comm_last_error(c));
  for (int i = 0; i < n; i++)
    if (all[i] != expect[i]) die("new rank %d is world rank %d, expected %d", i, all[i], expect[i]);
  if (tutti_allreduce(&one, &sum, 1, TUTTI_INT32, TUTTI_SUM, c) != TUTTI_SUCCESS || sum != n)
    die("all-reduce on the new communicator: %d, expected %d (%s)", sum, n,
        tutti_comm_last_error(c));
}

static int late(tutti_comm_t comm, int gone) {
  const char *t = getenv("TUTTI_TIMEOUT");
  double timeout = t ? atof(t) : 4.0;
  tutti_comm_t next = NULL;
  int32_t pid = (int32_t)getpid(), pids[3];
  if (tutti_allgather(&pid, pids, 1, TUTTI_INT32, comm) != TUTTI_SUCCESS)
    die("all-gather of pids: %s", tutti_comm_last_error(comm));
  if (world < 2) {
    tutti_result_t rc = tutti_comm_shrink(comm, &next);
    if (rc != TUTTI_SUCCESS) die("shrink: %s", tutti_comm_last_error(comm));
    int expect[2] = {0, 1};
    check_group(next, expect, 2);
    tutti_comm_destroy(comm);
    if (gone) {
      tutti_comm_destroy(next);
      next = NULL;
    }
    /* Stay alive (holding the new communicator unless gone) until rank 2 has decided and
     * exited (its shrink ends within its timeout; 30 s is a hang bound). */
    for (double t1 = now_s(); kill(pids[2], 0) == 0 && now_s() - t1 < 30.0;) sleep_s(0.05);
    if (next) tutti_comm_destroy(next);
    printf("shrink_split_check rank %d: PASS (in the communicator of 2)\n", world);
    return 0;
  }
  /* Past the leader's window (half the timeout) and its own shrink. */
  sleep_s(timeout / 2 + 1.5);
  double t0 = now_s();
  tutti_result_t rc = tutti_comm_shrink(comm, &next);
  double dt = now_s() - t0;
  printf("shrink_split_check rank 2: late shrink returned %s after %.2f s: %s\n",
         tutti_result_string(rc), dt, tutti_comm_last_error(comm));
  if (rc == TUTTI_SUCCESS) {
    int size;
    tutti_comm_size(next, &size);
    die("a late shrink succeeded with a communicator of %d while ranks 0 and 1 hold one of 2",
        size);
  }
  if (rc != TUTTI_ERR_TIMEOUT && rc != TUTTI_ERR_REMOTE)
    die("a late shrink returned %s, expected TIMEOUT or REMOTE", tutti_result_string(rc));
  tutti_comm_destroy(comm);
  printf("shrink_split_check rank 2: PASS (left out, with an error)\n");
  return 0;
}

/* Opens n idle connections to every TCP listener of this process (the data listener among
 * them), found through its own descriptors, as a stranger on the host could. */
static int hold_strangers(int n, int *fds) {
  int held = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return 0;
  int lfds[16], nl = 0;
  struct dirent *e;
  while ((e = readdir(d)) && nl < 16) {
    int fd = atoi(e->d_name), acc = 0;
    socklen_t len = sizeof acc;
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) == 0 && acc &&
        getsockname(fd, (struct sockaddr *)&sa, &sl) == 0 && sa.sin_family == AF_INET)
      lfds[nl++] = fd;
  }
  closedir(d);
  for (int k = 0; k < nl; k++) {
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    getsockname(lfds[k], (struct sockaddr *)&sa, &sl);
    if (sa.sin_addr.s_addr == htonl(INADDR_ANY)) sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < n && held < 64; i++) {
      int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (s < 0) break;
      connect(s, (struct sockaddr *)&sa, sizeof sa); /* completes in the kernel's backlog */
      fds[held++] = s;
    }
  }
  return held;
}

static int strangers(tutti_comm_t comm) {
  int n;
  tutti_comm_size(comm, &n);
  if (n != 4) die("run with 4 ranks");
  int fds[64], held = 0;
  if (world == 0) {
    held = hold_strangers(18, fds);
    if (held < 18) die("could hold only %d idle connections", held);
  }
  enum { COUNT = 1 << 16 };
  float *x = malloc(COUNT * sizeof *x), *y = malloc(COUNT * sizeof *y);
  if (!x || !y) die("out of memory");
  for (int i = 0; i < COUNT; i++) x[i] = (float)(world + 1);
  if (tutti_allreduce(x, y, COUNT, TUTTI_FLOAT32, TUTTI_SUM, comm) != TUTTI_SUCCESS ||
      y[7] != 10.0f)
    die("the all-reduce before the kill: %s", tutti_comm_last_error(comm));
  if (world == 3) {
    sleep_s(0.02);
    _exit(0); /* in the middle of the others' next all-reduce */
  }
  tutti_result_t rc = tutti_allreduce(x, y, COUNT, TUTTI_FLOAT32, TUTTI_SUM, comm);
  if (rc == TUTTI_SUCCESS) die("the all-reduce without rank 3 succeeded");
  tutti_comm_t next;
  double t0 = now_s();
  rc = tutti_comm_shrink(comm, &next);
  double dt = now_s() - t0;
  if (rc != TUTTI_SUCCESS) die("shrink after %.2f s: %s", dt, tutti_comm_last_error(comm));
  int expect[3] = {0, 1, 2};
  check_group(next, expect, 3);
  printf("shrink_split_check rank %d: PASS (one communicator of 3, shrink took %.2f s, %d "
         "idle connections held)\n", world, dt, held);
  tutti_comm_destroy(next);
  tutti_comm_destroy(comm);
  for (int i = 0; i < held; i++) close(fds[i]);
  free(x);
  free(y);
  return 0;
}

/* Whether connection fd was closed by the other end (EOF now, nothing pending to read). */
static int closed_by_peer(int fd) {
  char b;
  return recv(fd, &b, 1, MSG_DONTWAIT) == 0;
}

static int held(tutti_comm_t comm) {
  int n, fds[64], nheld = 0;
  tutti_comm_size(comm, &n);
  if (n != 2) die("run with 2 ranks");
  if (world == 0 && (nheld = hold_strangers(1, fds)) < 1) die("could not connect to a listener");
  if (world == 1) sleep_s(0.3); /* rank 0 waits in the all-reduce, serving its listener */
  int32_t one = 1, sum = 0;
  if (tutti_allreduce(&one, &sum, 1, TUTTI_INT32, TUTTI_SUM, comm) != TUTTI_SUCCESS || sum != 2)
    die("all-reduce: %d (%s)", sum, tutti_comm_last_error(comm));
  int open_before = 0;
  for (int i = 0; i < nheld; i++) open_before += !closed_by_peer(fds[i]);
  tutti_comm_t next;
  if (tutti_comm_shrink(comm, &next) != TUTTI_SUCCESS)
    die("shrink: %s", tutti_comm_last_error(comm));
  int closed = 0;
  for (int i = 0; i < nheld; i++) closed += closed_by_peer(fds[i]);
  int expect[2] = {0, 1};
  check_group(next, expect, 2);
  if (world == 0 && (open_before != nheld || closed != 1))
    die("of %d idle connections to this rank's listeners, %d were open before the shrink and "
        "%d closed by it; expected all open before and exactly the data listener's closed",
        nheld, open_before, closed);
  printf("shrink_split_check rank %d: PASS (%d idle connections held)\n", world, nheld);
  tutti_comm_destroy(next);
  tutti_comm_destroy(comm);
  for (int i = 0; i < nheld; i++) close(fds[i]);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(60);
  if (argc != 2) return 2;
  tutti_comm_t comm;
  if (tutti_comm_init_env(&comm) != TUTTI_SUCCESS) die("init");
  tutti_comm_rank(comm, &world);
  if (!strcmp(argv[1], "late")) return late(comm, 0);
  if (!strcmp(argv[1], "late_gone")) return late(comm, 1);
  if (!strcmp(argv[1], "strangers")) return strangers(comm);
  if (!strcmp(argv[1], "held")) return held(comm);
  return 2;
}
