/*
 * mpi_bench — the tutti-bench sweep, made of MPI calls, so that Open MPI and MPICH are timed
 * exactly as tutti is: per size and variant (out of place, in place) one checked call, WARMUP
 * untimed calls, an iteration count calibrated like tutti-bench's -n auto, then a barrier and
 * ITERS back-to-back calls; the time per call is the slowest rank's (MPI_MAX), and so are the
 * minor page faults per call. Columns and --json lines are tutti-bench's, so one parser reads
 * both. float32, sum only.
 *
 *   mpirun -n N mpi_bench [allreduce,allgather,reduce_scatter,broadcast|all] [-b 8] [-e 64M]
 *       [-f 2] [--sizes S1,S2,...] [-n ITERS|auto] [-w 5] [-c 0|1] [--inplace|--outofplace]
 *       [--faults] [--json]
 *
 * Calls: MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Bcast. In place means
 * MPI_IN_PLACE (all-gather's own block already at rank*count; reduce-scatter's result at the
 * start of the buffer, as MPI puts it). MPI_Bcast has one buffer: out of place the root sends
 * from its send buffer, the others receive into their receive buffer, and the root copies its
 * send buffer to its receive buffer as NCCL's (and tutti's) out-of-place broadcast does.
 *
 * Built by bench/peers/run.sh with mpicc.openmpi and mpicc.mpich into build/bench/.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* The same calibration as tutti-bench's -n auto. */
#define TARGET_S 0.03
#define PROBE_S 0.002
#define MAX_ITERS 100000

enum kind { ALLREDUCE, ALLGATHER, REDUCE_SCATTER, BROADCAST, NKINDS };
static const char *const names[NKINDS] = {"allreduce", "allgather", "reduce_scatter",
                                          "broadcast"};
static const int per_rank[NKINDS] = {0, 1, 1, 0};
static const double bus_steps[NKINDS] = {2, 1, 1, 0};

struct run {
  int rank, n, inplace;
  float *send, *recv;
};

static struct {
  unsigned colls;
  size_t minb, maxb, factor;
  long warmup, iters;
  int check, json, faults, oop, ip;
  size_t sizes[64]; /* --sizes: this increasing list instead of -b -e -f */
  int nsizes;
} opt = {0, 8, 64u << 20, 2, 5, 0, 1, 0, 0, 1, 1, {0}, 0};

static void usage_exit(const char *what, const char *arg, int rank) {
  if (rank == 0)
    fprintf(stderr, "mpi_bench: %s: '%s'\n", what, arg ? arg : "(missing)");
  MPI_Finalize();
  exit(2);
}

static size_t parse_size(const char *s, int rank) {
  char *end;
  unsigned long long v = s ? strtoull(s, &end, 10) : 0;
  if (!s || end == s)
    usage_exit("bad size", s, rank);
  int shift = *end == 'k' || *end == 'K' ? 10 : *end == 'm' || *end == 'M' ? 20
            : *end == 'g' || *end == 'G' ? 30 : 0;
  end += shift != 0;
  end += *end == 'B' || *end == 'b';
  if (*end)
    usage_exit("bad size", s, rank);
  return (size_t)v << shift;
}

static int add_colls(const char *arg) {
  char list[256];
  snprintf(list, sizeof(list), "%s", arg);
  int any = 0;
  for (char *t = strtok(list, ","); t; t = strtok(NULL, ","), any = 1) {
    int k = 0;
    while (k < NKINDS && strcmp(t, names[k]))
      k++;
    if (!strcmp(t, "all"))
      opt.colls = (1u << NKINDS) - 1;
    else if (k < NKINDS)
      opt.colls |= 1u << k;
    else
      return 0;
  }
  return any;
}

static void parse_sizes(const char *arg, int rank) {
  char list[1024];
  snprintf(list, sizeof(list), "%s", arg ? arg : "");
  for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
    size_t s = parse_size(t, rank);
    if (opt.nsizes == 64 || !s || (opt.nsizes && s <= opt.sizes[opt.nsizes - 1]))
      usage_exit("--sizes: at most 64 positive sizes, increasing", arg, rank);
    opt.sizes[opt.nsizes++] = s;
  }
  if (!opt.nsizes)
    usage_exit("--sizes: no size", arg, rank);
}

static size_t next_size(size_t s) {
  for (int i = 0; i + 1 < opt.nsizes; i++)
    if (opt.sizes[i] == s)
      return opt.sizes[i + 1];
  if (opt.nsizes)
    return 0;
  return s > opt.maxb / opt.factor ? 0 : s * opt.factor;
}

static void parse_args(int argc, char **argv, int rank) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = 1;
    if (!strcmp(a, "-b")) opt.minb = parse_size(v, rank);
    else if (!strcmp(a, "-e")) opt.maxb = parse_size(v, rank);
    else if (!strcmp(a, "-f")) opt.factor = parse_size(v, rank);
    else if (!strcmp(a, "-n")) opt.iters = v && strcmp(v, "auto") ? atol(v) : 0;
    else if (!strcmp(a, "-w")) opt.warmup = v ? atol(v) : 0;
    else if (!strcmp(a, "-c")) opt.check = v ? atoi(v) : 1;
    else if (!strcmp(a, "--sizes")) parse_sizes(v, rank);
    else if (!strcmp(a, "--json")) opt.json = 1, takes = 0;
    else if (!strcmp(a, "--faults")) opt.faults = 1, takes = 0;
    else if (!strcmp(a, "--inplace")) opt.oop = 0, takes = 0;
    else if (!strcmp(a, "--outofplace")) opt.ip = 0, takes = 0;
    else if (a[0] != '-' && add_colls(a)) takes = 0;
    else usage_exit("unknown argument", a, rank);
    i += takes;
  }
  if (!opt.colls)
    opt.colls = 1u << ALLREDUCE;
  if (opt.nsizes) {
    opt.minb = opt.sizes[0];
    opt.maxb = opt.sizes[opt.nsizes - 1];
  }
  if (opt.factor < 2 || !opt.minb || opt.minb > opt.maxb || opt.iters < 0 || opt.warmup < 0 ||
      (!opt.oop && !opt.ip))
    usage_exit("bad sizes, counts or variants", "", rank);
}

static void call(const struct run *b, enum kind k, size_t count) {
  int c = (int)count; /* sizes up to 64 MiB of floats fit an int count */
  switch (k) {
  case ALLREDUCE:
    MPI_Allreduce(b->inplace ? MPI_IN_PLACE : b->send, b->recv, c, MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
    break;
  case ALLGATHER:
    MPI_Allgather(b->inplace ? MPI_IN_PLACE : b->send, c, MPI_FLOAT, b->recv, c, MPI_FLOAT,
                  MPI_COMM_WORLD);
    break;
  case REDUCE_SCATTER:
    MPI_Reduce_scatter_block(b->inplace ? MPI_IN_PLACE : b->send, b->recv, c, MPI_FLOAT,
                             MPI_SUM, MPI_COMM_WORLD);
    break;
  case BROADCAST:
    MPI_Bcast(!b->inplace && b->rank == 0 ? b->send : b->recv, c, MPI_FLOAT, 0, MPI_COMM_WORLD);
    if (!b->inplace && b->rank == 0) /* NCCL's out-of-place root ends with recv = send too */
      memcpy(b->recv, b->send, count * sizeof(float));
    break;
  default:
    break;
  }
}

/* tutti-bench's inputs: small integers, exact in float32 sums. */
static float input(int r, size_t j) { return (float)(((size_t)r * 5 + j * 3) % 7); }

/* One checked call; returns this rank's wrong elements. */
static double check(const struct run *b, enum kind k, size_t count) {
  size_t n = (size_t)b->n, in_n = k == REDUCE_SCATTER ? count * n : count;
  size_t out_n = k == ALLGATHER ? count * n : count;
  float *in = b->inplace ? b->recv : b->send;
  if (b->inplace && k == ALLGATHER)
    in = b->recv + (size_t)b->rank * count;
  memset(b->recv, 0xff, (k == REDUCE_SCATTER ? in_n : out_n) * sizeof(float)); /* NaNs */
  if (k == BROADCAST && b->rank != 0)
    in_n = 0; /* only the root's input is sent */
  for (size_t j = 0; j < in_n; j++)
    in[j] = input(b->rank, j);
  call(b, k, count);
  double bad = 0;
  for (size_t j = 0; j < out_n; j++) {
    double want = 0;
    if (k == ALLGATHER)
      want = input((int)(j / count), j % count);
    else if (k == BROADCAST)
      want = input(0, j);
    else
      for (int r = 0; r < b->n; r++)
        want += input(r, k == REDUCE_SCATTER ? (size_t)b->rank * count + j : j);
    bad += !(b->recv[j] == (float)want);
  }
  return bad;
}

static double minflt_now(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_minflt;
}

static double timed(const struct run *b, enum kind k, size_t count, long iters, double *flt) {
  MPI_Barrier(MPI_COMM_WORLD);
  double f0 = minflt_now(), t0 = MPI_Wtime();
  for (long i = 0; i < iters; i++)
    call(b, k, count);
  double m[2] = {MPI_Wtime() - t0, (minflt_now() - f0) / (double)iters};
  MPI_Allreduce(MPI_IN_PLACE, m, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (flt)
    *flt = m[1];
  return m[0];
}

/* tutti-bench's probe: the faster of two batches of the same calls. */
static double probe(const struct run *b, enum kind k, size_t count, long it) {
  double t = timed(b, k, count, it, NULL), u = timed(b, k, count, it, NULL);
  return u < t ? u : t;
}

static long calibrate(const struct run *b, enum kind k, size_t count) {
  long it = 1;
  double t = probe(b, k, count, it);
  while (t < PROBE_S && it < MAX_ITERS) {
    it = it * 10 < MAX_ITERS ? it * 10 : MAX_ITERS;
    t = probe(b, k, count, it);
  }
  double want = TARGET_S / (t / (double)it) + 0.5;
  return want < 1 ? 1 : want > MAX_ITERS ? MAX_ITERS : (long)want;
}

struct result {
  double us, algbw, busbw, wrong, minflt;
  long iters;
};

static void variant(const struct run *b, enum kind k, size_t count, size_t size,
                    struct result *r) {
  r->wrong = -1;
  if (opt.check) {
    r->wrong = check(b, k, count);
    MPI_Allreduce(MPI_IN_PLACE, &r->wrong, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  for (long i = 0; i < opt.warmup; i++)
    call(b, k, count);
  r->iters = opt.iters ? opt.iters : calibrate(b, k, count);
  r->us = timed(b, k, count, r->iters, &r->minflt) / (double)r->iters * 1e6;
  r->algbw = (double)size / r->us * 1e-3;
  r->busbw = r->algbw * (bus_steps[k] ? bus_steps[k] * (b->n - 1) / b->n : 1.0);
}

static void print_group(const struct result *r) {
  printf("  %10.2f %8.3f %8.3f", r->us, r->algbw, r->busbw);
  if (r->wrong < 0)
    printf(" %6s", "N/A");
  else
    printf(" %6.0f", r->wrong);
  if (opt.faults)
    printf(" %8.2f", r->minflt);
}

static void json_group(const char *name, const struct result *r) {
  printf(",\"%s\":{\"time_us\":%.4f,\"algbw_gbs\":%.6g,\"busbw_gbs\":%.6g,", name, r->us,
         r->algbw, r->busbw);
  if (r->wrong < 0)
    printf("\"wrong\":null,");
  else
    printf("\"wrong\":%.0f,", r->wrong);
  printf("\"minflt_per_op\":%.3f,\"iters\":%ld}", r->minflt, r->iters);
}

static double sweep(struct run *b, enum kind k, const char *lib) {
  size_t n = (size_t)b->n, prev = 0;
  double wrong = 0;
  if (b->rank == 0 && !opt.json) {
    printf("#\n# %s\n#%11s %13s %9s %6s %6s", names[k], "size", "count", "type", "redop",
           "root");
    for (int v = 0; v < 2; v++)
      if (v ? opt.ip : opt.oop)
        printf("  %10s %8s %8s %6s%s", "time", "algbw", "busbw", "#wrong",
               opt.faults ? "   minflt" : "");
    printf("\n");
  }
  for (size_t s = opt.minb; s; s = next_size(s)) {
    size_t count = s / sizeof(float) / (per_rank[k] ? n : 1);
    count = count ? count : 1;
    size_t size = count * sizeof(float) * (per_rank[k] ? n : 1);
    if (size == prev)
      continue;
    prev = size;
    struct result res[2];
    for (int v = 0; v < 2; v++) {
      if (!(v ? opt.ip : opt.oop))
        continue;
      b->inplace = v;
      variant(b, k, count, size, &res[v]);
      wrong += res[v].wrong > 0 ? res[v].wrong : 0;
    }
    if (b->rank != 0)
      continue;
    const char *op = k == ALLREDUCE || k == REDUCE_SCATTER ? "sum" : "none";
    int root = k == BROADCAST ? 0 : -1;
    if (opt.json) {
      printf("{\"collective\":\"%s\",\"nranks\":%d,\"transport\":\"%s\",\"size\":%zu,"
             "\"count\":%zu,\"type\":\"float32\",\"redop\":\"%s\",\"root\":%d",
             names[k], b->n, lib, size, size / sizeof(float), op, root);
      if (opt.oop)
        json_group("out_of_place", &res[0]);
      if (opt.ip)
        json_group("in_place", &res[1]);
      printf("}\n");
    } else {
      printf("%12zu %13zu %9s %6s %6d", size, size / sizeof(float), "float32", op, root);
      if (opt.oop)
        print_group(&res[0]);
      if (opt.ip)
        print_group(&res[1]);
      printf("\n");
    }
    fflush(stdout);
  }
  return wrong;
}

int main(int argc, char **argv) {
  struct run b = {0};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b.n);
  parse_args(argc, argv, b.rank);

  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len;
  MPI_Get_library_version(version, &len);
  const char *lib = strstr(version, "Open MPI") ? "openmpi"
                    : strstr(version, "MPICH")  ? "mpich"
                                                : "mpi";
  /* Both buffers for the largest size, faulted in now, as tutti-bench does. */
  size_t bytes = opt.maxb > sizeof(float) * (size_t)b.n ? opt.maxb : sizeof(float) * (size_t)b.n;
  bytes = (bytes + 4095) & ~(size_t)4095;
  b.send = aligned_alloc(4096, bytes);
  b.recv = aligned_alloc(4096, bytes);
  if (!b.send || !b.recv) {
    fprintf(stderr, "mpi_bench: rank %d: out of memory\n", b.rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(b.send, 0, bytes);
  memset(b.recv, 0, bytes);
  if (b.rank == 0 && !opt.json) {
    char *nl = strchr(version, '\n');
    if (nl)
      *nl = 0;
    printf("# mpi_bench (%s): nranks %d, dtype float32, warmup %ld, iters ", version, b.n,
           opt.warmup);
    printf(opt.iters ? "%ld\n" : "auto\n", opt.iters);
  }
  double wrong = 0;
  for (int k = 0; k < NKINDS; k++)
    if (opt.colls & (1u << k))
      wrong += sweep(&b, (enum kind)k, lib);
  if (b.rank == 0 && opt.check)
    fprintf(opt.json ? stderr : stdout, "# check: %s (%.0f wrong elements)\n",
            wrong ? "FAILED" : "all results correct", wrong);
  free(b.send);
  free(b.recv);
  MPI_Finalize();
  return wrong ? 1 : 0;
}
