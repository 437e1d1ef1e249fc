/*
 * What the fuzz targets and the seed generator share: the fixed secret and nonces that seeds
 * are signed with, an environment made of fuzzer bytes, and a check that aborts (so libFuzzer
 * records the input) when a property of a parser's result does not hold.
 */
#ifndef TUTTI_FUZZ_COMMON_H
#define TUTTI_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A property that must hold for every input; a violation is a bug as real as a crash. */
#define FUZZ_CHECK(cond)                                                                    \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #cond);         \
      abort();                                                                              \
    }                                                                                       \
  } while (0)

/* Signing material of the seeds: fixed, so the targets can check proofs deterministically. */
static const uint8_t fuzz_secret[32] = {
    0x74, 0x75, 0x74, 0x74, 0x69, 0x2d, 0x66, 0x75, 0x7a, 0x7a, 0x2d, 0x73, 0x65, 0x63, 0x72, 0x65,
    0x74, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f};
static const uint8_t fuzz_na[32] = {
    0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf,
    0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe, 0xbf};
static const uint8_t fuzz_nc[32] = {
    0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf,
    0xd0, 0xd1, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf};

/* An environment: the input split at newlines into "NAME=value" strings (NUL-terminated
 * copies, so a NUL byte inside a line ends its value as it would in a real environment). */
typedef struct fuzz_env {
  char *text;
  const char *line[64];
  int n;
} fuzz_env_t;

static inline void fuzz_env_make(fuzz_env_t *e, const uint8_t *data, size_t size) {
  e->text = malloc(size + 1);
  memcpy(e->text, data, size);
  e->text[size] = '\0';
  e->n = 0;
  char *p = e->text;
  while (e->n < 64) {
    e->line[e->n++] = p;
    char *nl = memchr(p, '\n', (size_t)(e->text + size - p));
    if (!nl) break;
    *nl = '\0';
    p = nl + 1;
  }
}

static inline void fuzz_env_free(fuzz_env_t *e) { free(e->text); }

/* The first "NAME=value" line for name, as getenv would answer. */
static inline const char *fuzz_env_get(const char *name, void *ctx) {
  const fuzz_env_t *e = ctx;
  size_t n = strlen(name);
  for (int i = 0; i < e->n; i++)
    if (!strncmp(e->line[i], name, n) && e->line[i][n] == '=') return e->line[i] + n + 1;
  return NULL;
}

/* A string result must end inside its buffer. */
static inline int fuzz_terminated(const char *s, size_t cap) {
  return memchr(s, '\0', cap) != NULL;
}

#endif
