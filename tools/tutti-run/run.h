/*
 * tutti-run internals: the pieces main() in tutti-run.c puts together.
 *
 *   relay.c   copies one rank's stdout or stderr to ours, a whole line at a time, "[i] "-prefixed.
 *   launch.c  picks free ports and the job secret, and starts one rank (fork, environment,
 *             exec).
 */
#ifndef TUTTI_RUN_H
#define TUTTI_RUN_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

/* One captured stream of one rank: the pipe we read and the bytes of a line not yet finished. */
struct relay {
  int fd;          /* read end of the pipe, non-blocking; -1 when closed (or never opened) */
  int out_fd;      /* where its lines go: 1 or 2 */
  char prefix[24]; /* "[rank] " */
  size_t prefix_len;
  char *buf; /* bytes read but not yet written (an unfinished line) */
  size_t len, cap;
};

/* Makes r an idle relay that prints to out_fd with rank's prefix; fd stays -1 until opened. */
void relay_init(struct relay *r, int rank, int out_fd);

/* Reads what the pipe holds now (at most max_reads reads, or until it would block if
 * max_reads <= 0) and writes every complete line. On end of file or a read error it prints
 * the unfinished line (with a newline added) and closes the pipe. */
void relay_pump(struct relay *r, int max_reads);

/* Prints the unfinished line, if any, and closes the pipe: used when we stop waiting for EOF. */
void relay_close(struct relay *r);

/* Writes all of msg to fd (1 or 2), unless an earlier write there failed (reader gone). */
void relay_write_all(int fd, const char *msg, size_t len);

/* What launch_rank needs to know about the job. */
struct launch_spec {
  int nranks;
  int tutti_port;  /* TUTTI_ADDR=127.0.0.1:tutti_port */
  int master_port; /* MASTER_PORT for torch's store */
  char secret[65]; /* TUTTI_SECRET: 64 hex digits, this job's alone */
  char **argv;     /* PROGRAM ARGS..., NULL-terminated */
  /* --bind-to core: rank r runs on cpus[r] alone; ncpus 0: no binding (--bind-to none, or
   * more ranks than the CPUs tutti-run may use). */
  int ncpus;
  int *cpus;
  sigset_t child_mask;            /* the signal mask tutti-run was started with */
  struct sigaction child_sigpipe; /* the SIGPIPE disposition tutti-run was started with */
};

/* Picks two distinct free TCP ports on 127.0.0.1. Returns 0, or -1 after printing why. */
int launch_pick_ports(int *tutti_port, int *master_port);

/* Writes a fresh random 256-bit job secret into secret as 64 hex digits. Returns 0, or -1
 * after printing why. */
int launch_make_secret(char secret[65]);

/* The CPUs for --bind-to core: the first nranks of those this process may run on, in *cpus
 * (malloc'd); returns nranks, or 0 (and NULL) where there are fewer CPUs than ranks. */
int launch_pick_cpus(int nranks, int **cpus);

/* Starts rank `rank` of the job in its own process group, with stdout and stderr piped into
 * out->fd and err->fd, and waits until it has exec'd PROGRAM. Returns 0 with *pid set; 127 when
 * PROGRAM could not be executed (the child has been reaped, a message printed); 1 when a pipe
 * or fork failed (message printed). */
int launch_rank(const struct launch_spec *spec, int rank, pid_t *pid, struct relay *out,
                struct relay *err);

#endif /* TUTTI_RUN_H */
