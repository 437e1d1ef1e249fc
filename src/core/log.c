/* Logging filtered by TUTTI_DEBUG and TUTTI_DEBUG_SUBSYS, prefixed "host:pid [rank]", to
 * stderr or to TUTTI_DEBUG_FILE (NCCL_DEBUG_FILE's syntax: %h host, %p pid, %% a percent). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"

/* Written once under pthread_once and only read afterwards: the environment is the
 * process's, so this is the one piece of state that is not per communicator. */
static struct {
  pthread_once_t once;
  int level;
  char subsys[128];
  char host[64];
  FILE *out; /* stderr, or the TUTTI_DEBUG_FILE stream (line-buffered, never closed) */
} log_state = {PTHREAD_ONCE_INIT, TUTTI_LOG_WARN, "", "", NULL};

/* TUTTI_DEBUG_FILE with %h and %p expanded; 0 when it fits. */
static int expand_path(const char *pat, char *out, size_t outlen) {
  size_t o = 0;
  for (const char *p = pat; *p; p++) {
    char piece[80];
    const char *add = piece;
    if (p[0] == '%' && p[1] == 'h') add = log_state.host, p++;
    else if (p[0] == '%' && p[1] == 'p') snprintf(piece, sizeof piece, "%d", (int)getpid()), p++;
    else if (p[0] == '%' && p[1] == '%') piece[0] = '%', piece[1] = '\0', p++;
    else piece[0] = *p, piece[1] = '\0';
    size_t n = strlen(add);
    if (o + n >= outlen) return -1;
    memcpy(out + o, add, n);
    o += n;
  }
  out[o] = '\0';
  return 0;
}

static void log_init(void) {
  const char *lvl = getenv("TUTTI_DEBUG");
  if (lvl) {
    if (!strcasecmp(lvl, "none") || !strcasecmp(lvl, "off")) log_state.level = TUTTI_LOG_NONE;
    else if (!strcasecmp(lvl, "info")) log_state.level = TUTTI_LOG_INFO;
    else if (!strcasecmp(lvl, "trace")) log_state.level = TUTTI_LOG_TRACE;
    else log_state.level = TUTTI_LOG_WARN;
  }
  const char *sub = getenv("TUTTI_DEBUG_SUBSYS");
  if (sub) snprintf(log_state.subsys, sizeof log_state.subsys, ",%s,", sub);
  if (gethostname(log_state.host, sizeof log_state.host) != 0)
    strcpy(log_state.host, "?");
  log_state.host[sizeof log_state.host - 1] = '\0';
  log_state.out = stderr;
  const char *file = getenv("TUTTI_DEBUG_FILE");
  char path[4096];
  if (file && *file) {
    FILE *f = expand_path(file, path, sizeof path) == 0 ? fopen(path, "a") : NULL;
    if (f) {
      setvbuf(f, NULL, _IOLBF, 0);
      log_state.out = f;
    } else {
      fprintf(stderr, "%s:%d tutti WARN : TUTTI_DEBUG_FILE=%s: cannot open it for appending; "
              "logging to stderr\n", log_state.host, (int)getpid(), file);
    }
  }
}

int tutti__log_enabled(int level, const char *subsys) {
  pthread_once(&log_state.once, log_init);
  if (level > log_state.level) return 0;
  if (level == TUTTI_LOG_WARN || log_state.subsys[0] == '\0' || !subsys) return 1;
  char key[40];
  snprintf(key, sizeof key, ",%s,", subsys);
  return strstr(log_state.subsys, key) != NULL;
}

void tutti__log_write(int level, const char *subsys, int rank, const char *fmt, ...) {
  static const char *names[] = {"", "WARN", "INFO", "TRACE"};
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* One fprintf per line keeps lines from different threads whole. */
  if (rank >= 0)
    fprintf(log_state.out, "%s:%d [%d] tutti %s %s: %s\n", log_state.host, (int)getpid(), rank,
            names[level], subsys ? subsys : "", msg);
  else
    fprintf(log_state.out, "%s:%d tutti %s %s: %s\n", log_state.host, (int)getpid(), names[level],
            subsys ? subsys : "", msg);
}

void tutti__log_banner(int rank, int nranks, int nlocal, const char *transport, int cma) {
  static atomic_int told;
  if (rank != 0 || !tutti__log_enabled(TUTTI_LOG_INFO, "boot") || atomic_exchange(&told, 1))
    return;
  tutti__log_write(TUTTI_LOG_INFO, "boot", rank, "tutti %s: %d ranks (%d on this host), "
                   "transport %s, single-copy reads %s", TUTTI_VERSION_STRING, nranks, nlocal,
                   transport, cma ? "on" : "off");
}

void tutti__log_trail(const char *file, int line, tutti_result_t res) {
  TRACE("trail", -1, "%s:%d -> %s", file, line, tutti_result_string(res));
}

int64_t tutti__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t tutti__coarse_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
