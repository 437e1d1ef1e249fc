/* Rank, world size and rendezvous address from tutti's, torchrun's, Open MPI's or Slurm's
 * variables; the first complete family wins. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"

static int parse_int(const char *s, long lo, long hi, int *out) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end != '\0' || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

/* "host:port" with the port after the last colon. */
static int parse_addr(const char *s, tutti_env_info_t *out) {
  const char *colon = strrchr(s, ':');
  int port;
  if (!colon || colon == s || (size_t)(colon - s) >= sizeof out->host) return -1;
  if (parse_int(colon + 1, 1, 65535, &port)) return -1;
  memcpy(out->host, s, (size_t)(colon - s));
  out->host[colon - s] = '\0';
  out->port = (uint16_t)port;
  return 0;
}

/* The rendezvous address: TUTTI_ADDR, else MASTER_ADDR and MASTER_PORT. */
static tutti_result_t find_addr(tutti_lookup_fn get, void *ctx, tutti_env_info_t *out,
                                char *err, size_t errlen) {
  const char *a = get("TUTTI_ADDR", ctx);
  if (a && *a) {
    if (parse_addr(a, out) == 0) return TUTTI_SUCCESS;
    snprintf(err, errlen, "TUTTI_ADDR=%s is not host:port", a);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  const char *h = get("MASTER_ADDR", ctx), *p = get("MASTER_PORT", ctx);
  int port;
  if (h && *h && p && *p) {
    if (strlen(h) >= sizeof out->host || parse_int(p, 1, 65535, &port)) {
      snprintf(err, errlen, "MASTER_ADDR=%s MASTER_PORT=%s is not a usable address", h, p);
      return TUTTI_ERR_INVALID_ARGUMENT;
    }
    snprintf(out->host, sizeof out->host, "%s", h);
    out->port = (uint16_t)port;
    return TUTTI_SUCCESS;
  }
  snprintf(err, errlen, "no rendezvous address: set TUTTI_ADDR=host:port or MASTER_ADDR and "
                        "MASTER_PORT");
  return TUTTI_ERR_INVALID_ARGUMENT;
}

tutti_result_t tutti__env_parse(tutti_lookup_fn get, void *ctx, tutti_env_info_t *out,
                                char *err, size_t errlen) {
  static const struct {
    const char *rank, *size, *source;
  } families[] = {
      {"TUTTI_RANK", "TUTTI_WORLD_SIZE", "tutti"},
      {"RANK", "WORLD_SIZE", "torchrun"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "openmpi"},
      {"SLURM_PROCID", "SLURM_NTASKS", "slurm"},
  };
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
    const char *r = get(families[i].rank, ctx), *s = get(families[i].size, ctx);
    if (!r || !*r) continue;
    if (parse_int(s, 1, TUTTI_MAX_RANKS, &out->size) ||
        parse_int(r, 0, out->size - 1, &out->rank)) {
      snprintf(err, errlen, "%s=%s and %s=%s are not a rank within a world size",
               families[i].rank, r, families[i].size, s ? s : "(unset)");
      return TUTTI_ERR_INVALID_ARGUMENT;
    }
    out->source = families[i].source;
    return find_addr(get, ctx, out, err, errlen);
  }
  snprintf(err, errlen, "no rank in the environment: set TUTTI_RANK, TUTTI_WORLD_SIZE and "
                        "TUTTI_ADDR (or torchrun's, Open MPI's or Slurm's variables)");
  return TUTTI_ERR_INVALID_ARGUMENT;
}
