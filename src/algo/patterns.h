/*
 * Pure rank and index arithmetic shared by the algorithms, unit-tested on its own.
 */
#ifndef TUTTI_PATTERNS_H
#define TUTTI_PATTERNS_H

#include <stddef.h>

/* x mod n in [0, n), for any int x. */
static inline int tutti__mod(int x, int n) { return ((x % n) + n) % n; }

static inline int tutti__ring_right(int rank, int n) { return tutti__mod(rank + 1, n); }
static inline int tutti__ring_left(int rank, int n) { return tutti__mod(rank - 1, n); }

/* Splits count elements into n contiguous blocks whose sizes differ by at most one (the
 * first count % n blocks get the extra element); block b starts at *off and has *len. */
static inline void tutti__block_range(size_t count, int n, int b, size_t *off, size_t *len) {
  size_t base = count / (size_t)n, rem = count % (size_t)n, ub = (size_t)b;
  *off = ub * base + (ub < rem ? ub : rem);
  *len = base + (ub < rem ? 1 : 0);
}

/* Number of chunks of at most chunk elements covering len elements. */
static inline size_t tutti__nchunks(size_t len, size_t chunk) {
  return (len + chunk - 1) / chunk;
}

/* Position of rank in a chain that starts right after root and ends at root: root+1 is 0,
 * root is n-1 (reduce flows toward root). */
static inline int tutti__chain_pos_to_root(int rank, int root, int n) {
  return tutti__mod(rank - root - 1, n);
}

/* Position of rank in a chain that starts at root (broadcast flows away from root). */
static inline int tutti__chain_pos_from_root(int rank, int root, int n) {
  return tutti__mod(rank - root, n);
}

/* Pairwise exchange, step k of 1 .. n-1: rank sends to the rank k to its right and receives
 * from the rank k to its left, which in turn sends to it at the same step. */
static inline int tutti__pairwise_to(int rank, int k, int n) { return tutti__mod(rank + k, n); }
static inline int tutti__pairwise_from(int rank, int k, int n) {
  return tutti__mod(rank - k, n);
}

#endif
