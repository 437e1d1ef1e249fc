/*
 * tutti-bench's command line (getopt_long): every flag of nccl-tests' common.cu with its long
 * name, the earlier tutti-bench spellings, which scripts already use, and the nccl-tests
 * program names (all_reduce_perf, ...) recognised from argv[0].
 */
#include "bench.h"

#include <getopt.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const bench_op_names[5] = {"sum", "prod", "min", "max", "avg"};

static const char help[] =
    "usage: tutti-run -n N tutti-bench [COLL[,COLL...]|all] [options]\n"
    "       (or under mpirun, with TUTTI_ADDR or MASTER_ADDR/MASTER_PORT set, or torchrun)\n"
    "\n"
    "COLL: allreduce allgather reduce_scatter broadcast reduce alltoall sendrecv gather\n"
    "  scatter, or all (default allreduce). Started as one of nccl-tests' programs\n"
    "  (all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf\n"
    "  alltoall_perf sendrecv_perf gather_perf scatter_perf: installed as links to\n"
    "  tutti-bench) it runs that collective. Else the collective is a positional name, or\n"
    "  --coll COLL; -c COLL and -C COLL (the older spellings) still select one when the value\n"
    "  is not 0 or 1. alltoall, sendrecv (to rank+1, from rank-1), gather and scatter run out\n"
    "  of place only: their in-place columns show N/A.\n"
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
    "  -N, --run_cycles N      run the whole sweep N times (0: until stopped; default 1)\n"
    "  -T, --timeout SEC       fail a call that takes more than SEC seconds (0: TUTTI_TIMEOUT)\n"
    "  -R, --local_register 0|1  1: send and receive buffers from tutti_mem_alloc (registered:\n"
    "                          the single-copy algorithm reads peers' buffers in place);\n"
    "                          0 (default): aligned_alloc\n"
    "  -g, --ngpus 1  -t, --nthreads 1   one CPU rank per process: any other value is refused\n"
    "  accepted and ignored (GPU-only, or timing details that do not apply here):\n"
    "    -a/--average (the time is always the slowest rank's, nccl-tests' -a 3), -m/--agg_iters,\n"
    "    -p/--parallel_init, -y/--stream_null, -G/--cudagraph, -C/--report_cputime 0|1,\n"
    "    -S/--report_timestamps, -x/--cta_policy, -D/--device_\n"
    "    implementation, -V/--device_cta_count, -M/--memory_report, -u/--unalign, -s, -k, -l,\n"
    "    -O/--out_of_place; -J/--output_file FILE is ignored with a note (use --json)\n"
    "\n"
    "Columns, as nccl-tests: size count type redop root, then for out-of-place and in-place\n"
    "each: time algbw busbw #wrong. size is the whole buffer (all-gather's output, reduce-\n"
    "scatter's input); time is the mean per call of the slowest rank; algbw = size/time;\n"
    "busbw = algbw x 2(n-1)/n for all-reduce, x (n-1)/n for all-gather, reduce-scatter,\n"
    "alltoall, gather and scatter, x 1 for broadcast, reduce and sendrecv. 1 GB/s = 1e9 B/s.\n"
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
    "                            broadcast:                copy (each receiver must copy the\n"
    "                                                      S bytes once)\n"
    "                            all-gather, gather:       copy in place (each rank must copy\n"
    "                                                      the bytes it lacks once); out of\n"
    "                                                      place (n-1)/n * copy (its own block\n"
    "                                                      too: S bytes a rank)\n"
    "                            reduce-scatter, reduce:   reduce ((n-1) passes over S/n each)\n"
    "                            all-reduce:               2 / (1/reduce + 1/copy)\n"
    "                                                      (a reduce-scatter, then an all-gather)\n"
    "  --json                  one JSON object per row (both variants, roofline, minflt)\n"
    "  --csv                   one CSV line per variant\n"
    "  -h, --help              this text\n"
    "\n"
    "The run ends as nccl-tests' does: \"# Out of bounds values : N OK|FAILED\" (wrong elements\n"
    "over every check) and \"# Avg bus bandwidth    : X\" (the mean busbw of every row and\n"
    "variant printed, GB/s).\n"
    "\n"
    "Exit status: 0; 1 if a check finds a wrong element or a call fails; 2 for bad usage.\n";

void bench_bad_usage(const char *what, const char *arg) {
  /* Every rank says it (the launcher prefixes each line with the rank): a launcher stops the
   * other ranks when the first one exits, so a message left to rank 0 alone could be lost. */
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

/* nccl-tests' program names and the collective each runs. */
static const struct { const char *prog, *coll; } nccl_names[] = {
    {"all_reduce_perf", "allreduce"},   {"all_gather_perf", "allgather"},
    {"reduce_scatter_perf", "reduce_scatter"}, {"broadcast_perf", "broadcast"},
    {"reduce_perf", "reduce"},          {"alltoall_perf", "alltoall"},
    {"sendrecv_perf", "sendrecv"},      {"gather_perf", "gather"},
    {"scatter_perf", "scatter"},
};

static void coll_from_name(struct bench_opts *o, const char *argv0) {
  char copy[256];
  snprintf(copy, sizeof(copy), "%s", argv0 ? argv0 : "");
  const char *base = basename(copy);
  for (size_t i = 0; i < sizeof(nccl_names) / sizeof(nccl_names[0]); i++)
    if (!strcmp(base, nccl_names[i].prog))
      add_colls(o, nccl_names[i].coll);
}

/* Options without a short form in nccl-tests (or ours only) get codes above 255. */
enum { O_CHECK = 256, O_INPLACE, O_OUTOFPLACE, O_CSV, O_JSON, O_FAULTS, O_ROOFLINE, O_SIZES,
       O_COLL };

static const struct option longopts[] = {
    {"nthreads", required_argument, 0, 't'},   {"ngpus", required_argument, 0, 'g'},
    {"minbytes", required_argument, 0, 'b'},   {"maxbytes", required_argument, 0, 'e'},
    {"stepbytes", required_argument, 0, 'i'},  {"stepfactor", required_argument, 0, 'f'},
    {"iters", required_argument, 0, 'n'},      {"agg_iters", required_argument, 0, 'm'},
    {"warmup_iters", required_argument, 0, 'w'}, {"run_cycles", required_argument, 0, 'N'},
    {"parallel_init", required_argument, 0, 'p'}, {"check", optional_argument, 0, O_CHECK},
    {"op", required_argument, 0, 'o'},         {"datatype", required_argument, 0, 'd'},
    {"root", required_argument, 0, 'r'},       {"blocking", required_argument, 0, 'z'},
    {"stream_null", required_argument, 0, 'y'}, {"timeout", required_argument, 0, 'T'},
    {"cudagraph", required_argument, 0, 'G'},  {"report_cputime", required_argument, 0, 'C'},
    {"report_timestamps", required_argument, 0, 'S'}, {"output_file", required_argument, 0, 'J'},
    {"average", required_argument, 0, 'a'},    {"local_register", required_argument, 0, 'R'},
    {"cta_policy", required_argument, 0, 'x'}, {"device_implementation", required_argument, 0, 'D'},
    {"device_cta_count", required_argument, 0, 'V'}, {"memory_report", required_argument, 0, 'M'},
    {"memory", required_argument, 0, 'M'},     {"unalign", required_argument, 0, 'u'},
    {"out_of_place", required_argument, 0, 'O'}, {"tbytes", required_argument, 0, 's'},
    {"side_comp", required_argument, 0, 'k'},  {"replay", required_argument, 0, 'l'},
    {"coll", required_argument, 0, O_COLL},    {"inplace", no_argument, 0, O_INPLACE},
    {"outofplace", no_argument, 0, O_OUTOFPLACE}, {"csv", no_argument, 0, O_CSV},
    {"json", no_argument, 0, O_JSON},          {"faults", no_argument, 0, O_FAULTS},
    {"roofline", no_argument, 0, O_ROOFLINE},  {"sizes", required_argument, 0, O_SIZES},
    {"help", no_argument, 0, 'h'},             {0, 0, 0, 0},
};

/* Leading '-': non-options come back in order as code 1, so "--check 0" can be told from
 * "--check allreduce"; leading ':' after it: a missing value is reported here. */
static const char shortopts[] = "-:t:g:b:e:i:f:n:m:w:N:p:c:o:d:r:z:y:T:G:C:S:J:a:R:x:D:V:M:u:O:s:k:l:h";

/* -c/-C VALUE: 0 or 1 sets *flag (the check; -C's cputime report, which does not apply), else
 * the value is a collective (the older spelling). */
static void bool_or_coll(struct bench_opts *o, const char *v, int *flag, const char *what) {
  if (is_bool(v)) {
    if (flag)
      *flag = atoi(v);
  } else if (!add_colls(o, v)) {
    bench_bad_usage(what, v);
  }
}

/* -g and -t: nccl-tests' devices and threads per process. tutti is one rank per process. */
static void only_one(const char *opt, const char *v) {
  if (parse_count(v, 0) != 1) {
    char what[160];
    snprintf(what, sizeof(what), "%s: tutti runs one CPU rank per process (start more ranks "
             "with tutti-run -n or mpirun -n instead), so only 1 is accepted", opt);
    bench_bad_usage(what, v);
  }
}

void bench_parse_args(int argc, char **argv, struct bench_opts *o) {
  *o = (struct bench_opts){.minb = 8, .maxb = 64u << 20, .factor = 2, .step = 1u << 20,
                           .warmup = 5, .check = 1, .blocking = 1, .dt = TUTTI_FLOAT32,
                           .op = TUTTI_SUM, .cycles = 1,
                           .cols = {.format = FMT_TEXT, .oop = 1, .ip = 1}};
  int only_ip = 0, only_oop = 0, bare_check = 0, c;
  coll_from_name(o, argv[0]);
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
    const char *v = optarg;
    int after_bare_check = bare_check;
    bare_check = 0;
    switch (c) {
    case 'h': fputs(help, stdout); exit(0);
    case 1: /* a positional: the collective, or the value of a bare --check */
      if (after_bare_check && is_bool(v))
        o->check = atoi(v);
      else if (!add_colls(o, v))
        bench_bad_usage(v[0] == '-' ? "unknown option" : "unknown collective", v);
      break;
    case O_CHECK:
      if (v) {
        if (!is_bool(v))
          bench_bad_usage("--check takes 0 or 1", v);
        o->check = atoi(v);
      } else {
        o->check = 1, bare_check = 1;
      }
      break;
    case 'c': bool_or_coll(o, v, &o->check, "-c takes 0, 1 or a collective"); break;
    case 'C': bool_or_coll(o, v, NULL, "-C takes 0, 1 or a collective"); break;
    case O_COLL:
      if (!add_colls(o, v))
        bench_bad_usage("unknown collective", v);
      break;
    case O_INPLACE: only_ip = 1; break;
    case O_OUTOFPLACE: only_oop = 1; break;
    case O_CSV: o->cols.format = FMT_CSV; break;
    case O_JSON: o->cols.format = FMT_JSON; break;
    case O_FAULTS: o->cols.faults = 1; break;
    case O_ROOFLINE: o->cols.roof = 1; break;
    case O_SIZES: parse_sizes(o, v); break;
    case 'b': o->minb = parse_size(v); break;
    case 'e': o->maxb = parse_size(v); break;
    case 'f': o->factor = (size_t)parse_count(v, 1); break;
    case 'i':
      if (!strcmp(v, "auto")) /* the older -i ITERS|auto */
        o->iters = 0;
      else if ((o->step = parse_size(v)) == 0)
        bench_bad_usage("-i: the step must be positive", v);
      break;
    case 'n': o->iters = !strcmp(v, "auto") ? 0 : parse_count(v, 1); break;
    case 'w': o->warmup = parse_count(v, 0); break;
    case 'r': o->root = (int)parse_count(v, 0); break;
    case 'N': o->cycles = parse_count(v, 0); break;
    case 'T': o->timeout_s = (double)parse_count(v, 0); break;
    case 'g': only_one("-g (GPUs per process)", v); break;
    case 't': only_one("-t (threads per process)", v); break;
    case 'z':
      if (!is_bool(v))
        bench_bad_usage("-z takes 0 or 1", v);
      o->blocking = atoi(v);
      break;
    case 'd':
      if (bench_dtype_parse(v, &o->dt))
        bench_bad_usage("unknown dtype", v);
      break;
    case 'o': {
      int k = 0;
      while (k < 5 && strcmp(v, bench_op_names[k]))
        k++;
      if (k == 5)
        bench_bad_usage("unknown op", v);
      o->op = (tutti_op_t)k;
      break;
    }
    case 'J': o->json_file_ignored = v; break;
    case 'R': o->reg = strcmp(v, "0") != 0; break;
    case 'a': case 'm': case 'p': case 'y': case 'G': case 'S': case 'x': case 'D':
    case 'V': case 'M': case 'u': case 'O': case 's': case 'k': case 'l':
      break; /* accepted, no effect here (see --help) */
    case ':': {
      char opt[64];
      snprintf(opt, sizeof(opt), "%s", argv[optind - 1]);
      bench_bad_usage("the option needs a value", opt);
    }
    default: bench_bad_usage("unknown option", argv[optind - 1]);
    }
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
