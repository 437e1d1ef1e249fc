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

/* ---- Recursive doubling and halving over a power of two (the non-power-of-two fold) ---- */

/* The largest power of two not above n (n >= 1). */
static inline int tutti__pow2_floor(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

/* With n = p + rem ranks (p = tutti__pow2_floor(n)), ranks below 2*rem pair up: the even
 * one of each pair hands its data to the odd one and sits out, the odd one takes part as
 * virtual rank r/2; ranks from 2*rem on are virtual rank r - rem. -1 for the ranks that sit
 * out. Virtual ranks are 0 .. p-1 and keep the ranks' order. */
static inline int tutti__fold_vrank(int rank, int rem) {
  if (rank < 2 * rem) return rank % 2 ? rank / 2 : -1;
  return rank - rem;
}

/* The real rank of virtual rank v (inverse of tutti__fold_vrank). */
static inline int tutti__fold_rank(int v, int rem) { return v < rem ? 2 * v + 1 : v + rem; }

/* The first real rank whose data virtual rank v stands for (v = p gives n): virtual rank v
 * covers real ranks tutti__fold_first(v) .. tutti__fold_first(v + 1) - 1, in order. */
static inline int tutti__fold_first(int v, int rem) { return v < rem ? 2 * v : v + rem; }

/* ---- Binary trees (NCCL's ncclGetBtree / ncclGetDtree) ---------------------------------- */

/* An in-order binary tree over ranks 0 .. n-1 of depth about log2 n: a rank's lowest set bit
 * decides its level; rank 0 is the root with one child (the highest power of two below n).
 * Children satisfy *down0 < rank < *down1, so a subtree is a contiguous range of ranks.
 * -1 where there is no such neighbour. */
static inline void tutti__btree(int n, int rank, int *up, int *down0, int *down1) {
  int bit = 1;
  while (bit < n && !(bit & rank)) bit <<= 1;
  if (rank == 0) {
    *up = -1;
    *down0 = -1;
    *down1 = n > 1 ? bit >> 1 : -1;
    return;
  }
  int parent = (rank ^ bit) | (bit << 1);
  *up = parent < n ? parent : rank ^ bit;
  int low = bit >> 1;
  *down0 = low ? rank - low : -1;
  while (low && rank + low >= n) low >>= 1;
  *down1 = low ? rank + low : -1;
}

/* Tree t (0 or 1) of the double binary tree: tree 0 is tutti__btree; tree 1 is it mirrored
 * (n even) or shifted by one (n odd), so that most ranks that are inner nodes of one tree
 * are leaves of the other and the two trees share the work. */
static inline void tutti__dtree(int n, int rank, int t, int *up, int *down0, int *down1) {
  if (t == 0 || n == 1) {
    tutti__btree(n, rank, up, down0, down1);
    return;
  }
  int u, d0, d1;
  if (n % 2) {
    tutti__btree(n, tutti__mod(rank - 1, n), &u, &d0, &d1);
    *up = u < 0 ? -1 : (u + 1) % n;
    *down0 = d0 < 0 ? -1 : (d0 + 1) % n;
    *down1 = d1 < 0 ? -1 : (d1 + 1) % n;
  } else {
    tutti__btree(n, n - 1 - rank, &u, &d0, &d1);
    *up = u < 0 ? -1 : n - 1 - u;
    *down0 = d0 < 0 ? -1 : n - 1 - d0;
    *down1 = d1 < 0 ? -1 : n - 1 - d1;
  }
}

#endif
