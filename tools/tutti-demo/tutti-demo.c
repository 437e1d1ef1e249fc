/*
 * tutti-demo — the seed example (shared/seeds/README.md), run as
 *
 *     tutti-run -n 3 tutti-demo [--swap A,B]
 *
 * Three participants hold the fragments [1, 4], [2, -1] and [3, 2]. All-gather gives every one
 * the concatenation in rank order, [1, 4, 2, -1, 3, 2] (the two 2s stay two elements); all-reduce
 * sum gives [6, 5]; reduce-scatter followed by all-gather of the slices rebuilds [6, 5].
 * --swap A,B gives participant A rank B and B rank A: the gathered fragments come out reordered,
 * no number changes. Participant p is the process launched as rank p.
 *
 * It is also a test: every result is checked against values computed here from the fragments,
 * and any difference makes it exit 1. Uses only the public API.
 */
#include <tutti.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPART 3
#define FRAG 2

/* The fragments, by participant (not by rank: that is what --swap changes). */
static const float fragments[NPART][FRAG] = {{1, 4}, {2, -1}, {3, 2}};

static int failures;

/* Exits 1 naming the call that failed, the result and the communicator's own account of it. */
static void check(tutti_result_t r, const char *call, tutti_comm_t comm) {
  if (r == TUTTI_SUCCESS)
    return;
  const char *why = comm ? tutti_comm_last_error(comm) : NULL;
  fprintf(stderr, "tutti-demo: %s failed: %s%s%s\n", call, tutti_result_string(r),
          why && *why ? ": " : "", why && *why ? why : "");
  exit(1);
}
#define CHECK(call, comm) check((call), #call, (comm))

/* Appends v to s as "[a, b, ...]", integral values without a decimal point. */
static void format_vec(char *s, size_t cap, const float *v, int n) {
  size_t o = strlen(s);
  o += (size_t)snprintf(s + o, cap - o, "[");
  for (int i = 0; i < n && o < cap; i++) {
    const char *sep = i ? ", " : "";
    if (v[i] > -1e9f && v[i] < 1e9f && v[i] == (float)(long)v[i])
      o += (size_t)snprintf(s + o, cap - o, "%s%ld", sep, (long)v[i]);
    else
      o += (size_t)snprintf(s + o, cap - o, "%s%g", sep, (double)v[i]);
  }
  if (o < cap)
    snprintf(s + o, cap - o, "]");
}

/* Compares got with want; on a difference says so on stderr and counts a failure. */
static int expect(const char *what, const float *got, const float *want, int n) {
  if (memcmp(got, want, (size_t)n * sizeof(float)) == 0)
    return 1;
  char msg[256] = "";
  format_vec(msg, sizeof(msg), got, n);
  strcat(msg, ", expected ");
  format_vec(msg, sizeof(msg), want, n);
  fprintf(stderr, "tutti-demo: CHECK FAILED: %s gave %s\n", what, msg);
  failures++;
  return 0;
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* Parses --swap A,B into *a, *b; returns 0, or -1 on bad usage. */
static int parse_args(int argc, char **argv, int *a, int *b) {
  *a = *b = -1;
  for (int i = 1; i < argc; i++) {
    const char *val;
    if (strcmp(argv[i], "--swap") == 0 && i + 1 < argc)
      val = argv[++i];
    else if (strncmp(argv[i], "--swap=", 7) == 0)
      val = argv[i] + 7;
    else
      return -1;
    char tail;
    if (sscanf(val, "%d,%d%c", a, b, &tail) != 2 || *a < 0 || *a >= NPART || *b < 0 ||
        *b >= NPART || *a == *b)
      return -1;
  }
  return 0;
}

/* Builds a second communicator in which participants a and b trade ranks. There is no
 * comm_split, so rank 0 creates a fresh unique id and broadcasts it over the first
 * communicator: that broadcast is the "out of band" channel tutti_get_unique_id asks for. */
static tutti_comm_t swapped_comm(tutti_comm_t world, int participant, int a, int b) {
  tutti_unique_id_t id;
  memset(&id, 0, sizeof(id));
  if (participant == 0)
    CHECK(tutti_get_unique_id(&id), world);
  CHECK(tutti_broadcast(&id, &id, sizeof(id), TUTTI_UINT8, 0, world), world);
  int rank = participant == a ? b : participant == b ? a : participant;
  tutti_comm_t comm = NULL;
  CHECK(tutti_comm_init_rank(&comm, NPART, &id, rank), NULL);
  return comm;
}

/* Prints text in rank order, one rank after the other, so the relayed demo reads top down. */
static void print_in_rank_order(const char *text, int rank, tutti_comm_t comm) {
  for (int r = 0; r < NPART; r++) {
    if (r == rank) {
      fputs(text, stdout);
      fflush(stdout);
    }
    CHECK(tutti_barrier(comm), comm);
  }
}

int main(int argc, char **argv) {
  int swap_a, swap_b;
  if (parse_args(argc, argv, &swap_a, &swap_b) != 0) {
    fprintf(stderr, "usage: tutti-run -n 3 tutti-demo [--swap A,B]   (A, B: distinct "
                    "participants 0..2)\n");
    return 2;
  }
  tutti_comm_t world = NULL;
  tutti_result_t r = tutti_comm_init_env(&world);
  if (r != TUTTI_SUCCESS) {
    fprintf(stderr, "tutti-demo: tutti_comm_init_env failed: %s (run it as: tutti-run -n 3 "
                    "tutti-demo)\n", tutti_result_string(r));
    return 1;
  }
  int participant, size;
  CHECK(tutti_comm_rank(world, &participant), world);
  CHECK(tutti_comm_size(world, &size), world);
  if (size != NPART) {
    fprintf(stderr, "tutti-demo: needs exactly %d ranks, got %d (run it as: tutti-run -n 3 "
                    "tutti-demo)\n", NPART, size);
    tutti_comm_destroy(world);
    return 2;
  }
  int swapping = swap_a >= 0;
  tutti_comm_t comm = swapping ? swapped_comm(world, participant, swap_a, swap_b) : world;
  int rank;
  CHECK(tutti_comm_rank(comm, &rank), comm);

  /* What every result must be, worked out from the fragments alone. */
  int participant_of[NPART];
  for (int p = 0; p < NPART; p++)
    participant_of[p] = p;
  if (swapping) {
    participant_of[swap_a] = swap_b;
    participant_of[swap_b] = swap_a;
  }
  float want_gather[NPART * FRAG], want_sum[FRAG] = {0};
  for (int q = 0; q < NPART; q++)
    for (int k = 0; k < FRAG; k++) {
      want_gather[q * FRAG + k] = fragments[participant_of[q]][k];
      want_sum[k] += fragments[q][k];
    }
  if (participant_of[rank] != participant) {
    fprintf(stderr, "tutti-demo: CHECK FAILED: participant %d got rank %d\n", participant, rank);
    failures++;
  }

  const float *mine = fragments[participant];
  char text[1024] = "";
  size_t cap = sizeof(text);
  snprintf(text, cap, "participant %d as rank %d sends ", participant, rank);
  format_vec(text, cap, mine, FRAG);

  /* All-gather: the fragments side by side in rank order, nothing summed or sorted. */
  float gathered[NPART * FRAG];
  CHECK(tutti_allgather(mine, gathered, FRAG, TUTTI_FLOAT32, comm), comm);
  expect("all-gather", gathered, want_gather, NPART * FRAG);
  strcat(text, "\nall-gather      -> ");
  format_vec(text, cap, gathered, NPART * FRAG);
  if (swapping) {
    /* A renumbering moves fragments, never values: compare the sorted numbers. */
    float a[NPART * FRAG], b[NPART * FRAG];
    memcpy(a, gathered, sizeof(a));
    memcpy(b, fragments, sizeof(b));
    qsort(a, NPART * FRAG, sizeof(float), cmp_float);
    qsort(b, NPART * FRAG, sizeof(float), cmp_float);
    int same = expect("all-gather's multiset of numbers", a, b, NPART * FRAG);
    snprintf(text + strlen(text), cap - strlen(text),
             "\nswap %d,%d reordered the fragments; multiset of numbers unchanged: %s", swap_a,
             swap_b, same ? "yes" : "NO");
  }

  /* All-reduce: the element-wise sum, the same on every rank. */
  float sum[FRAG];
  CHECK(tutti_allreduce(mine, sum, FRAG, TUTTI_FLOAT32, TUTTI_SUM, comm), comm);
  expect("all-reduce sum", sum, want_sum, FRAG);
  strcat(text, "\nall-reduce sum  -> ");
  format_vec(text, cap, sum, FRAG);

  /* Reduce-scatter needs nranks equal slices, so the fragment is zero-padded to
   * NPART * slice elements; each rank keeps the sum of its slice, and all-gather of the
   * slices rebuilds the all-reduce result (how ZeRO/FSDP split an all-reduce in two). */
  enum { SLICE = (FRAG + NPART - 1) / NPART };
  float padded[NPART * SLICE] = {0}, slice[SLICE], rebuilt[NPART * SLICE];
  memcpy(padded, mine, sizeof(float) * FRAG);
  CHECK(tutti_reduce_scatter(padded, slice, SLICE, TUTTI_FLOAT32, TUTTI_SUM, comm), comm);
  float want_slice[NPART * SLICE] = {0};
  memcpy(want_slice, want_sum, sizeof(want_sum));
  expect("reduce-scatter slice", slice, want_slice + rank * SLICE, SLICE);
  CHECK(tutti_allgather(slice, rebuilt, SLICE, TUTTI_FLOAT32, comm), comm);
  int equal = expect("reduce-scatter + all-gather", rebuilt, sum, FRAG);
  strcat(text, "\nreduce-scatter  -> slice ");
  format_vec(text, cap, slice, SLICE);
  strcat(text, "\nreduce-scatter + all-gather -> ");
  format_vec(text, cap, rebuilt, FRAG);
  snprintf(text + strlen(text), cap - strlen(text), " (equals all-reduce: %s)\n",
           equal ? "yes" : "NO");

  /* All-gather-v: fragments of different lengths (participant p has p + 1 numbers) land
   * where the displacements say. It is a different call: tutti_allgather requires every rank
   * to send the same count, and would not accept these fragments. */
  static const float vfrag[NPART][NPART] = {{1}, {2, -1}, {3, 2, 7}};
  size_t vcounts[NPART], vdispls[NPART], vtotal = 0;
  for (int q = 0; q < NPART; q++) {
    vcounts[q] = (size_t)participant_of[q] + 1;
    vdispls[q] = vtotal;
    vtotal += vcounts[q];
  }
  float vgot[NPART * NPART], vwant[NPART * NPART];
  for (int q = 0; q < NPART; q++)
    memcpy(vwant + vdispls[q], vfrag[participant_of[q]], vcounts[q] * sizeof(float));
  CHECK(tutti_allgatherv(vfrag[participant], vcounts[rank], vgot, vcounts, vdispls,
                         TUTTI_FLOAT32, comm),
        comm);
  expect("all-gather-v", vgot, vwant, (int)vtotal);
  snprintf(text + strlen(text), cap - strlen(text), "all-gather-v    (counts %zu,%zu,%zu) -> ",
           vcounts[0], vcounts[1], vcounts[2]);
  format_vec(text, cap, vgot, (int)vtotal);
  strcat(text, "\n                (tutti_allgatherv: per-rank counts and displacements; "
               "tutti_allgather needs equal counts)\n");

  print_in_rank_order(text, rank, comm);

  if (swapping)
    CHECK(tutti_comm_destroy(comm), NULL);
  CHECK(tutti_comm_destroy(world), NULL);
  if (failures) {
    fprintf(stderr, "tutti-demo: %d check(s) failed on participant %d (rank %d)\n", failures,
            participant, rank);
    return 1;
  }
  return 0;
}
