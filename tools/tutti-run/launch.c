/*
 * Starting ranks: free ports for the rendezvous, the job secret, and fork + exec of one rank
 * with the environment tutti_comm_init_env() and torch.distributed's env:// init read.
 */
#include "run.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Binds a socket to 127.0.0.1 on a port the kernel picks and returns it with *port set, or -1. */
static int bind_any_port(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

int launch_pick_ports(int *tutti_port, int *master_port) {
  /* Both sockets stay bound until both ports are read, so the two ports differ. Rank 0 binds
   * them again a moment later; a port taken by someone else in between makes the job fail
   * at rendezvous, the same window torchrun's --master-port=0 has. */
  int a = bind_any_port(tutti_port);
  int b = a >= 0 ? bind_any_port(master_port) : -1;
  int e = errno;
  if (a >= 0)
    close(a);
  if (b >= 0)
    close(b);
  if (b < 0) {
    fprintf(stderr, "tutti-run: cannot find a free TCP port on 127.0.0.1: %s\n", strerror(e));
    return -1;
  }
  return 0;
}

int launch_make_secret(char secret[65]) {
  unsigned char key[32];
  size_t got = 0;
  while (got < sizeof(key)) {
    ssize_t n = getrandom(key + got, sizeof(key) - got, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      fprintf(stderr, "tutti-run: cannot make a job secret: getrandom: %s\n", strerror(errno));
      return -1;
    }
    got += (size_t)n;
  }
  for (size_t i = 0; i < sizeof(key); i++)
    snprintf(secret + 2 * i, 3, "%02x", key[i]);
  memset(key, 0, sizeof(key));
  return 0;
}

int launch_pick_cpus(int nranks, int **cpus) {
  cpu_set_t mine;
  *cpus = NULL;
  if (sched_getaffinity(0, sizeof mine, &mine) != 0 || CPU_COUNT(&mine) < nranks)
    return 0;
  int *v = malloc((size_t)nranks * sizeof *v), n = 0;
  if (!v)
    return 0;
  for (int c = 0; c < CPU_SETSIZE && n < nranks; c++)
    if (CPU_ISSET(c, &mine))
      v[n++] = c;
  *cpus = v;
  return n;
}

/* Sets name to the decimal value v; returns 0 or -1 (errno set). */
static int setenv_int(const char *name, int v) {
  char s[16];
  snprintf(s, sizeof(s), "%d", v);
  return setenv(name, s, 1);
}

/* Exports the job's variables for rank `rank`; returns 0 or -1 (errno set). */
static int set_rank_env(const struct launch_spec *spec, int rank) {
  char addr[32];
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", spec->tutti_port);
  if (setenv_int("TUTTI_RANK", rank) || setenv_int("TUTTI_WORLD_SIZE", spec->nranks) ||
      setenv("TUTTI_ADDR", addr, 1))
    return -1;
  /* Every connection of the job proves this secret; a stranger on the ports cannot. */
  if (setenv("TUTTI_SECRET", spec->secret, 1))
    return -1;
  /* torchrun's names, so `tutti-run -n 4 python train.py` works with init_method="env://". */
  if (setenv_int("RANK", rank) || setenv_int("LOCAL_RANK", rank) ||
      setenv_int("WORLD_SIZE", spec->nranks) || setenv_int("LOCAL_WORLD_SIZE", spec->nranks) ||
      setenv("MASTER_ADDR", "127.0.0.1", 1) || setenv_int("MASTER_PORT", spec->master_port))
    return -1;
  return 0;
}

/* The child's side of launch_rank: never returns. Reports a failure to exec as an errno value
 * written to status_fd, which the parent reads; status_fd is close-on-exec, so a successful
 * exec shows up in the parent as end of file. */
static void run_child(const struct launch_spec *spec, int rank, int out_fd, int err_fd,
                      int status_fd) {
  /* Our own process group, so stopping a rank also stops whatever it started (sh -c 'a; b'). */
  setpgid(0, 0);
  /* stdin is /dev/null: N ranks reading one input would race for it, and a rank outside the
   * terminal's foreground group that read the terminal would just be stopped (SIGTTIN). */
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int err = 0;
  if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0 ||
      set_rank_env(spec, rank) != 0) {
    err = errno;
  } else {
    /* --bind-to core: one CPU a rank, as mpirun binds to cores (2 ranks on a 2-CPU VM, 8-byte
     * all-reduce, 14 runs each: bound 0.20-0.30 us a call in every run; unbound 0.21-5.2).
     * A refusal (a CPU taken away since) leaves the rank unbound, nothing more. */
    if (spec->ncpus > rank) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(spec->cpus[rank], &one);
      sched_setaffinity(0, sizeof one, &one);
    }
    /* Hand PROGRAM the signal state we were started with: exec resets caught signals to
     * default but would keep our blocked mask and our ignored SIGPIPE. */
    sigaction(SIGPIPE, &spec->child_sigpipe, NULL);
    sigprocmask(SIG_SETMASK, &spec->child_mask, NULL);
    execvp(spec->argv[0], spec->argv);
    err = errno;
  }
  ssize_t unused = write(status_fd, &err, sizeof(err));
  (void)unused;
  _exit(127);
}

/* Reads the child's exec report: 0 once it exec'd, else the errno of what failed. */
static int read_exec_status(int fd) {
  int err = 0;
  ssize_t n;
  do
    n = read(fd, &err, sizeof(err));
  while (n < 0 && errno == EINTR);
  return n == (ssize_t)sizeof(err) ? err : 0;
}

int launch_rank(const struct launch_spec *spec, int rank, pid_t *pid, struct relay *out,
                struct relay *err) {
  /* Every descriptor is close-on-exec, so no rank inherits another rank's pipe ends; if one
   * did, that pipe would never reach end of file while the other rank lived. */
  int o[2] = {-1, -1}, e[2] = {-1, -1}, s[2] = {-1, -1};
  if (pipe2(o, O_CLOEXEC) != 0 || pipe2(e, O_CLOEXEC) != 0 || pipe2(s, O_CLOEXEC) != 0) {
    fprintf(stderr, "tutti-run: cannot create pipes for rank %d: %s\n", rank, strerror(errno));
    for (int i = 0; i < 2; i++) {
      if (o[i] >= 0)
        close(o[i]);
      if (e[i] >= 0)
        close(e[i]);
      if (s[i] >= 0)
        close(s[i]);
    }
    return 1;
  }
  pid_t p = fork();
  if (p == 0) {
    close(o[0]);
    close(e[0]);
    close(s[0]);
    run_child(spec, rank, o[1], e[1], s[1]);
  }
  int fork_errno = errno;
  close(o[1]);
  close(e[1]);
  close(s[1]);
  if (p < 0) {
    fprintf(stderr, "tutti-run: cannot fork rank %d: %s\n", rank, strerror(fork_errno));
    close(o[0]);
    close(e[0]);
    close(s[0]);
    return 1;
  }
  /* Also set from here, so the group exists before anyone signals it (the usual race). */
  setpgid(p, p);
  out->fd = o[0];
  err->fd = e[0];
  fcntl(o[0], F_SETFL, fcntl(o[0], F_GETFL) | O_NONBLOCK);
  fcntl(e[0], F_SETFL, fcntl(e[0], F_GETFL) | O_NONBLOCK);
  int exec_errno = read_exec_status(s[0]);
  close(s[0]);
  *pid = p;
  if (exec_errno == 0)
    return 0;
  fprintf(stderr, "tutti-run: cannot run '%s' as rank %d: %s%s\n", spec->argv[0], rank,
          strerror(exec_errno),
          exec_errno == ENOENT && !strchr(spec->argv[0], '/') ? " (not found in PATH)" : "");
  while (waitpid(p, NULL, 0) < 0 && errno == EINTR) {
  }
  relay_close(out);
  relay_close(err);
  return 127;
}
