/*
 * tcp_loopback — raw TCP throughput over 127.0.0.1 between two processes, the ceiling for
 * tutti's tcp transport (and for gloo) on this machine. A forked child writes MIB mebibytes in
 * CHUNK-byte write()s; the parent reads them and times from the first byte to the last. Each of
 * REPS repetitions uses a fresh connection; prints one JSON line with the median and the best.
 *
 *   tcp_loopback [MIB=512] [CHUNK_KIB=64] [REPS=5]
 *
 * Every socket has a 30 s send/receive timeout, so a stuck peer ends the run with an error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void fail(const char *what) {
  perror(what);
  exit(1);
}

static void deadline(int fd) {
  struct timeval tv = {30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* One transfer of total bytes; returns bytes per second seen by the reader. */
static double one(size_t total, size_t chunk, char *buf) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof(a);
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 1) ||
      getsockname(ls, (struct sockaddr *)&a, &alen))
    fail("tcp_loopback: listen on 127.0.0.1");
  pid_t pid = fork();
  if (pid < 0)
    fail("tcp_loopback: fork");
  if (pid == 0) { /* the writer */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    deadline(s);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)))
      fail("tcp_loopback: connect");
    for (size_t sent = 0; sent < total;) {
      size_t n = total - sent < chunk ? total - sent : chunk;
      ssize_t w = write(s, buf, n);
      if (w <= 0)
        fail("tcp_loopback: write");
      sent += (size_t)w;
    }
    close(s);
    _exit(0);
  }
  int s = accept(ls, NULL, NULL);
  if (s < 0)
    fail("tcp_loopback: accept");
  deadline(s);
  double t0 = 0;
  for (size_t got = 0; got < total;) {
    ssize_t r = read(s, buf, chunk);
    if (r <= 0)
      fail("tcp_loopback: read");
    if (got == 0)
      t0 = now_s();
    got += (size_t)r;
  }
  double t = now_s() - t0;
  close(s);
  close(ls);
  int status;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status))
    exit(1);
  return (double)total / t;
}

static int cmp(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 512;
  size_t chunk = (argc > 2 ? strtoul(argv[2], NULL, 10) : 64) << 10;
  int reps = argc > 3 ? atoi(argv[3]) : 5;
  if (!mib || !chunk || reps < 1 || reps > 100) {
    fprintf(stderr, "usage: tcp_loopback [MIB] [CHUNK_KIB] [REPS]\n");
    return 2;
  }
  char *buf = malloc(chunk);
  if (!buf)
    fail("tcp_loopback: malloc");
  memset(buf, 1, chunk);
  double r[100];
  for (int i = 0; i < reps; i++)
    r[i] = one(mib << 20, chunk, buf) * 1e-9;
  qsort(r, (size_t)reps, sizeof(r[0]), cmp);
  printf("{\"tcp_loopback\":{\"bytes\":%zu,\"chunk\":%zu,\"reps\":%d,\"median_gbs\":%.4f,"
         "\"best_gbs\":%.4f}}\n",
         mib << 20, chunk, reps, r[reps / 2], r[reps - 1]);
  free(buf);
  return 0;
}
