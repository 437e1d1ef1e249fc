/*
 * tutti-bench's command line: nccl-tests' flags (-b -e -f -i -n -w -d -o -r -c -z, and their
 * long names) plus the earlier tutti-bench spellings, which scripts already use.
 */
#include "bench.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const bench_op_names[5] = {"sum", "prod", "min", "max", "avg"};

static const char help[] =
    "usage: tutti-run -n N tutti-bench [COLL[,COLL...]|all] [options]\n"
    "       (or under mpirun, with TUTTI_ADDR or MASTER_ADDR/MASTER_PORT set, or torchrun)\n"
    "\n"
    "COLL: allreduce allgather reduce_scatter broadcast reduce, or all (default allreduce).\n"
    "  nccl-tests has one program per collective and uses -c for the check, so here the\n"
    "  collective is a positional name, or --coll COLL / -C COLL. For the older tutti-bench\n"
    "  spelling, -c COLL still selects a collective when its value is not 0 or 1.\n"
    "\n"
    "nccl-tests flags:\n"
    "  -b, --minbytes SIZE     smallest size (default 8); sizes take k, M, G (powers of 1024)\n"
    "  -e, --maxbytes SIZE     largest size (default 64M)\n"
    "  -f, --stepfactor N      multiply the size by N each step (default 2); 1: add -i\n"
    "  -i, --stepbytes SIZE    the increment when -f is 1 (default 1M); -i auto: -n auto\n"
    "  -n, --iters N|auto      timed calls per size; auto (default) aims at ~30 ms\n"
    "  -w, --warmup_iters N    untimed calls per size first (default 5)\n"
    "  -d, --datatype T        int8 uint8 int32 uint32 int64 uint64 float16 bfloat16 float32\n"
    "                          float64 (aliases char int float half bf16 double; default float32)\n"
    "  -o, --op OP             sum prod min max avg (default sum)\n"
    "  -r, --root R            root of broadcast and reduce (default 0)\n"
    "  -c, --check 0|1         check every variant of every size against values computed here\n"
    "                          (default 1, as nccl-tests); --check alone means 1\n"
    "  -z, --blocking 0|1      1 (default): blocking calls, as an MPI program makes them;\n"
    "                          0: the non-blocking entry points, up to 8 calls in flight\n"
    "\n"
    "Columns, as nccl-tests: size count type redop root, then for out-of-place and in-place\n"
    "each: time algbw busbw #wrong. size is the whole buffer (all-gather's output, reduce-\n"
    "scatter's input); time is the mean per call of the slowest rank; algbw = size/time;\n"
    "busbw = algbw x 2(n-1)/n for all-reduce, x (n-1)/n for all-gather and reduce-scatter,\n"
    "x 1 for broadcast and reduce. 1 GB/s = 1e9 B/s.\n"
    "\n"
    "tutti-bench options:\n"
    "  --sizes S1,S2,...       exactly these sizes, increasing (instead of -b -e -f -i)\n"
    "  --inplace | --outofplace   time only that variant (default both)\n"
    "  --faults                add minflt: minor page faults per call (getrusage ru_minflt\n"
    "                          over the timed calls / calls, the most of any rank; all threads)\n"
    "                          and allocs: malloc-family calls per call (counted by this\n"
    "                          program's own malloc; -1 in sanitizer builds)\n"
    "  --roofline              first measure, on all ranks at once and for every size, memcpy\n"
    "                          bandwidth (copy) and float32 c = a + b bandwidth in output bytes\n"
    "                          (reduce), the slowest rank's; then add to each variant the busbw\n"
    "                          bound at that size and the % of it achieved. Bounds:\n"
    "                            broadcast, all-gather:    copy (each rank must copy the bytes\n"
    "                                                      it lacks once)\n"
    "                            reduce-scatter, reduce:   reduce ((n-1) passes over S/n each)\n"
    "                            all-reduce:               2 / (1/reduce + 1/copy)\n"
    "                                                      (a reduce-scatter, then an all-gather)\n"
    "  --json                  one JSON object per row (both variants, roofline, minflt)\n"
    "  --csv                   one CSV line per variant\n"
    "  -h, --help              this text\n"
    "\n"
    "Exit status: 0; 1 if a check finds a wrong element or a call fails; 2 for bad usage.\n";

void bench_bad_usage(const char *what, const char *arg) {
  /* Every launcher's rank variable: complain once, from rank 0, not once per rank. */
  static const char *const vars[] = {"TUTTI_RANK", "RANK", "OMPI_COMM_WORLD_RANK",
                                     "PMI_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
    const char *r = getenv(vars[i]);
    if (r && *r && atoi(r) != 0)
      exit(2);
  }
  fprintf(stderr, "tutti-bench: %s: '%s'\n(tutti-bench --help lists the options)\n", what,
          arg ? arg : "(missing)");
  exit(2);
}

/* "64M" -> 67108864; k, M and G are powers of 1024, as in nccl-tests. */
static size_t parse_size(const char *s) {
  char *end;
  unsigned long long v = s ? strtoull(s, &end, 10) : 0;
  if (!s || end == s || *s == '-')
    bench_bad_usage("bad size", s);
  int shift = *end == 'k' || *end == 'K' ? 10 : *end == 'm' || *end == 'M' ? 20
            : *end == 'g' || *end == 'G' ? 30 : 0;
  end += shift != 0;
  end += *end == 'B' || *end == 'b';
  if (*end || v > (SIZE_MAX >> shift))
    bench_bad_usage("bad size", s);
  return (size_t)v << shift;
}

static long parse_count(const char *s, long min) {
  char *end;
  long v = s ? strtol(s, &end, 10) : 0;
  if (!s || end == s || *end || v < min)
    bench_bad_usage("bad number", s);
  return v;
}

static int is_bool(const char *s) { return s && (!strcmp(s, "0") || !strcmp(s, "1")); }

/* Adds each name of a comma-separated list to o->colls; 0 if a name is unknown. */
static int add_colls(struct bench_opts *o, const char *arg) {
  char list[256]; /* a copy: strtok must not cut argv, which the header echoes */
  snprintf(list, sizeof(list), "%s", arg ? arg : "");
  int any = 0;
  for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ","), any = 1) {
    int i = 0;
    while (i < bench_ncolls && strcmp(tok, bench_colls[i].name) != 0)
      i++;
    if (strcmp(tok, "all") == 0)
      o->colls = (1u << bench_ncolls) - 1;
    else if (i < bench_ncolls)
      o->colls |= 1u << i;
    else
      return 0;
  }
  return any;
}

/* --sizes 8,1k,64k: an increasing list of at most 64 sizes. */
static void parse_sizes(struct bench_opts *o, const char *arg) {
  char list[1024];
  snprintf(list, sizeof(list), "%s", arg ? arg : "");
  o->nsizes = 0;
  for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
    size_t s = parse_size(tok);
    if (o->nsizes == 64 || s == 0 || (o->nsizes && s <= o->sizes[o->nsizes - 1]))
      bench_bad_usage("--sizes: at most 64 positive sizes, increasing", arg);
    o->sizes[o->nsizes++] = s;
  }
  if (!o->nsizes)
    bench_bad_usage("--sizes: no size", arg);
}

/* The option names: short, nccl-tests' long, and ours (either may be NULL). */
static int is(const char *a, const char *s, const char *l1, const char *l2) {
  return (s && !strcmp(a, s)) || (l1 && !strcmp(a, l1)) || (l2 && !strcmp(a, l2));
}

void bench_parse_args(int argc, char **argv, struct bench_opts *o) {
  *o = (struct bench_opts){.minb = 8, .maxb = 64u << 20, .factor = 2, .step = 1u << 20,
                           .warmup = 5, .check = 1, .blocking = 1, .dt = TUTTI_FLOAT32,
                           .op = TUTTI_SUM, .cols = {.format = FMT_TEXT, .oop = 1, .ip = 1}};
  int only_ip = 0, only_oop = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = 1; /* most options take the next argument */
    if (is(a, "-h", "--help", NULL)) {
      fputs(help, stdout);
      exit(0);
    } else if (is(a, NULL, "--check", NULL)) { /* nccl-tests: --check 0|1; ours: --check */
      takes = is_bool(v);
      o->check = takes ? atoi(v) : 1;
    } else if (is(a, "-c", NULL, NULL)) {
      if (is_bool(v))
        o->check = atoi(v);
      else if (!add_colls(o, v)) /* the older -c COLL */
        bench_bad_usage("-c takes 0, 1 or a collective", v);
    } else if (is(a, "-C", "--coll", NULL)) {
      if (!add_colls(o, v))
        bench_bad_usage("unknown collective", v);
    } else if (is(a, NULL, "--inplace", NULL)) only_ip = 1, takes = 0;
    else if (is(a, NULL, "--outofplace", NULL)) only_oop = 1, takes = 0;
    else if (is(a, NULL, "--csv", NULL)) o->cols.format = FMT_CSV, takes = 0;
    else if (is(a, NULL, "--json", NULL)) o->cols.format = FMT_JSON, takes = 0;
    else if (is(a, NULL, "--faults", NULL)) o->cols.faults = 1, takes = 0;
    else if (is(a, NULL, "--roofline", NULL)) o->cols.roof = 1, takes = 0;
    else if (is(a, NULL, "--sizes", NULL)) parse_sizes(o, v);
    else if (is(a, "-b", "--minbytes", NULL)) o->minb = parse_size(v);
    else if (is(a, "-e", "--maxbytes", NULL)) o->maxb = parse_size(v);
    else if (is(a, "-f", "--stepfactor", NULL)) o->factor = (size_t)parse_count(v, 1);
    else if (is(a, "-i", "--stepbytes", NULL)) {
      if (v && !strcmp(v, "auto")) /* the older -i ITERS|auto */
        o->iters = 0;
      else if ((o->step = parse_size(v)) == 0)
        bench_bad_usage("-i: the step must be positive", v);
    } else if (is(a, "-n", "--iters", NULL))
      o->iters = v && !strcmp(v, "auto") ? 0 : parse_count(v, 1);
    else if (is(a, "-w", "--warmup_iters", NULL)) o->warmup = parse_count(v, 0);
    else if (is(a, "-r", "--root", NULL)) o->root = (int)parse_count(v, 0);
    else if (is(a, "-z", "--blocking", NULL)) {
      if (!is_bool(v))
        bench_bad_usage("-z takes 0 or 1", v);
      o->blocking = atoi(v);
    } else if (is(a, "-d", "--datatype", NULL)) {
      if (!v || bench_dtype_parse(v, &o->dt))
        bench_bad_usage("unknown dtype", v);
    } else if (is(a, "-o", "--op", NULL)) {
      int k = 0;
      while (k < 5 && (!v || strcmp(v, bench_op_names[k])))
        k++;
      if (k == 5)
        bench_bad_usage("unknown op", v);
      o->op = (tutti_op_t)k;
    } else if (a[0] != '-' && add_colls(o, a)) {
      takes = 0; /* the positional collective */
    } else
      bench_bad_usage(a[0] == '-' ? "unknown option" : "unknown collective", a);
    i += takes;
  }
  if (!o->colls)
    o->colls = 1u << B_ALLREDUCE;
  if (only_ip && only_oop)
    bench_bad_usage("--inplace and --outofplace exclude each other", "");
  o->cols.oop = !only_ip;
  o->cols.ip = !only_oop;
  if (o->nsizes) { /* the list wins over -b and -e, in any order */
    o->minb = o->sizes[0];
    o->maxb = o->sizes[o->nsizes - 1];
  }
  if (o->minb == 0) /* a call moves at least one element anyway */
    o->minb = 1;
  if (o->minb > o->maxb)
    bench_bad_usage("-b is larger than -e", "");
}
