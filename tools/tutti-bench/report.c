/*
 * The rows tutti-bench prints: nccl-tests' text table (the same columns in the same order, so
 * its parsers and eyes work unchanged, with the optional columns appended to each variant),
 * CSV (one line per variant), and JSON (one object per row). Only rank 0 calls these.
 */
#include "bench.h"

#include <stdio.h>

/* Column headers of one variant (out of place or in place), each line padded alike. */
static void group_header(const struct bench_columns *k, int line) {
  static const char *const base[2][4] = {
      {"time", "algbw", "busbw", "#wrong"}, {"(us)", "(GB/s)", "(GB/s)", ""}};
  printf("  %10s %8s %8s %6s", base[line][0], base[line][1], base[line][2], base[line][3]);
  if (k->faults)
    printf(" %8s %8s", line == 0 ? "minflt" : "(/op)", line == 0 ? "allocs" : "(/op)");
  if (k->roof)
    printf(" %8s %6s", line == 0 ? "bound" : "(GB/s)", line == 0 ? "%bound" : "");
}

static int group_width(const struct bench_columns *k) {
  return 2 + 10 + 9 + 9 + 7 + (k->faults ? 18 : 0) + (k->roof ? 16 : 0);
}

void bench_print_header(const struct bench_columns *k, const struct bench_coll *c) {
  if (k->format != FMT_TEXT)
    return;
  printf("#\n# %s\n#%56s", c->name, "");
  int w = group_width(k);
  if (k->oop)
    printf("%*s", -w, "  out-of-place");
  if (k->ip)
    printf("%*s", -w, "  in-place");
  for (int line = 0; line < 2; line++) {
    if (line == 0)
      printf("\n#%11s %13s %9s %6s %6s", "size", "count", "type", "redop", "root");
    else
      printf("\n#%11s %13s %9s %6s %6s", "(B)", "(elements)", "", "", "");
    for (int v = 0; v < 2; v++)
      if (v == 0 ? k->oop : k->ip)
        group_header(k, line);
  }
  printf("\n");
}

static double pct(const struct bench_result *r, double bound) {
  return bound > 0 ? 100.0 * r->busbw / bound : 0;
}

static void text_group(const struct bench_columns *k, const struct bench_result *r,
                       double bound) {
  if (r->skipped) { /* not measured (no in-place form): the columns stay aligned */
    printf("  %10s %8s %8s %6s", "N/A", "N/A", "N/A", "N/A");
    if (k->faults)
      printf(" %8s %8s", "N/A", "N/A");
    if (k->roof)
      printf(" %8s %6s", "N/A", "N/A");
    return;
  }
  printf("  %10.2f %8.3f %8.3f", r->us, r->algbw, r->busbw);
  if (r->wrong < 0)
    printf(" %6s", "N/A");
  else
    printf(" %6.0f", r->wrong);
  if (k->faults)
    printf(" %8.2f %8.2f", r->minflt, r->allocs);
  if (k->roof)
    printf(" %8.3f %5.1f%%", bound, pct(r, bound));
}

static void json_group(const char *name, const struct bench_result *r, double bound) {
  printf(",\"%s\":{\"time_us\":%.4f,\"algbw_gbs\":%.6g,\"busbw_gbs\":%.6g,", name, r->us,
         r->algbw, r->busbw);
  if (r->wrong < 0)
    printf("\"wrong\":null,");
  else
    printf("\"wrong\":%.0f,", r->wrong);
  printf("\"minflt_per_op\":%.3f,\"allocs_per_op\":%.3f,\"iters\":%ld", r->minflt, r->allocs,
         r->iters);
  if (bound > 0)
    printf(",\"bound_gbs\":%.4f,\"pct_of_bound\":%.2f", bound, pct(r, bound));
  printf("}");
}

static void csv_line(const struct bench_row *w, const struct bench_result *r, int inplace,
                     double bound) {
  printf("%s,%d,%zu,%zu,%s,%s,%d,%d,%ld,%.3f,%.4f,%.4f,%.0f,%.3f,%.3f,", w->coll->name,
         w->nranks, w->size, w->count, w->type, w->op, w->root, inplace, r->iters, r->us,
         r->algbw, r->busbw, r->wrong, r->minflt, r->allocs);
  if (bound > 0)
    printf("%.4f,%.2f\n", bound, pct(r, bound));
  else
    printf(",\n");
}

void bench_print_row(const struct bench_columns *k, const struct bench_row *w) {
  /* The variants' bounds differ where out of place copies the rank's own block too. */
  double oop = w->roof ? bench_roof_bound(w->coll, w->roof, w->nranks, 0) : 0;
  double ip = w->roof ? bench_roof_bound(w->coll, w->roof, w->nranks, 1) : 0;
  switch (k->format) {
  case FMT_TEXT:
    printf("%12zu %13zu %9s %6s %6d", w->size, w->count, w->type, w->op, w->root);
    if (w->oop)
      text_group(k, w->oop, oop);
    if (w->ip)
      text_group(k, w->ip, ip);
    printf("\n");
    break;
  case FMT_CSV:
    if (w->oop && !w->oop->skipped)
      csv_line(w, w->oop, 0, oop);
    if (w->ip && !w->ip->skipped)
      csv_line(w, w->ip, 1, ip);
    break;
  case FMT_JSON:
    printf("{\"collective\":\"%s\",\"nranks\":%d,\"transport\":\"%s\",\"size\":%zu,"
           "\"count\":%zu,\"type\":\"%s\",\"redop\":\"%s\",\"root\":%d",
           w->coll->name, w->nranks, w->transport, w->size, w->count, w->type, w->op, w->root);
    if (w->roof)
      printf(",\"roofline\":{\"copy_gbs\":%.4f,\"reduce_gbs\":%.4f,\"bound_gbs\":%.4f}",
             w->roof->copy_gbs, w->roof->reduce_gbs, w->oop && !w->oop->skipped ? oop : ip);
    if (w->oop && !w->oop->skipped)
      json_group("out_of_place", w->oop, oop);
    if (w->ip && !w->ip->skipped)
      json_group("in_place", w->ip, ip);
    printf("}\n");
    break;
  }
  fflush(stdout);
}
