/*
 * Measuring how fast two local ranks can talk: the cross-core hand-off of a cache line, a
 * futex wake-up, reading a buffer another core just wrote, and TCP over loopback. Two
 * threads of this process stand in for two ranks (pinned to different CPUs where the process
 * may use two): the same-host transport's queues and mailboxes are the same cache lines and
 * futexes, without the segment, which would need every local rank at once.
 *
 * Every loop here is bounded by a deadline as well as a count, so a machine too loaded to
 * schedule the second thread costs milliseconds, not a hang.
 */
#include <arpa/inet.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <assert.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "tune/model.h"

#define TRIAL_NS 500000 /* each trial's deadline: 0.5 ms */
#define TRIALS 3
#define GIVE_UP_NS 10000000 /* a partner that never answered within 10 ms: not scheduled */
/* Once the partner has answered, a mode's trials start only within BUDGET_NS of that, and an
 * answer is awaited at most STALL_NS past the trial and the budget: on a busy machine the
 * partner is preempted for a time slice at a time, and waiting for each (up to 10 ms a trial,
 * three trials, three modes) cost 30-90 ms a job at a load of 6-8, for samples the median
 * drops anyway. */
#define BUDGET_NS 2000000
#define STALL_NS 2000000
#define STABLE 0.1 /* two trials whose medians differ by less than this fraction: enough */

typedef struct pair {
  _Alignas(64) atomic_int turn; /* whose move it is: odd for the partner, even for the main */
  _Alignas(64) atomic_int stop;
  int cpu;                      /* the partner's CPU, or -1: not pinned */
  int mode;                     /* what the partner does, below */
  char *buf, *dst;              /* the cross-core read */
  size_t buf_bytes;
  double copy_s;                /* best time the main side took to read buf */
} pair_t;

enum { MODE_SPIN, MODE_FUTEX, MODE_WRITE };

/* Sleeps while *w == val, at most a millisecond (the callers recheck their deadline). */
static void futex_wait(atomic_int *w, int val) {
  struct timespec ms = {0, 1000000};
  syscall(SYS_futex, (int *)w, FUTEX_WAIT_PRIVATE, val, &ms, NULL, 0);
}
static void futex_wake(atomic_int *w) {
  syscall(SYS_futex, (int *)w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Waits until *w != val (spinning, yielding now and then so a partner on this core runs),
 * or p->stop. */
static int spin_until_change(pair_t *p, atomic_int *w, int val) {
  for (unsigned i = 1;; i++) {
    if (atomic_load_explicit(w, memory_order_acquire) != val) return 0;
    if (atomic_load_explicit(&p->stop, memory_order_relaxed)) return -1;
    if (!(i & 63)) sched_yield();
  }
}

void tutti__measure_pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* The partner: answers each move of the main side with its own. */
static void *partner(void *arg) {
  pair_t *p = arg;
  tutti__measure_pin(p->cpu);
  int t = 0;
  for (;;) {
    if (p->mode == MODE_FUTEX) {
      while (atomic_load_explicit(&p->turn, memory_order_acquire) == t) {
        if (atomic_load(&p->stop)) return NULL;
        futex_wait(&p->turn, t);
      }
    } else if (spin_until_change(p, &p->turn, t)) {
      return NULL;
    }
    t += 2;
    if (p->mode == MODE_WRITE) memset(p->buf, t & 0xff, p->buf_bytes);
    atomic_store_explicit(&p->turn, t, memory_order_release);
    if (p->mode == MODE_FUTEX) futex_wake(&p->turn);
  }
}

/* The median of k samples (sorted in place). */
static double median(double *v, int k) {
  for (int i = 1; i < k; i++)
    for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return k ? v[k / 2] : -1;
}

/* Whether the trial just ended (samples from..to of v) agrees with the one before it
 * (prev..from) within STABLE: the figure is settled and further trials would only cost time.
 * Sorts both ranges in place (the caller's median sorts everything anyway). */
static int stable(double *v, int prev, int from, int to) {
  if (prev < 0 || from - prev < 1 || to - from < 1) return 0;
  double a = median(v + prev, from - prev), b = median(v + from, to - from);
  return a > 0 && b > 0 && (a > b ? a - b : b - a) <= STABLE * (a < b ? a : b);
}

#define MAX_SAMPLES 512

/* Runs the main side of trials of round trips; returns the median round trip in seconds, or
 * -1 if the partner never answered. A median, not a mean: on a loaded machine a few round
 * trips wait for the scheduler, and those say more about the neighbours than the machine. */
static double run_pair(pair_t *p, int mode, int rounds) {
  pthread_t th;
  static_assert(MAX_SAMPLES >= 1, "samples");
  double *v = malloc(MAX_SAMPLES * sizeof *v);
  int nv = 0;
  if (!v) return -1;
  atomic_store(&p->turn, 0);
  atomic_store(&p->stop, 0);
  p->mode = mode;
  p->copy_s = -1;
  if (pthread_create(&th, NULL, partner, p) != 0) {
    free(v);
    return -1;
  }
  int t = 0, prev = -1;
  int64_t first = 0; /* when the partner first answered */
  for (int k = 0; k < TRIALS; k++) {
    int64_t t0 = tutti__now_ns(), end = t0 + TRIAL_NS, now = t0;
    if (first && t0 > first + BUDGET_NS) break;
    int64_t budget = first + BUDGET_NS > end ? first + BUDGET_NS : end;
    int from = nv;
    int done = 0;
    while (done < rounds && now < end) {
      atomic_store_explicit(&p->turn, t + 1, memory_order_release);
      if (mode == MODE_FUTEX) futex_wake(&p->turn);
      /* Wait for the partner's answer t + 2, giving up at the deadline. */
      for (unsigned i = 1; atomic_load_explicit(&p->turn, memory_order_acquire) != t + 2; i++) {
        if (mode == MODE_FUTEX) futex_wait(&p->turn, t + 1);
        else if (i & 63) continue;
        else sched_yield();
        if (tutti__now_ns() > (first ? budget + STALL_NS : t0 + GIVE_UP_NS)) goto out;
      }
      t += 2;
      int64_t back = tutti__now_ns();
      if (!first) {
        first = back;
        budget = first + BUDGET_NS > end ? first + BUDGET_NS : end;
      }
      if (mode == MODE_WRITE) {
        memcpy(p->dst, p->buf, p->buf_bytes);
        double c = (double)(tutti__now_ns() - back) / 1e9;
        if (p->copy_s < 0 || c < p->copy_s) p->copy_s = c;
      }
      /* Keep every sample while there is room, then every fourth. */
      if (nv < MAX_SAMPLES && (nv < MAX_SAMPLES / 2 || !(done & 3)))
        v[nv++] = (double)(back - now) / 1e9;
      done++;
      now = tutti__now_ns();
    }
    if (stable(v, prev, from, nv)) break;
    prev = from;
  }
out:
  atomic_store(&p->stop, 1);
  atomic_fetch_add(&p->turn, 2); /* wakes a partner asleep on the futex */
  futex_wake(&p->turn);
  pthread_join(th, NULL);
  double med = median(v, nv);
  free(v);
  return med;
}

int tutti__measure_other_cpu(void) {
  cpu_set_t set;
  int here = sched_getcpu();
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 2) {
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &set) && c != here) return c;
    return -1;
  }
  /* A process bound to one CPU (tutti-run --bind-to core, mpirun's binding): the partner
   * thread may still be pinned to another online CPU (where the cgroup refuses it, it stays
   * here, and the figures it times there are dropped as slower than a scheduler tick). Left
   * on this CPU, the hand-off measured 0.045 us, an L1 round trip, not two cores'. */
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  for (int c = 0; c < online && c < CPU_SETSIZE; c++)
    if (c != here) return c;
  return -1;
}

int tutti__measure_threads(tutti_model_t *m) {
  pair_t *p = aligned_alloc(64, sizeof *p);
  if (!p) return -1;
  memset(p, 0, sizeof *p);
  p->cpu = tutti__measure_other_cpu();
  size_t l2 = m->l2_bytes ? m->l2_bytes : (size_t)512 << 10;
  p->buf_bytes = l2 / 8 < ((size_t)16 << 10) ? (size_t)16 << 10 : l2 / 8 > ((size_t)64 << 10)
                                                                     ? (size_t)64 << 10
                                                                     : l2 / 8;
  p->buf_bytes = (p->buf_bytes + 4095) & ~(size_t)4095; /* aligned_alloc's rule */
  /* Page-aligned: two heap blocks a few bytes past a multiple of 4 KiB apart make every load
   * of the copy alias a store just made (4K aliasing), which read 1.9 GB/s here where the
   * cross-core read runs at 10-11, and made one-shot look 4x too slow to the tuner. */
  p->buf = aligned_alloc(4096, p->buf_bytes);
  p->dst = aligned_alloc(4096, p->buf_bytes);
  int ok = -1;
  if (p->buf && p->dst) {
    memset(p->dst, 0, p->buf_bytes);
    /* A hand-off or wake-up slower than a scheduler tick measured the scheduler (the partner
     * was not running), not the machine: such a figure is dropped for the fallback. */
    double rt = run_pair(p, MODE_SPIN, 2000);
    if (rt > 0 && rt / 2 < 1e-3) {
      m->handoff_s = rt / 2;
      ok = 0;
    }
    rt = run_pair(p, MODE_FUTEX, 200);
    if (rt > 0 && rt / 2 < 1e-3) m->wake_s = rt / 2;
    if (run_pair(p, MODE_WRITE, 20) > 0 && p->copy_s > 0)
      m->xcore_bps = (double)p->buf_bytes / p->copy_s;
  }
  free(p->buf);
  free(p->dst);
  free(p);
  return ok;
}

/* ---- TCP over loopback --------------------------------------------------------------- */

typedef struct echo {
  int fd;
  size_t stream_bytes; /* after the ping-pongs: bytes to read before answering one byte */
} echo_t;

static int full_io(int fd, char *buf, size_t len, int out) {
  while (len) {
    ssize_t k = out ? send(fd, buf, len, MSG_NOSIGNAL) : recv(fd, buf, len, 0);
    if (k <= 0) return -1;
    buf += k;
    len -= (size_t)k;
  }
  return 0;
}

/* Echoes 8-byte pings until a zero-filled one, then reads streams and acknowledges each. */
static void *echo_main(void *arg) {
  echo_t *e = arg;
  char b[8], *big = malloc(e->stream_bytes);
  for (;;) {
    if (full_io(e->fd, b, 8, 0) || full_io(e->fd, b, 8, 1)) goto out;
    if (!memcmp(b, "\0\0\0\0\0\0\0\0", 8)) break;
  }
  while (big && !full_io(e->fd, big, e->stream_bytes, 0) && !full_io(e->fd, b, 1, 1)) {
  }
out:
  free(big);
  return NULL;
}

static int loopback_pair(int *a, int *b) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof sa;
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  *a = *b = -1;
  if (l < 0) return -1;
  if (bind(l, (struct sockaddr *)&sa, sizeof sa) || listen(l, 1) ||
      getsockname(l, (struct sockaddr *)&sa, &sl))
    goto fail;
  *a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (*a < 0 || connect(*a, (struct sockaddr *)&sa, sizeof sa)) goto fail;
  *b = accept(l, NULL, NULL);
  if (*b < 0) goto fail;
  setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  /* A peer that vanished must not hang the measurement. */
  struct timeval tv = {1, 0};
  setsockopt(*a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(*b, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  close(l);
  return 0;
fail:
  close(l);
  if (*a >= 0) close(*a);
  *a = -1;
  return -1;
}

int tutti__measure_tcp(tutti_model_t *m) {
  int a, b;
  if (loopback_pair(&a, &b)) return -1;
  echo_t e = {b, (size_t)1 << 20};
  pthread_t th;
  char *big = malloc(e.stream_bytes);
  int ok = -1;
  if (!big || pthread_create(&th, NULL, echo_main, &e) != 0) {
    free(big);
    close(a);
    close(b);
    return -1;
  }
  memset(big, 1, e.stream_bytes);
  char ping[8] = "tutti!!";
  double v[TRIALS * 50];
  int nv = 0, prev = -1;
  for (int k = 0; k < TRIALS; k++) {
    int64_t t0 = tutti__now_ns(), now = t0;
    int from = nv;
    for (int done = 0; done < 50 && now < t0 + TRIAL_NS; done++) {
      if (full_io(a, ping, 8, 1) || full_io(a, ping, 8, 0)) goto stop;
      int64_t back = tutti__now_ns();
      v[nv++] = (double)(back - now) / 1e9 / 2;
      now = back;
    }
    if (stable(v, prev, from, nv)) break;
    prev = from;
  }
  m->tcp_alpha_s = median(v, nv);
  memset(ping, 0, sizeof ping);
  if (full_io(a, ping, 8, 1) || full_io(a, ping, 8, 0)) goto stop;
  double best = -1;
  for (int k = 0; k < 2; k++) {
    int64_t t0 = tutti__now_ns();
    if (full_io(a, big, e.stream_bytes, 1) || full_io(a, ping, 1, 0)) goto stop;
    double s = (double)(tutti__now_ns() - t0) / 1e9;
    if (best < 0 || s < best) best = s;
  }
  m->tcp_bps = (double)e.stream_bytes / best;
  ok = 0;
stop:
  shutdown(a, SHUT_RDWR);
  pthread_join(th, NULL);
  close(a);
  close(b);
  free(big);
  return ok;
}
