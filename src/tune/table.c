/*
 * The text form of a model (docs/tuning.md): a version line, then one "name value" line per
 * quantity and one "rule" line per algorithm rule; '#' starts a comment. The same text is
 * the cache file, a TUTTI_TUNE_FILE and what rank 0 sends the others at init, so one parser
 * checks all three. The parser is strict: a file it cannot read completely is refused with
 * the line and the reason, never half-applied.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "algo/algo.h"
#include "bootstrap/bootstrap.h"
#include "tune/model.h"

#define VERSION_LINE "tutti-tune-table 1"
#define MAX_LINE 512
#define MAX_FILE (64 << 10)

/* The quantities, their names in the file and the unit they are written in. */
typedef struct field {
  const char *name;
  size_t off;
  double scale; /* file value * scale = model value; 0: a size_t (bytes, or a count) */
} field_t;

#define F(name, member, scale) {name, offsetof(tutti_model_t, member), scale}
static const field_t fields[] = {
    F("l1d_bytes", l1d_bytes, 0),
    F("l2_bytes", l2_bytes, 0),
    F("l3_bytes", l3_bytes, 0),
    F("cpus", cpus, 0),
    F("copy_cached_gbps", copy_cached_bps, 1e9),
    F("copy_mem_gbps", copy_mem_bps, 1e9),
    F("reduce_cached_gbps", reduce_cached_bps, 1e9),
    F("reduce_mem_gbps", reduce_mem_bps, 1e9),
    F("handoff_us", handoff_s, 1e-6),
    F("wake_us", wake_s, 1e-6),
    F("xcore_gbps", xcore_bps, 1e9),
    F("cma_gbps", cma_bps, 1e9),
    F("cma_call_us", cma_call_s, 1e-6),
    F("tcp_alpha_us", tcp_alpha_s, 1e-6),
    F("tcp_gbps", tcp_bps, 1e9),
    F("net_alpha_us", net_alpha_s, 1e-6),
    F("net_gbps", net_bps, 1e9),
    F("measure_ms", measure_ms, 1),
    F("samples", samples, 0),
    F("measured_at", measured_at, 0),
};
#undef F
#define NFIELDS (sizeof fields / sizeof fields[0])

static int put(char *buf, size_t len, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int put(char *buf, size_t len, size_t *at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(buf + *at, len - *at, fmt, ap);
  va_end(ap);
  if (k < 0 || (size_t)k >= len - *at) return -1;
  *at += (size_t)k;
  return 0;
}

/* "64k", "1m", "3": the shortest exact form, as TUTTI_TUNE writes sizes. */
static void size_text(size_t v, char *out, size_t len) {
  if (v == (size_t)-1) snprintf(out, len, "%s", "");
  else if (v && !(v & ((1u << 30) - 1))) snprintf(out, len, "%zug", v >> 30);
  else if (v && !(v & ((1u << 20) - 1))) snprintf(out, len, "%zum", v >> 20);
  else if (v && !(v & ((1u << 10) - 1))) snprintf(out, len, "%zuk", v >> 10);
  else snprintf(out, len, "%zu", v);
}

int tutti__table_write(const tutti_model_t *m, const char *key, char *buf, size_t len) {
  size_t at = 0;
  if (!len) return -1;
  buf[0] = '\0';
  if (put(buf, len, &at, "%s\n# the tuner's inputs for one machine (docs/tuning.md)\n",
          VERSION_LINE))
    return -1;
  if (m->origin[0] && !strpbrk(m->origin, "#\n") && put(buf, len, &at, "origin %s\n", m->origin))
    return -1;
  if (key && put(buf, len, &at, "key %s\n", key)) return -1;
  if (put(buf, len, &at, "source %s\n", tutti__model_source_word(m->source))) return -1;
  for (size_t i = 0; i < NFIELDS; i++) {
    const char *p = (const char *)m + fields[i].off;
    if (fields[i].scale == 0) {
      size_t v;
      memcpy(&v, p, sizeof v);
      if (v && put(buf, len, &at, "%s %zu\n", fields[i].name, v)) return -1;
    } else {
      double v;
      memcpy(&v, p, sizeof v);
      if (v > 0 && put(buf, len, &at, "%s %.6g\n", fields[i].name, v / fields[i].scale))
        return -1;
    }
  }
  for (int r = 0; r < m->nrules; r++) {
    const tutti_file_rule_t *u = &m->rules[r];
    char lo[32], hi[32], n[32];
    size_text(u->lo, lo, sizeof lo);
    size_text(u->hi, hi, sizeof hi);
    if (u->nlo == u->nhi) snprintf(n, sizeof n, "%d", u->nlo);
    else if (u->nhi >= TUTTI_MAX_RANKS) snprintf(n, sizeof n, "%d-", u->nlo);
    else snprintf(n, sizeof n, "%d-%d", u->nlo, u->nhi);
    if (put(buf, len, &at, "rule %s %s %s-%s %s\n", tutti__coll_name((tutti_coll_t)u->coll), n,
            lo, hi, u->algo))
      return -1;
  }
  return (int)at;
}

/* A size with an optional k/m/g suffix at *s; advances *s. */
static int parse_size(const char **s, size_t *out) {
  char *end;
  if (**s < '0' || **s > '9') return -1;
  errno = 0;
  unsigned long long v = strtoull(*s, &end, 10);
  int shift = *end == 'k' || *end == 'K' ? 10 : *end == 'm' || *end == 'M' ? 20
            : *end == 'g' || *end == 'G' ? 30 : 0;
  if (errno || v > (~0ULL >> shift) || (size_t)(v << shift) != (v << shift)) return -1;
  *out = (size_t)(v << shift);
  *s = end + (shift != 0);
  return 0;
}

/* "LO-HI", "LO-", "-HI", "-" into [lo, hi); 0 or -1. */
static int parse_range(const char *s, size_t *lo, size_t *hi) {
  *lo = 0;
  *hi = (size_t)-1;
  if (*s != '-' && parse_size(&s, lo)) return -1;
  if (*s++ != '-') return -1;
  if (*s && parse_size(&s, hi)) return -1;
  return *s || *lo >= *hi ? -1 : 0;
}

static int parse_ranks(const char *s, int *nlo, int *nhi) {
  char *end;
  long lo = 1, hi = TUTTI_MAX_RANKS;
  if (*s != '-') {
    lo = strtol(s, &end, 10);
    if (end == s || *s == '+') return -1;
    s = end;
    if (!*s) hi = lo;
  }
  if (*s == '-') {
    s++;
    if (*s) {
      hi = strtol(s, &end, 10);
      if (end == s || *end || *s == '+' || *s == '-') return -1;
    }
  } else if (*s) {
    return -1;
  }
  if (lo < 1 || hi > TUTTI_MAX_RANKS || lo > hi) return -1;
  *nlo = (int)lo;
  *nhi = (int)hi;
  return 0;
}

static int parse_rule(char *rest, tutti_model_t *m, char *why, size_t wlen) {
  char coll[32], ranks[32], range[64], name[32], extra[2];
  if (sscanf(rest, "%31s %31s %63s %31s %1s", coll, ranks, range, name, extra) != 4) {
    snprintf(why, wlen, "a rule is 'rule COLLECTIVE NRANKS LO-HI ALGORITHM', e.g. "
             "'rule allreduce 2-4 64k-1m ring'");
    return -1;
  }
  int c = -1;
  for (int i = 0; i < TUTTI_COLL_COUNT; i++)
    if (!strcmp(tutti__coll_name((tutti_coll_t)i), coll)) c = i;
  tutti_file_rule_t u = {.coll = c};
  const tutti_algo_t *a = tutti__algo_find(name);
  if (c < 0) snprintf(why, wlen, "'%s' is not a collective", coll);
  else if (parse_ranks(ranks, &u.nlo, &u.nhi))
    snprintf(why, wlen, "'%s' is not a rank count N, range N-M, N- or -", ranks);
  else if (parse_range(range, &u.lo, &u.hi))
    snprintf(why, wlen, "'%s' is not a non-empty size range LO-HI (k/m/g suffixes; LO- or -HI "
             "open)", range);
  else if (!a || !strcmp(name, "auto")) snprintf(why, wlen, "'%s' is not an algorithm", name);
  else if (!a->fn[c]) snprintf(why, wlen, "algorithm '%s' does not implement %s", name, coll);
  else if (m->nrules == TUTTI_FILE_MAX_RULES)
    snprintf(why, wlen, "more than %d rules", TUTTI_FILE_MAX_RULES);
  else {
    snprintf(u.algo, sizeof u.algo, "%s", a->name); /* table names are short */
    m->rules[m->nrules++] = u;
    return 0;
  }
  return -1;
}

static int parse_value(const field_t *f, const char *v, tutti_model_t *m) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  while (*end == ' ' || *end == '\t') end++;
  if (errno || end == v || *end || !isfinite(d) || d < 0 || d > 1e15) return -1;
  char *p = (char *)m + f->off;
  if (f->scale == 0) {
    if (d != floor(d)) return -1;
    size_t s = (size_t)d;
    memcpy(p, &s, sizeof s);
  } else {
    d *= f->scale;
    memcpy(p, &d, sizeof d);
  }
  return 0;
}

int tutti__table_parse(const char *text, tutti_model_t *m, char *key_out, size_t keylen,
                       char *err, size_t errlen) {
  char line[MAX_LINE + 2], why[200];
  int lineno = 0, versioned = 0;
  tutti_model_t t = *m;
  t.nrules = 0;
  if (key_out && keylen) key_out[0] = '\0';
  for (const char *s = text; *s;) {
    size_t n = strcspn(s, "\n");
    lineno++;
    if (n > MAX_LINE) {
      snprintf(why, sizeof why, "longer than %d characters", MAX_LINE);
      goto bad;
    }
    memcpy(line, s, n);
    line[n] = '\0';
    s += n + (s[n] == '\n');
    char *c = line + strspn(line, " \t\r");
    c[strcspn(c, "#\r")] = '\0';
    size_t e = strlen(c);
    while (e && (c[e - 1] == ' ' || c[e - 1] == '\t')) c[--e] = '\0';
    if (!*c) continue;
    if (!versioned) {
      if (strcmp(c, VERSION_LINE)) {
        snprintf(why, sizeof why, "expected '%s' first (not a tutti tuning table, or another "
                 "version)", VERSION_LINE);
        goto bad;
      }
      versioned = 1;
      continue;
    }
    char *val = c + strcspn(c, " \t");
    if (*val) *val++ = '\0';
    val += strspn(val, " \t");
    if (!strcmp(c, "key")) {
      if (key_out && keylen) snprintf(key_out, keylen, "%s", val);
      continue;
    }
    if (!strcmp(c, "origin")) {
      snprintf(t.origin, sizeof t.origin, "%s", val);
      continue;
    }
    if (!strcmp(c, "source")) {
      int k = 0;
      while (k <= TUTTI_MODEL_FILE && strcmp(val, tutti__model_source_word(k))) k++;
      if (k > TUTTI_MODEL_FILE) {
        snprintf(why, sizeof why, "source '%s' is not measured, cached, file or fallback", val);
        goto bad;
      }
      t.source = (tutti_model_source_t)k;
      continue;
    }
    if (!strcmp(c, "rule")) {
      if (parse_rule(val, &t, why, sizeof why)) goto bad;
      continue;
    }
    size_t i = 0;
    while (i < NFIELDS && strcmp(fields[i].name, c)) i++;
    if (i == NFIELDS) {
      snprintf(why, sizeof why, "'%s' is not a known name (see docs/tuning.md)", c);
      goto bad;
    }
    if (parse_value(&fields[i], val, &t)) {
      snprintf(why, sizeof why, "'%s' for %s is not a number from 0 to 1e15%s", val, c,
               fields[i].scale == 0 ? " (a whole number)" : "");
      goto bad;
    }
  }
  if (!versioned) {
    snprintf(err, errlen, "the table is empty (expected '%s' first)", VERSION_LINE);
    return -1;
  }
  t.have = 1;
  *m = t;
  return 0;
bad:
  snprintf(err, errlen, "line %d: %s", lineno, why);
  return -1;
}

char *tutti__table_slurp(const char *path, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  char *buf = NULL;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE) {
    snprintf(err, errlen, "%s is not a regular file of at most %d bytes", path, MAX_FILE);
    goto out;
  }
  buf = malloc((size_t)st.st_size + 1);
  size_t got = 0;
  while (buf && got < (size_t)st.st_size) {
    ssize_t k = read(fd, buf + got, (size_t)st.st_size - got);
    if (k <= 0) break;
    got += (size_t)k;
  }
  if (!buf || got != (size_t)st.st_size) {
    snprintf(err, errlen, "cannot read %s", path);
    free(buf);
    buf = NULL;
    goto out;
  }
  buf[got] = '\0';
  if (strlen(buf) != got) {
    snprintf(err, errlen, "%s holds NUL bytes (not a text file)", path);
    free(buf);
    buf = NULL;
  }
out:
  close(fd);
  return buf;
}

int tutti__table_store(const char *path, const char *text, char *err, size_t errlen) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid()) >= (int)sizeof tmp) {
    snprintf(err, errlen, "path too long: %s", path);
    return -1;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
    return -1;
  }
  size_t len = strlen(text), done = 0;
  while (done < len) {
    ssize_t k = write(fd, text + done, len - done);
    if (k <= 0) break;
    done += (size_t)k;
  }
  int bad = done != len || close(fd) != 0;
  /* rename is atomic: a reader sees the old file or the whole new one, never a torn one. */
  if (bad || rename(tmp, path) != 0) {
    snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
    return -1;
  }
  return 0;
}
