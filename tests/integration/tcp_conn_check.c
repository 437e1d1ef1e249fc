/*
 * TCP connections are made on first use (issue 13 item 3): after a ring all-reduce over tcp
 * (run with TUTTI_TRANSPORT=tcp TUTTI_ALGO=ring), each rank holds at most MAX_CONNS TCP
 * connections, not one per peer, and at least the ring's two. The count is the process's own:
 * sockets in /proc/self/fd whose inode /proc/self/net/tcp lists in a state other than LISTEN.
 * The all-reduce's result is checked against the sum computed here.
 *
 *   tutti-run -n 8 tcp_conn_check
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tutti.h"

/* The ring's two neighbours, and init's binomial broadcast of the tuning model (parent and
 * up to two children at n = 8, some of them the same ranks). */
enum { MAX_CONNS = 4, COUNT = 1 << 16 };

/* Whether inode is a connection in /proc/self/net/tcp: any state but LISTEN (0A). A peer that
 * already destroyed its communicator leaves this rank's end in CLOSE_WAIT, still open. */
static int established(unsigned long inode) {
  FILE *f = fopen("/proc/self/net/tcp", "r");
  if (!f) return 0;
  char line[512];
  int found = 0;
  if (!fgets(line, sizeof line, f)) line[0] = '\0'; /* the heading */
  while (!found && fgets(line, sizeof line, f)) {
    unsigned st;
    unsigned long ino;
    /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
    if (sscanf(line, "%*s %*s %*s %x %*s %*s %*s %*s %*s %lu", &st, &ino) == 2 && ino == inode)
      found = st != 0x0A;
  }
  fclose(f);
  return found;
}

static int count_connections(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    char path[300], target[64];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t len = readlink(path, target, sizeof target - 1);
    if (len <= 0) continue;
    target[len] = '\0';
    unsigned long inode;
    if (sscanf(target, "socket:[%lu]", &inode) == 1 && established(inode)) n++;
  }
  closedir(d);
  return n;
}

int main(void) {
  tutti_comm_t c;
  int r, n;
  if (tutti_comm_init_env(&c) != TUTTI_SUCCESS) {
    printf("tcp_conn_check: init failed: %s\n", tutti_last_init_error());
    return 1;
  }
  tutti_comm_rank(c, &r);
  tutti_comm_size(c, &n);
  float *x = malloc(COUNT * sizeof *x);
  if (!x) return 1;
  int ok = 1;
  for (int iter = 0; iter < 3; iter++) {
    for (int i = 0; i < COUNT; i++) x[i] = (float)(r + 1 + i % 7);
    if (tutti_allreduce(x, x, COUNT, TUTTI_FLOAT32, TUTTI_SUM, c) != TUTTI_SUCCESS) {
      printf("tcp_conn_check rank %d: FAIL: %s\n", r, tutti_comm_last_error(c));
      return 1;
    }
    for (int i = 0; i < COUNT && ok; i++) {
      float want = (float)(n * (n + 1) / 2 + n * (i % 7));
      if (x[i] != want) {
        printf("tcp_conn_check rank %d: FAIL: element %d is %g, not %g\n", r, i, x[i], want);
        ok = 0;
      }
    }
  }
  int conns = count_connections();
  printf("tcp_conn_check rank %d of %d: %d TCP connections\n", r, n, conns);
  if (conns < 0 || conns > MAX_CONNS) {
    printf("tcp_conn_check rank %d: FAIL: more than %d connections\n", r, MAX_CONNS);
    ok = 0;
  }
  if (n >= 3 && conns < 2) {
    printf("tcp_conn_check rank %d: FAIL: fewer connections than a ring needs (the count is "
           "broken)\n", r);
    ok = 0;
  }
  /* Every rank must still fail promptly if a peer it never talked to goes away: checked by
   * kill_check_tcp; here, a clean destroy. */
  tutti_comm_destroy(c);
  free(x);
  printf("tcp_conn_check rank %d: %s\n", r, ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
