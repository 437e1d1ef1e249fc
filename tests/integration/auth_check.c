/*
 * auth_check: connections must prove the job secret. Strangers, garbage and a replayed
 * handshake at the rendezvous are rejected and logged while the real job forms and runs.
 *
 * Without arguments it runs these cases, each in its own process group with a deadline (a
 * hang is a failure); ranks are forked children that report through a pipe, forked before the
 * case process starts any thread and handed their unique id through a pipe:
 *
 *   uid      tutti_get_unique_id in the case process, which then hosts the rendezvous. Ranks 0
 *            and 1 join (rank 1 through a recording proxy), rank 2 is held back while the case
 *            process plays strangers at the rendezvous: random bytes; a few bytes then
 *            silence (dropped within the 5 s hello deadline); a replay of rank 1's captured
 *            hello (the fresh challenge differs, so it is refused); and a forked process
 *            calling tutti_comm_init_rank as rank 2 with an id whose secret is wrong. Each
 *            must be dropped and logged as a WARN; then rank 2 joins and the three ranks run
 *            a loop of all-reduces, checked bit for bit, over TCP (so the data connections'
 *            handshake runs too).
 *   env      tutti_comm_init_env with TUTTI_SECRET: a stranger with another secret claiming
 *            rank 2 fails with TUTTI_ERR_REMOTE, one with a malformed TUTTI_SECRET fails with
 *            TUTTI_ERR_INVALID_ARGUMENT at once, and the real ranks form the job and run.
 *
 * White box: the uid case reads the rendezvous port from the id (bytes 12-13, network order,
 * see src/bootstrap/uid.c) and makes a wrong-secret id by flipping a byte of its secret
 * (bytes 16-47); the replay needs no knowledge of the wire format, only a recording.
 *
 * `auth_check --launched`, run under tutti-run, checks that every rank got the same
 * well-formed TUTTI_SECRET and that the job forms with it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tutti.h"

#define NRANKS 3
#define CASE_DEADLINE_S 90
#define ITERS 40
#define COUNT 4099 /* odd, so the ring's chunks are uneven */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void random_bytes(void *buf, size_t len) {
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || read(fd, buf, len) != (ssize_t)len) {
    perror("auth_check: /dev/urandom");
    exit(2);
  }
  close(fd);
}

/* ---- Ranks ------------------------------------------------------------------------------ */

typedef struct {
  int init_rc;
  int work_ok;
  char err[200];
} report_t;

/* A loop of all-reduces whose exact sums are known: integer-valued floats and int64s. */
static int allreduce_loop(tutti_comm_t comm, int rank, int nranks, char *err, size_t errlen) {
  static float fin[COUNT], fout[COUNT];
  static int64_t iin[COUNT], iout[COUNT];
  for (int it = 0; it < ITERS; it++) {
    for (int j = 0; j < COUNT; j++) {
      fin[j] = (float)((rank + 1) * (j % 97) + it);
      iin[j] = ((int64_t)(rank + 1) << 33) + j * (it + 1);
    }
    tutti_result_t rc = tutti_allreduce(fin, fout, COUNT, TUTTI_FLOAT32, TUTTI_SUM, comm);
    if (rc == TUTTI_SUCCESS)
      rc = tutti_allreduce(iin, iout, COUNT, TUTTI_INT64, TUTTI_SUM, comm);
    if (rc != TUTTI_SUCCESS) {
      snprintf(err, errlen, "all-reduce %d: %s: %s", it, tutti_result_string(rc),
               tutti_comm_last_error(comm));
      return 0;
    }
    int tri = nranks * (nranks + 1) / 2;
    for (int j = 0; j < COUNT; j++) {
      float fw = (float)(tri * (j % 97) + nranks * it);
      int64_t iw = ((int64_t)tri << 33) + (int64_t)nranks * j * (it + 1);
      if (memcmp(&fout[j], &fw, sizeof fw) != 0 || iout[j] != iw) {
        snprintf(err, errlen, "all-reduce %d: element %d is %g / %lld, want %g / %lld", it, j,
                 (double)fout[j], (long long)iout[j], (double)fw, (long long)iw);
        return 0;
      }
    }
  }
  return 1;
}

/* The body of a forked rank: waits for its unique id on go_fd and joins with it, or, at EOF
 * with no id, from the environment; works if it joined and work is set, and reports. */
static void rank_main(int rank, int go_fd, int work, int out_fd) {
  report_t rep;
  memset(&rep, 0, sizeof rep);
  tutti_unique_id_t id;
  size_t got = 0;
  ssize_t n;
  while (got < sizeof id && (n = read(go_fd, (char *)&id + got, sizeof id - got)) != 0) {
    if (n < 0 && errno != EINTR) _exit(4);
    if (n > 0) got += (size_t)n;
  }
  if (got != 0 && got != sizeof id) _exit(4);
  tutti_comm_t comm = NULL;
  rep.init_rc = got ? tutti_comm_init_rank(&comm, NRANKS, &id, rank) : tutti_comm_init_env(&comm);
  if (rep.init_rc == TUTTI_SUCCESS) {
    rep.work_ok = !work || allreduce_loop(comm, rank, NRANKS, rep.err, sizeof rep.err);
    if (tutti_comm_destroy(comm) != TUTTI_SUCCESS) rep.work_ok = 0;
  } else {
    snprintf(rep.err, sizeof rep.err, "init: %s", tutti_result_string(rep.init_rc));
  }
  _exit(write(out_fd, &rep, sizeof rep) == (ssize_t)sizeof rep ? 0 : 3);
}

typedef struct {
  pid_t pid;
  int report_fd; /* read end */
  int go_fd;     /* write end, or -1 once started */
} child_t;

/* Forks rank_main, which waits until start(). Ranks are forked before the case process has
 * any thread (the rendezvous's, the proxy's): a child forked while another thread holds a lock
 * (a sanitizer's allocator lock, say) could block on it forever. */
#define MAX_WAITING 8
static int waiting[MAX_WAITING], n_waiting; /* go pipes of children not yet started */

static child_t spawn(int rank, int work) {
  child_t ch = {-1, -1, -1};
  int rp[2], gp[2];
  if (pipe(rp) != 0 || pipe(gp) != 0) exit(2);
  fflush(NULL);
  ch.pid = fork();
  if (ch.pid < 0) exit(2);
  if (ch.pid == 0) {
    close(rp[0]);
    close(gp[1]);
    /* An earlier child started without an id waits for EOF on its pipe: not here too. */
    for (int i = 0; i < n_waiting; i++) close(waiting[i]);
    rank_main(rank, gp[0], work, rp[1]);
  }
  close(rp[1]);
  close(gp[0]);
  ch.report_fd = rp[0];
  ch.go_fd = gp[1];
  if (n_waiting == MAX_WAITING) exit(2);
  waiting[n_waiting++] = gp[1];
  return ch;
}

/* Lets ch join with id, or from the environment when id is NULL. */
static void start(child_t *ch, const tutti_unique_id_t *id) {
  if (id && write(ch->go_fd, id, sizeof *id) != (ssize_t)sizeof *id) exit(2);
  for (int i = 0; i < n_waiting; i++)
    if (waiting[i] == ch->go_fd) waiting[i--] = waiting[--n_waiting];
  close(ch->go_fd);
  ch->go_fd = -1;
}

/* Waits up to timeout_s for ch's report; a child that never reports fails with init_rc -1. */
static report_t collect(child_t *ch, double timeout_s) {
  report_t rep;
  memset(&rep, 0, sizeof rep);
  rep.init_rc = -1;
  snprintf(rep.err, sizeof rep.err, "no report within %.0f s: hung or crashed", timeout_s);
  struct pollfd pf = {ch->report_fd, POLLIN, 0};
  if (poll(&pf, 1, (int)(timeout_s * 1000)) == 1 &&
      read(ch->report_fd, &rep, sizeof rep) != (ssize_t)sizeof rep) {
    rep.init_rc = -1;
    snprintf(rep.err, sizeof rep.err, "died without reporting");
  }
  close(ch->report_fd);
  waitpid(ch->pid, NULL, WNOHANG);
  return rep;
}

static int expect_joined(const char *who, child_t *ch) {
  report_t rep = collect(ch, 60);
  int ok = rep.init_rc == TUTTI_SUCCESS && rep.work_ok;
  printf("  %s: %s%s%s\n", who, ok ? "joined, all-reduces bit-exact" : "FAILED",
         ok ? "" : ": ", ok ? "" : rep.err);
  return !ok;
}

static int expect_refused(const char *who, child_t *ch, tutti_result_t want, double max_s) {
  double t0 = now_s();
  report_t rep = collect(ch, max_s + 10);
  double dt = now_s() - t0;
  int ok = rep.init_rc == (int)want && dt <= max_s;
  printf("  %s: init -> %s after %.2f s%s\n", who,
         rep.init_rc < 0 ? rep.err : tutti_result_string((tutti_result_t)rep.init_rc), dt,
         ok ? " (refused, as it must be)" : "  <-- FAIL");
  if (!ok) printf("    expected %s within %.1f s\n", tutti_result_string(want), max_s);
  return !ok;
}

/* ---- Strangers at the rendezvous ----------------------------------------------------- */

static int connect_to(uint16_t port_be) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = port_be};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    perror("auth_check: connect");
    exit(2);
  }
  return fd;
}

/* Reads from fd until EOF or reset, at most cap bytes kept, for up to timeout_s. Returns the
 * number of bytes read, or -1 if the connection was still open at the timeout. */
static ssize_t drain(int fd, uint8_t *buf, size_t cap, double timeout_s) {
  double end = now_s() + timeout_s;
  size_t got = 0;
  for (;;) {
    double left = end - now_s();
    if (left <= 0) return -1;
    struct pollfd pf = {fd, POLLIN, 0};
    if (poll(&pf, 1, (int)(left * 1000) + 1) <= 0) continue;
    uint8_t tmp[512];
    ssize_t n = recv(fd, tmp, sizeof tmp, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return (ssize_t)got;
    if (n < 0) {
      if (errno == EINTR) continue;
      return (ssize_t)got;
    }
    size_t keep = got + (size_t)n <= cap ? (size_t)n : cap - got;
    if (buf) memcpy(buf + got, tmp, keep);
    got += keep;
  }
}

/* Sends len bytes to the rendezvous and expects it to hang up within max_s. */
static int stranger(const char *what, uint16_t port_be, const void *bytes, size_t len,
                    double max_s, uint8_t *challenge, ssize_t *challenge_len) {
  int fd = connect_to(port_be);
  double t0 = now_s();
  if (len && send(fd, bytes, len, MSG_NOSIGNAL) != (ssize_t)len) {
    printf("  %s: send failed: %s\n", what, strerror(errno));
    close(fd);
    return 1;
  }
  uint8_t buf[4096];
  ssize_t n = drain(fd, challenge ? challenge : buf, sizeof buf, max_s + 5);
  double dt = now_s() - t0;
  close(fd);
  if (challenge_len) *challenge_len = n;
  int ok = n >= 0 && dt <= max_s;
  printf("  %s: %s after %.2f s (%zd bytes from the server)%s\n", what,
         n < 0 ? "still connected" : "dropped", dt, n, ok ? "" : "  <-- FAIL");
  return !ok;
}

/* A TCP proxy for one connection that records what goes each way. */
typedef struct {
  int lfd;
  uint16_t port_be;   /* the proxy's */
  uint16_t target_be; /* the rendezvous's */
  pthread_mutex_t mu;
  uint8_t up[4096], down[4096]; /* client -> server, server -> client */
  size_t nup, ndown;
  double last_up; /* when the last client bytes came */
} proxy_t;

static void pump(proxy_t *p, int from, int to, int upward, int *open) {
  uint8_t buf[65536];
  ssize_t n = recv(from, buf, sizeof buf, 0);
  if (n <= 0) {
    shutdown(to, SHUT_WR);
    *open = 0;
    return;
  }
  pthread_mutex_lock(&p->mu);
  uint8_t *rec = upward ? p->up : p->down;
  size_t *len = upward ? &p->nup : &p->ndown;
  size_t keep = *len + (size_t)n <= sizeof p->up ? (size_t)n : sizeof p->up - *len;
  memcpy(rec + *len, buf, keep);
  *len += keep;
  if (upward) p->last_up = now_s();
  pthread_mutex_unlock(&p->mu);
  if (send(to, buf, (size_t)n, MSG_NOSIGNAL) != n) *open = 0;
}

static void *proxy_main(void *arg) {
  proxy_t *p = arg;
  int c = accept(p->lfd, NULL, NULL);
  if (c < 0) return NULL;
  int s = connect_to(p->target_be);
  int c_open = 1, s_open = 1;
  while (c_open || s_open) {
    struct pollfd pf[2] = {{c_open ? c : -1, POLLIN, 0}, {s_open ? s : -1, POLLIN, 0}};
    if (poll(pf, 2, 1000) < 0 && errno != EINTR) break;
    if (pf[0].revents) pump(p, c, s, 1, &c_open);
    if (pf[1].revents) pump(p, s, c, 0, &s_open);
  }
  close(c);
  close(s);
  return NULL;
}

static void proxy_start(proxy_t *p, uint16_t target_be, pthread_t *th) {
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->mu, NULL);
  p->target_be = target_be;
  p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof a;
  if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(p->lfd, 4) != 0 || getsockname(p->lfd, (struct sockaddr *)&a, &sl) != 0 ||
      pthread_create(th, NULL, proxy_main, p) != 0) {
    perror("auth_check: proxy");
    exit(2);
  }
  p->port_be = a.sin_port;
}

/* Waits until the proxied rank has sent its hello (nothing new from it for 0.5 s after the
 * server's challenge) and copies what each side sent. */
static int proxy_capture(proxy_t *p, uint8_t *up, size_t *nup, uint8_t *down, size_t *ndown) {
  double end = now_s() + 30;
  while (now_s() < end) {
    pthread_mutex_lock(&p->mu);
    int done = p->nup > 0 && p->ndown > 0 && now_s() - p->last_up > 0.5;
    if (done) {
      memcpy(up, p->up, p->nup);
      memcpy(down, p->down, p->ndown);
      *nup = p->nup;
      *ndown = p->ndown;
    }
    pthread_mutex_unlock(&p->mu);
    if (done) return 0;
    usleep(20000);
  }
  printf("  proxy: no handshake captured\n");
  return 1;
}

/* Counts lines of the file at path that contain needle, printing them when show is set. */
static int count_lines(const char *path, const char *needle, int show) {
  FILE *f = fopen(path, "r");
  char line[1024];
  int n = 0;
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, needle)) {
      if (show) printf("    log: %s", line);
      n++;
    }
  if (f) fclose(f);
  return n;
}

static int case_uid(void) {
  /* The rendezvous runs in this process: send its log lines to a file to check them. */
  char logpath[] = "/tmp/auth_check_log_XXXXXX";
  int logfd = mkstemp(logpath);
  if (logfd < 0 || dup2(logfd, 2) < 0) return 1;
  setenv("TUTTI_DEBUG", "warn", 1);
  child_t r0 = spawn(0, 1), r1 = spawn(1, 1), r2 = spawn(2, 1), liar = spawn(2, 0);
  tutti_unique_id_t id, proxied, wrong;
  tutti_result_t rc = tutti_get_unique_id(&id);
  if (rc != TUTTI_SUCCESS) {
    printf("  tutti_get_unique_id: %s\n", tutti_result_string(rc));
    return 1; /* run_case kills the waiting ranks */
  }
  uint16_t port_be;
  memcpy(&port_be, id.internal + 12, 2);
  proxy_t px;
  pthread_t pth;
  proxy_start(&px, port_be, &pth);
  proxied = id;
  memcpy(proxied.internal + 12, &px.port_be, 2);
  wrong = id;
  wrong.internal[16 + 7] ^= 0x5a;

  int bad = 0;
  start(&r0, &id);
  start(&r1, &proxied);
  uint8_t up[4096], down[4096], junk[4096], fresh[4096];
  size_t nup = 0, ndown = 0;
  bad |= proxy_capture(&px, up, &nup, down, &ndown);
  printf("  captured rank 1's handshake: %zu bytes challenge, %zu bytes hello\n", ndown, nup);

  random_bytes(junk, sizeof junk);
  bad |= stranger("random bytes (4096)", port_be, junk, sizeof junk, 6.0, NULL, NULL);
  bad |= stranger("8 bytes, then silence", port_be, junk, 8, 5.0 + 2.5, NULL, NULL);
  ssize_t nfresh = 0;
  bad |= stranger("replayed hello of rank 1", port_be, up, nup, 6.0, fresh, &nfresh);
  if (nfresh != (ssize_t)ndown || memcmp(fresh, down, ndown) == 0) {
    printf("  replay: the challenge (%zd bytes) is not a fresh one of %zu bytes  <-- FAIL\n",
           nfresh, ndown);
    bad = 1;
  }
  start(&liar, &wrong);
  bad |= expect_refused("rank 2 with a wrong secret", &liar, TUTTI_ERR_REMOTE, 10.0);

  start(&r2, &id);
  bad |= expect_joined("rank 0", &r0);
  bad |= expect_joined("rank 1 (through the proxy)", &r1);
  bad |= expect_joined("rank 2 (held back)", &r2);
  pthread_join(pth, NULL);
  close(px.lfd);

  fflush(stderr);
  int rejected = count_lines(logpath, "rendezvous rejected a connection", 1);
  int unproven = count_lines(logpath, "did not prove it knows the job secret", 0);
  unlink(logpath);
  /* random bytes, silence, replay, wrong secret: four rejections, the last two unproven. */
  if (rejected < 4 || unproven < 2) {
    printf("  log: %d rejections (want 4), %d of them for no proof (want 2)  <-- FAIL\n",
           rejected, unproven);
    bad = 1;
  }
  return bad;
}

static void hex_secret(char out[65]) {
  uint8_t key[32];
  random_bytes(key, sizeof key);
  for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", key[i]);
}

static int case_env(void) {
  /* A free port for rank 0's rendezvous (the window tutti-run has too). */
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &sl) != 0)
    return 1;
  close(fd);
  char addr[32], secret[65], other[65];
  snprintf(addr, sizeof addr, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
  hex_secret(secret);
  hex_secret(other);
  setenv("TUTTI_ADDR", addr, 1);
  setenv("TUTTI_WORLD_SIZE", "3", 1);
  setenv("TUTTI_DEBUG", "none", 1);

  int bad = 0;
  setenv("TUTTI_SECRET", "not-hex", 1);
  setenv("TUTTI_RANK", "2", 1);
  child_t malformed = spawn(2, 0);
  start(&malformed, NULL);
  bad |= expect_refused("TUTTI_SECRET=not-hex", &malformed, TUTTI_ERR_INVALID_ARGUMENT, 1.0);

  setenv("TUTTI_SECRET", secret, 1);
  setenv("TUTTI_RANK", "0", 1);
  child_t r0 = spawn(0, 1);
  start(&r0, NULL);
  setenv("TUTTI_RANK", "1", 1);
  child_t r1 = spawn(1, 1);
  start(&r1, NULL);
  setenv("TUTTI_SECRET", other, 1);
  setenv("TUTTI_RANK", "2", 1);
  child_t liar = spawn(2, 0);
  start(&liar, NULL);
  bad |= expect_refused("rank 2 with another TUTTI_SECRET", &liar, TUTTI_ERR_REMOTE, 10.0);
  setenv("TUTTI_SECRET", secret, 1);
  child_t r2 = spawn(2, 1);
  start(&r2, NULL);
  bad |= expect_joined("rank 0", &r0);
  bad |= expect_joined("rank 1", &r1);
  bad |= expect_joined("rank 2", &r2);
  return bad;
}

/* Under tutti-run: the same well-formed secret on every rank, and a job that forms with it. */
static int launched(void) {
  const char *s = getenv("TUTTI_SECRET");
  size_t n = s ? strlen(s) : 0;
  int ok = n == 64 && strspn(s, "0123456789abcdefABCDEF") == 64;
  if (!ok) {
    printf("auth_check: TUTTI_SECRET is %s, not 64 hex digits\n", s ? "malformed" : "unset");
    return 1;
  }
  tutti_comm_t comm;
  tutti_result_t rc = tutti_comm_init_env(&comm);
  if (rc != TUTTI_SUCCESS) {
    printf("auth_check: tutti_comm_init_env: %s\n", tutti_result_string(rc));
    return 1;
  }
  int rank, size;
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &size);
  uint8_t mine[64], lo[64], hi[64];
  memcpy(mine, s, 64);
  rc = tutti_allreduce(mine, lo, 64, TUTTI_UINT8, TUTTI_MIN, comm);
  if (rc == TUTTI_SUCCESS) rc = tutti_allreduce(mine, hi, 64, TUTTI_UINT8, TUTTI_MAX, comm);
  ok = rc == TUTTI_SUCCESS && !memcmp(lo, mine, 64) && !memcmp(hi, mine, 64);
  char err[200] = "";
  ok = ok && allreduce_loop(comm, rank, size, err, sizeof err);
  printf("auth_check: rank %d of %d: %s%s\n", rank, size,
         ok ? "same TUTTI_SECRET on every rank, job formed" : "FAIL ", err);
  tutti_comm_destroy(comm);
  return !ok;
}

static const struct {
  const char *name;
  int (*fn)(void);
  const char *desc;
} cases[] = {
    {"uid", case_uid, "strangers, garbage and a replay at the rendezvous of a unique id"},
    {"env", case_env, "TUTTI_SECRET: another secret and a malformed one are refused"},
};

/* Runs one case in its own process group with a deadline. Returns 0 on pass. */
static int run_case(int i) {
  printf("auth_check: case %s: %s\n", cases[i].name, cases[i].desc);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    int rc = cases[i].fn();
    fflush(NULL);
    _exit(rc ? 1 : 0);
  }
  if (pid < 0) return 1;
  setpgid(pid, pid);
  double end = now_s() + CASE_DEADLINE_S;
  int status = 0;
  pid_t w;
  while ((w = waitpid(pid, &status, WNOHANG)) == 0 && now_s() < end) usleep(20000);
  if (w == 0) printf("  case HUNG past %d s: killed\n", CASE_DEADLINE_S);
  kill(-pid, SIGKILL); /* the case, or any rank left behind */
  if (w == 0) {
    waitpid(pid, &status, 0);
    return 1;
  }
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1 && !strcmp(argv[1], "--launched")) return launched();
  int failed = 0, ran = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int selected = argc < 2;
    for (int a = 1; a < argc; a++) selected |= strcmp(argv[a], cases[i].name) == 0;
    if (!selected) continue;
    int bad = run_case((int)i);
    printf("auth_check: case %s: %s\n", cases[i].name, bad ? "FAIL" : "PASS");
    failed += bad;
    ran++;
  }
  printf("auth_check: %d of %d cases passed\n", ran - failed, ran);
  return failed ? 1 : 0;
}
