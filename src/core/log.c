/* Logging filtered by TUTTI_DEBUG and TUTTI_DEBUG_SUBSYS, prefixed "host:pid [rank]". */
#include <pthread.h>
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
} log_state = {PTHREAD_ONCE_INIT, TUTTI_LOG_WARN, "", ""};

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
    fprintf(stderr, "%s:%d [%d] tutti %s %s: %s\n", log_state.host, (int)getpid(), rank,
            names[level], subsys ? subsys : "", msg);
  else
    fprintf(stderr, "%s:%d tutti %s %s: %s\n", log_state.host, (int)getpid(), names[level],
            subsys ? subsys : "", msg);
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
