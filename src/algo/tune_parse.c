/*
 * TUTTI_TUNE: per-size algorithm rules given by the user (tuner.h's tutti__tune_parse), e.g.
 * "allreduce:0-64k:recursive_doubling,64k-:ring;allgather:-1m:recursive_doubling". Refused
 * whole, with the reason, at the first thing it cannot read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/tuner.h"

/* A size with an optional k/m/g suffix (powers of 1024) at *s, advancing *s. */
static int parse_size(const char **s, size_t *out) {
  char *end;
  if (**s < '0' || **s > '9') return -1;
  errno = 0;
  unsigned long long v = strtoull(*s, &end, 10);
  if (errno) return -1;
  int shift = 0;
  switch (*end) {
  case 'k': case 'K': shift = 10; break;
  case 'm': case 'M': shift = 20; break;
  case 'g': case 'G': shift = 30; break;
  default: break;
  }
  if (shift) {
    if (v > (~0ULL >> shift)) return -1;
    v <<= shift;
    end++;
  }
  *out = (size_t)v;
  *s = end;
  return 0;
}

/* Copies the word up to any of stops into buf (at most len-1 characters). */
static const char *word(const char *s, const char *stops, char *buf, size_t len) {
  size_t i = 0;
  while (*s && !strchr(stops, *s)) {
    if (i + 1 < len) buf[i++] = *s;
    s++;
  }
  buf[i] = '\0';
  return s;
}

static int coll_by_name(const char *name) {
  for (int c = 0; c < TUTTI_COLL_COUNT; c++)
    if (!strcmp(tutti__coll_name((tutti_coll_t)c), name)) return c;
  return -1;
}

static void algo_names(char *buf, size_t len) {
  int n;
  const tutti_algo_t *t = tutti__algo_table(&n);
  buf[0] = '\0';
  for (int i = 0; i < n; i++)
    snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? ", " : "", t[i].name);
}

tutti_result_t tutti__tune_parse(const char *spec, tutti_tune_rule_t *rules, int max, int *nr,
                                 char *err, size_t errlen) {
  int n, count = 0;
  const tutti_algo_t *t = tutti__algo_table(&n);
  const char *s = spec ? spec : "";
  char name[64], why[256];
  *nr = 0;
  while (*s) {
    const char *group = s;
    s = word(s, ":;", name, sizeof name);
    int coll = coll_by_name(name);
    if (coll < 0) {
      snprintf(why, sizeof why, "'%s' is not a collective (allreduce, allgather, "
               "reduce_scatter, broadcast, reduce, ...)", name);
      goto bad;
    }
    if (*s != ':') {
      snprintf(why, sizeof why, "'%s' needs ':RANGE:ALGORITHM' after it", name);
      goto bad;
    }
    s++;
    for (;;) { /* RANGE:ALGORITHM, comma-separated */
      size_t lo = 0, hi = (size_t)-1;
      const char *range = s;
      if (*s != '-' && parse_size(&s, &lo)) goto bad_range;
      if (*s != '-') goto bad_range;
      s++;
      if (*s != ':' && parse_size(&s, &hi)) goto bad_range;
      if (*s != ':') goto bad_range;
      if (lo >= hi) {
        snprintf(why, sizeof why, "the range '%.*s' is empty (the upper end is exclusive)",
                 (int)(s - range), range);
        goto bad;
      }
      s++;
      s = word(s, ",;", name, sizeof name);
      const tutti_algo_t *a = tutti__algo_find(name);
      if (!name[0] || !strcmp(name, "auto") || !a) {
        char names[256];
        algo_names(names, sizeof names);
        snprintf(why, sizeof why, "'%s' is not an algorithm (one of: %s)", name, names);
        goto bad;
      }
      if (!a->fn[coll]) {
        snprintf(why, sizeof why, "algorithm '%s' does not implement %s", name,
                 tutti__coll_name((tutti_coll_t)coll));
        goto bad;
      }
      if (count == max) {
        snprintf(why, sizeof why, "more than %d rules", max);
        goto bad;
      }
      rules[count++] = (tutti_tune_rule_t){coll, (int)(a - t), lo, hi};
      if (*s != ',') break;
      s++;
      continue;
    bad_range:
      snprintf(why, sizeof why, "at '%.20s': expected a size range LO-HI, LO- or -HI (bytes, "
               "k/m/g suffixes) followed by ':ALGORITHM'", range);
      goto bad;
    }
    if (*s == ';') {
      s++;
    } else if (*s) {
      snprintf(why, sizeof why, "unexpected '%c' after the rules for '%.*s'", *s,
               (int)strcspn(group, ":"), group);
      goto bad;
    }
  }
  *nr = count;
  return TUTTI_SUCCESS;
bad:
  snprintf(err, errlen, "TUTTI_TUNE=%s: %s (expected e.g. "
           "allreduce:0-64k:recursive_doubling,64k-:ring;allgather:-1m:recursive_doubling)",
           spec, why);
  return TUTTI_ERR_INVALID_ARGUMENT;
}
