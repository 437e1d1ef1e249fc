/*
 * The per-user cache of this host's measurement: one file, keyed by what would change the
 * numbers (CPU model, cache sizes, kernel release, boot), so a machine is measured once per
 * boot and every later job starts with zero measuring. A file that does not parse or belongs
 * to another key is ignored (with a log line) and replaced by a new measurement; a cache
 * that cannot be written costs the next job its measurement, nothing more.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "core/internal.h"
#include "tune/model.h"

static void cpu_model(char *buf, size_t len) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[256];
  snprintf(buf, len, "unknown");
  if (!f) return;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
      char *v = strchr(line, ':') + 1;
      v += strspn(v, " \t");
      v[strcspn(v, "\n")] = '\0';
      snprintf(buf, len, "%s", v);
      break;
    }
  fclose(f);
}

void tutti__host_key(char *buf, size_t len) {
  char cpu[128], boot[48] = "";
  struct utsname u;
  tutti_model_t m = {0};
  cpu_model(cpu, sizeof cpu);
  tutti__measure_caches(&m);
  if (uname(&u) != 0) snprintf(u.release, sizeof u.release, "unknown");
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(boot, sizeof boot, f)) boot[0] = '\0';
    boot[strcspn(boot, "\n")] = '\0';
    fclose(f);
  }
  /* measure= names what the figures mean: a cache written by a build that measured
   * differently (1: single copy from huge pages in cache) is stale. */
  snprintf(buf, len, "cpu=%s cpus=%zu l1d=%zu l2=%zu l3=%zu kernel=%s boot=%s measure=%d", cpu,
           m.cpus, m.l1d_bytes, m.l2_bytes, m.l3_bytes, u.release, boot, TUTTI_MEASURE_VERSION);
}

int tutti__host_cache_file(const char *name, char *buf, size_t len) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int k;
  if (xdg && xdg[0] == '/') k = snprintf(buf, len, "%s/tutti/%s", xdg, name);
  else if (home && home[0] == '/') k = snprintf(buf, len, "%s/.cache/tutti/%s", home, name);
  else return -1;
  return k > 0 && (size_t)k < len ? 0 : -1;
}

int tutti__host_cache_path(char *buf, size_t len) {
  return tutti__host_cache_file("machine", buf, len);
}

int tutti__host_cache_load(tutti_model_t *m) {
  char path[1024], err[320], key[512], want[512];
  if (tutti__host_cache_path(path, sizeof path)) return 0;
  char *text = tutti__table_slurp(path, err, sizeof err);
  if (!text) return 0; /* the first job on this host and boot */
  tutti_model_t t = {0};
  int ok = tutti__table_parse(text, &t, key, sizeof key, err, sizeof err) == 0;
  free(text);
  if (!ok) {
    WARN("tune", -1, "ignoring the machine cache %s (%s): measuring again", path, err);
    return 0;
  }
  tutti__host_key(want, sizeof want);
  if (strcmp(key, want)) {
    INFO("tune", -1, "the machine cache %s is for another host or boot: measuring again", path);
    return 0;
  }
  if (t.nrules) {
    WARN("tune", -1, "ignoring the machine cache %s: it holds rules (a tuning table belongs "
         "in TUTTI_TUNE_FILE)", path);
    return 0;
  }
  t.source = TUTTI_MODEL_CACHED;
  if (t.samples > 1)
    snprintf(t.origin, sizeof t.origin, "cache file %.100s, best of %zu measurements", path,
             t.samples);
  else
    snprintf(t.origin, sizeof t.origin, "cache file %.140s", path);
  *m = t;
  return 1;
}

int tutti__make_parents(char *path) {
  for (char *s = strchr(path + 1, '/'); s; s = strchr(s + 1, '/')) {
    *s = '\0';
    int bad = mkdir(path, 0700) != 0 && errno != EEXIST;
    *s = '/';
    if (bad) return -1;
  }
  return 0;
}

void tutti__host_cache_save(const tutti_model_t *m) {
  char path[1024], key[512], err[320], text[4096];
  if (tutti__host_cache_path(path, sizeof path)) return;
  tutti__host_key(key, sizeof key);
  if (tutti__table_write(m, key, text, sizeof text) < 0) return;
  if (tutti__make_parents(path) || tutti__table_store(path, text, err, sizeof err))
    INFO("tune", -1, "cannot save the machine cache %s (%s): the next job measures again",
         path, errno ? strerror(errno) : err);
}
