/*
 * tutti-run -n N [--timeout SEC] [--tolerate-signal SIG] [--bind-to core|none] [--] PROGRAM
 *           [ARGS...]
 *
 * Starts N local ranks of PROGRAM with the rendezvous environment set (TUTTI_* and torchrun's
 * names), relays their output line by line with a "[rank] " prefix, and makes the job end as a
 * whole: the first rank to fail (non-zero exit or death by a signal) gets the others stopped
 * (SIGTERM, SIGKILL 2 s later), so a collective waiting on a dead peer never hangs the job.
 *
 * Exit status: 0 only if every rank exited 0; else the first failure's status (128+signal for a
 * signal), 124 on --timeout, 127 if PROGRAM cannot be executed, 128+signal if tutti-run itself
 * was interrupted or terminated, 2 for bad usage. --tolerate-signal SIG (a number) is for
 * fault-injection tests: a rank killed by SIG from outside is reported, but it neither stops
 * the others nor fails the job, so the survivors can check how they cope.
 *
 * One thread, one loop: ppoll() on every rank's pipes with SIGCHLD/SIGINT/SIGTERM/SIGHUP
 * blocked except inside ppoll, so a signal can never slip in between a check and the wait.
 */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long a rank gets between SIGTERM and SIGKILL. */
#define GRACE_S 2.0
/* How long, once every rank has exited, we wait for pipes still held open by processes the
 * ranks left behind, before killing those and then giving up on their output. */
#define LEFTOVER_GRACE_S 1.0
/* Reads per pipe per wakeup, so one chatty rank cannot starve the others' output. */
#define READS_PER_WAKEUP 4
#define MAX_RANKS 4096

struct rank_proc {
  pid_t pid;     /* 0 if never started */
  int running;   /* started and not yet reaped */
  int signalled; /* we sent it a signal, so its death by a signal is no news */
  struct relay out, err;
};

static struct {
  int nranks;
  struct rank_proc *ranks;
  int exit_code;       /* -1 until the first reason for a non-zero exit */
  int stopping;        /* SIGTERM sent (or forwarded); SIGKILL follows at kill_at */
  int killed;          /* SIGKILL sent */
  double kill_at;
  double timeout_s;    /* 0: none */
  double timeout_at;
  int tolerate_sig;    /* 0: none; see --tolerate-signal */
  int bind;            /* --bind-to: 1 core, 0 none (default) */
  int interrupts;      /* SIGINTs received so far */
  int leftover_phase;  /* 0; 1 waiting for leftovers' pipes; 2 leftovers killed */
  double leftover_at;
} job = {.exit_code = -1};

static volatile sig_atomic_t got_int, got_term, got_hup;

static void on_signal(int sig) {
  if (sig == SIGINT)
    got_int++;
  else if (sig == SIGTERM)
    got_term++;
  else if (sig == SIGHUP)
    got_hup++;
  /* SIGCHLD needs no flag: it only has to wake ppoll, and we reap on every wakeup. */
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Prints "tutti-run: <message>\n" to stderr in one write, so it never splits a rank's line. */
static void say(const char *fmt, ...) {
  char msg[512];
  int n = snprintf(msg, sizeof(msg), "tutti-run: ");
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(msg + n, sizeof(msg) - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof(msg) - 2)
    n = (int)sizeof(msg) - 2;
  msg[n++] = '\n';
  relay_write_all(2, msg, (size_t)n);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: tutti-run -n N [--timeout SEC] [--tolerate-signal SIG] [--bind-to core|none]\n"
          "                 [--] PROGRAM [ARGS...]\n"
          "Starts N local ranks of PROGRAM (looked up in PATH) with TUTTI_RANK, TUTTI_WORLD_SIZE,\n"
          "TUTTI_ADDR and torchrun's RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR,\n"
          "MASTER_PORT set, and TUTTI_SECRET to a random secret of this job that every\n"
          "connection between its ranks must prove; prefixes each output line with \"[rank] \".\n"
          "If a rank fails, the others are stopped and tutti-run exits with its status;\n"
          "--timeout SEC stops the job after SEC seconds (exit 124).\n"
          "--tolerate-signal SIG (a number): a rank killed by signal SIG from outside is\n"
          "reported but neither stops the others nor fails the job (fault-injection tests).\n"
          "--bind-to core: rank r runs on the r-th CPU tutti-run may use, as mpirun binds,\n"
          "where N > 1 and there are at least N of them (else the ranks are not bound);\n"
          "--bind-to none (default) leaves placement to the scheduler.\n");
}

static void bad_usage(const char *fmt, const char *val) {
  fprintf(stderr, "tutti-run: ");
  fprintf(stderr, fmt, val);
  fprintf(stderr, "\n");
  usage(stderr);
  exit(2);
}

/* Parses the command line into job and *prog; exits 2 on bad usage. getopt_long with a
 * leading '+': options end at PROGRAM, whose own options are left alone. */
static void parse_args(int argc, char **argv, char ***prog) {
  enum { O_TIMEOUT = 256, O_TOLERATE, O_BIND };
  static const struct option longopts[] = {
      {"np", required_argument, 0, 'n'},
      {"timeout", required_argument, 0, O_TIMEOUT},
      {"tolerate-signal", required_argument, 0, O_TOLERATE},
      {"bind-to", required_argument, 0, O_BIND},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0},
  };
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+:n:h", longopts, NULL)) != -1) {
    char *end;
    errno = 0;
    switch (c) {
    case 'h':
      usage(stdout);
      exit(0);
    case 'n': {
      long n = strtol(optarg, &end, 10);
      if (errno || end == optarg || *end || n < 1 || n > MAX_RANKS) {
        char msg[96];
        snprintf(msg, sizeof msg, "-n wants a number of ranks from 1 to %d, not '%%s'", MAX_RANKS);
        bad_usage(msg, optarg);
      }
      job.nranks = (int)n;
      break;
    }
    case O_TOLERATE: {
      long sig = strtol(optarg, &end, 10);
      if (errno || end == optarg || *end || sig < 1 || sig >= NSIG)
        bad_usage("--tolerate-signal wants a signal number, not '%s'", optarg);
      job.tolerate_sig = (int)sig;
      break;
    }
    case O_BIND:
      if (strcmp(optarg, "core") && strcmp(optarg, "none"))
        bad_usage("--bind-to wants core or none, not '%s'", optarg);
      job.bind = !strcmp(optarg, "core");
      break;
    case O_TIMEOUT: {
      double t = strtod(optarg, &end);
      if (errno || end == optarg || *end || !isfinite(t) || t <= 0)
        bad_usage("--timeout wants a positive number of seconds, not '%s'", optarg);
      job.timeout_s = t;
      break;
    }
    case ':':
      bad_usage("%s needs a value", argv[optind - 1]);
      break;
    default:
      bad_usage("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (job.nranks < 1 || optind >= argc)
    bad_usage("%s", job.nranks < 1 ? "missing -n N" : "missing PROGRAM");
  *prog = argv + optind;
}

/* Sends sig to a running rank: to its whole process group while it still leads one, so what it
 * started goes too; to the rank alone if it moved itself elsewhere (setsid, setpgid). */
static void signal_rank(struct rank_proc *r, int sig) {
  if (!r->running)
    return;
  r->signalled = 1;
  if (getpgid(r->pid) == r->pid)
    kill(-r->pid, sig);
  else
    kill(r->pid, sig);
}

/* Starts stopping every running rank: sends sig (0: it was already sent) and arms SIGKILL. */
static void stop_all(int sig) {
  if (job.stopping)
    return;
  job.stopping = 1;
  job.kill_at = now_s() + GRACE_S;
  for (int i = 0; i < job.nranks; i++)
    if (sig)
      signal_rank(&job.ranks[i], sig);
}

static int any_running(void) {
  for (int i = 0; i < job.nranks; i++)
    if (job.ranks[i].running)
      return 1;
  return 0;
}

/* Records how rank i ended; a failure prints why and stops the rest of the job. */
static void on_rank_exit(int i, int status) {
  struct rank_proc *r = &job.ranks[i];
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return;
  int code;
  if (WIFEXITED(status)) {
    code = WEXITSTATUS(status);
    say("rank %d (pid %d) exited with status %d", i, (int)r->pid, code);
  } else {
    int sig = WTERMSIG(status);
    code = 128 + sig;
    if (sig == job.tolerate_sig && !r->signalled) {
      say("rank %d (pid %d) killed by signal %d (%s), tolerated (--tolerate-signal); the "
          "others go on", i, (int)r->pid, sig, strsignal(sig));
      return;
    }
    /* A rank we signalled dying of it is expected, not news. */
    if (!r->signalled)
      say("rank %d (pid %d) killed by signal %d (%s)%s", i, (int)r->pid, sig, strsignal(sig),
          WCOREDUMP(status) ? ", core dumped" : "");
  }
  if (job.exit_code < 0)
    job.exit_code = code;
  if (!job.stopping) {
    if (any_running())
      say("stopping the other ranks");
    stop_all(SIGTERM);
  }
}

/* Reaps every rank that has ended, first copying out all it wrote before it ended. */
static void reap(void) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR)
      continue;
    if (pid <= 0)
      return;
    for (int i = 0; i < job.nranks; i++) {
      struct rank_proc *r = &job.ranks[i];
      if (r->running && r->pid == pid) {
        relay_pump(&r->out, 0);
        relay_pump(&r->err, 0);
        r->running = 0;
        on_rank_exit(i, status);
        break;
      }
    }
  }
}

/* Acts on the signals tutti-run received since the last call. */
static void handle_signals(void) {
  int sigs[] = {SIGTERM, SIGHUP};
  int counts[] = {got_term, got_hup};
  got_term = got_hup = 0;
  for (int k = 0; k < 2; k++) {
    if (!counts[k])
      continue;
    /* Terminated from outside: pass it on, and make sure the job really ends. */
    say("received %s; passing it to every rank", strsignal(sigs[k]));
    if (job.exit_code < 0)
      job.exit_code = 128 + sigs[k];
    for (int i = 0; i < job.nranks; i++)
      signal_rank(&job.ranks[i], sigs[k]);
    stop_all(0);
  }
  if (got_int) {
    got_int = 0;
    if (job.exit_code < 0)
      job.exit_code = 128 + SIGINT;
    /* The first ^C goes to the ranks, which may want to exit cleanly; a second one stops
     * them for good, as if a rank had failed. */
    if (++job.interrupts == 1 && !job.stopping) {
      say("interrupted; passing SIGINT to every rank (again to stop them)");
      for (int i = 0; i < job.nranks; i++)
        signal_rank(&job.ranks[i], SIGINT);
    } else if (!job.stopping) {
      say("interrupted again; stopping every rank");
      stop_all(SIGTERM);
    }
  }
}

/* Fires whichever deadline has passed. */
static void handle_timers(void) {
  double now = now_s();
  if (job.timeout_at > 0 && !job.stopping && now >= job.timeout_at) {
    say("timed out after %g s; stopping every rank", job.timeout_s);
    job.exit_code = 124;
    stop_all(SIGTERM);
  }
  if (job.stopping && !job.killed && now >= job.kill_at) {
    job.killed = 1;
    for (int i = 0; i < job.nranks; i++) {
      struct rank_proc *r = &job.ranks[i];
      if (r->running) {
        say("rank %d (pid %d) still running %g s after SIGTERM; sending SIGKILL", i,
            (int)r->pid, GRACE_S);
        signal_rank(r, SIGKILL);
      }
    }
  }
}

/* Once every rank has exited, a pipe still open means a process the rank left behind holds
 * it. Wait a little for it, then kill the rank's process group, then stop reading. Returns 1
 * when the job is over. */
static int handle_leftovers(void) {
  int open = 0;
  for (int i = 0; i < job.nranks; i++)
    open |= job.ranks[i].out.fd >= 0 || job.ranks[i].err.fd >= 0;
  if (!open)
    return 1;
  double now = now_s();
  if (job.leftover_phase == 0) {
    job.leftover_phase = 1;
    job.leftover_at = now + LEFTOVER_GRACE_S;
  } else if (now >= job.leftover_at && job.leftover_phase == 1) {
    job.leftover_phase = 2;
    job.leftover_at = now + LEFTOVER_GRACE_S;
    for (int i = 0; i < job.nranks; i++) {
      struct rank_proc *r = &job.ranks[i];
      if (r->out.fd >= 0 || r->err.fd >= 0) {
        say("rank %d exited but left processes holding its output; killing them", i);
        kill(-r->pid, SIGKILL); /* the group outlives its reaped leader while members remain */
      }
    }
  } else if (now >= job.leftover_at) {
    for (int i = 0; i < job.nranks; i++) {
      relay_close(&job.ranks[i].out);
      relay_close(&job.ranks[i].err);
    }
    return 1;
  }
  return 0;
}

/* The ppoll timeout until the next deadline, or NULL (wait for a pipe or a signal). */
static struct timespec *next_wait(struct timespec *ts, int all_exited) {
  double at = 0;
  if (all_exited)
    at = job.leftover_at;
  else if (job.stopping && !job.killed)
    at = job.kill_at;
  else if (!job.stopping && job.timeout_at > 0)
    at = job.timeout_at;
  if (at <= 0)
    return NULL;
  double d = at - now_s();
  if (d < 0)
    d = 0;
  ts->tv_sec = (time_t)d;
  ts->tv_nsec = (long)((d - (double)ts->tv_sec) * 1e9);
  return ts;
}

/* Runs until every rank has exited and its output is relayed. */
static void event_loop(const sigset_t *wait_mask) {
  struct pollfd *pfd = calloc((size_t)job.nranks * 2, sizeof(*pfd));
  struct relay **who = calloc((size_t)job.nranks * 2, sizeof(*who));
  if (!pfd || !who) {
    say("out of memory");
    exit(1);
  }
  for (;;) {
    reap();
    handle_signals();
    handle_timers();
    int all_exited = !any_running();
    if (all_exited && handle_leftovers())
      break;
    nfds_t n = 0;
    for (int i = 0; i < job.nranks; i++) {
      struct relay *rs[2] = {&job.ranks[i].out, &job.ranks[i].err};
      for (int k = 0; k < 2; k++) {
        if (rs[k]->fd >= 0) {
          pfd[n] = (struct pollfd){.fd = rs[k]->fd, .events = POLLIN};
          who[n++] = rs[k];
        }
      }
    }
    struct timespec ts;
    int rc = ppoll(pfd, n, next_wait(&ts, all_exited), wait_mask);
    if (rc < 0 && errno != EINTR) {
      say("poll failed: %s", strerror(errno));
      exit(1);
    }
    for (nfds_t k = 0; rc > 0 && k < n; k++)
      if (pfd[k].revents)
        relay_pump(who[k], READS_PER_WAKEUP);
  }
  free(pfd);
  free(who);
}

/* Makes sure fds 0, 1 and 2 are open, so no pipe we create lands on one of them. */
static void open_std_fds(void) {
  for (;;) {
    int fd = open("/dev/null", O_RDWR);
    if (fd < 0)
      return;
    if (fd > 2) {
      close(fd);
      return;
    }
  }
}

int main(int argc, char **argv) {
  struct launch_spec spec = {0};
  parse_args(argc, argv, &spec.argv);
  spec.nranks = job.nranks;
  /* A single rank has no peer to keep apart from; binding it would only stack unrelated
   * one-rank jobs on the first CPU. */
  if (job.bind && job.nranks > 1)
    spec.ncpus = launch_pick_cpus(job.nranks, &spec.cpus);
  open_std_fds();

  /* Our signals stay blocked except inside ppoll; see the top of the file. */
  sigset_t blocked;
  sigemptyset(&blocked);
  int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};
  struct sigaction sa = {.sa_handler = on_signal};
  sigemptyset(&sa.sa_mask);
  for (int k = 0; k < 4; k++) {
    sigaddset(&blocked, sigs[k]);
    sigaction(sigs[k], &sa, NULL);
  }
  sigprocmask(SIG_BLOCK, &blocked, &spec.child_mask);
  sigset_t wait_mask = spec.child_mask;
  for (int k = 0; k < 4; k++)
    sigdelset(&wait_mask, sigs[k]);
  /* A reader of our output that goes away must not kill us and orphan the ranks. */
  struct sigaction ign = {.sa_handler = SIG_IGN};
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, &spec.child_sigpipe);

  if (launch_pick_ports(&spec.tutti_port, &spec.master_port) != 0 ||
      launch_make_secret(spec.secret) != 0)
    return 1;
  job.ranks = calloc((size_t)job.nranks, sizeof(*job.ranks));
  if (!job.ranks) {
    say("out of memory");
    return 1;
  }
  for (int i = 0; i < job.nranks; i++) {
    relay_init(&job.ranks[i].out, i, 1);
    relay_init(&job.ranks[i].err, i, 2);
  }
  if (job.timeout_s > 0)
    job.timeout_at = now_s() + job.timeout_s;

  for (int i = 0; i < job.nranks; i++) {
    struct rank_proc *r = &job.ranks[i];
    int rc = launch_rank(&spec, i, &r->pid, &r->out, &r->err);
    if (rc != 0) {
      /* Nothing useful can run without every rank: stop those already started. */
      job.exit_code = rc;
      if (any_running())
        say("stopping the ranks already started");
      stop_all(SIGTERM);
      break;
    }
    r->running = 1;
  }
  event_loop(&wait_mask);

  if (job.exit_code >= 0)
    return job.exit_code > 255 ? 255 : job.exit_code;
  return 0;
}
