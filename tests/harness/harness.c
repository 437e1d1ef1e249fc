#include "harness.h"

#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HARNESS_MAX_TESTS 512

static struct {
  const char *name;
  harness_fn fn;
} tests[HARNESS_MAX_TESTS];
static int ntests;

void harness_register(const char *name, harness_fn fn) {
  if (ntests == HARNESS_MAX_TESTS) {
    fprintf(stderr, "harness: too many tests\n");
    exit(2);
  }
  tests[ntests].name = name;
  tests[ntests].fn = fn;
  ntests++;
}

void harness_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "  %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  _exit(1);
}

/* Runs one test in a child; returns 1 if it passed. The child is killed at the timeout. */
static int run_one(int i, int timeout_s) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    return 0;
  }
  if (pid == 0) {
    alarm((unsigned)timeout_s); /* SIGALRM's default action kills the child: a hang fails. */
    tests[i].fn();
    _exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 1;
  if (WIFSIGNALED(status))
    fprintf(stderr, "  killed by signal %d%s\n", WTERMSIG(status),
            WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
  return 0;
}

int harness_main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  const char *t = getenv("HARNESS_TIMEOUT");
  int timeout_s = t ? atoi(t) : 60;
  int passed = 0, failed = 0;
  for (int i = 0; i < ntests; i++) {
    if (filter && !strstr(tests[i].name, filter)) continue;
    int ok = run_one(i, timeout_s);
    printf("%s %s\n", ok ? "ok  " : "FAIL", tests[i].name);
    if (ok)
      passed++;
    else
      failed++;
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
