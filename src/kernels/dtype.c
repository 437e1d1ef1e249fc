/*
 * Facts about dtypes and ops: validity, element size, names.
 */
#include "kernels.h"

static const struct {
  const char *name;
  size_t size;
} dtypes[] = {
    [TUTTI_INT8] = {"int8", 1},       [TUTTI_UINT8] = {"uint8", 1},
    [TUTTI_INT32] = {"int32", 4},     [TUTTI_UINT32] = {"uint32", 4},
    [TUTTI_INT64] = {"int64", 8},     [TUTTI_UINT64] = {"uint64", 8},
    [TUTTI_FLOAT16] = {"float16", 2}, [TUTTI_BFLOAT16] = {"bfloat16", 2},
    [TUTTI_FLOAT32] = {"float32", 4}, [TUTTI_FLOAT64] = {"float64", 8},
    [TUTTI_FLOAT8_E4M3] = {"float8_e4m3", 1}, [TUTTI_FLOAT8_E5M2] = {"float8_e5m2", 1},
    [TUTTI_INT16] = {"int16", 2},     [TUTTI_UINT16] = {"uint16", 2},
};

static const char *const ops[] = {
    [TUTTI_SUM] = "sum", [TUTTI_PROD] = "prod", [TUTTI_MIN] = "min",
    [TUTTI_MAX] = "max", [TUTTI_AVG] = "avg",  [TUTTI_BAND] = "band",
    [TUTTI_BOR] = "bor", [TUTTI_BXOR] = "bxor",
};

/* Validity is "inside the table", so the tables must end at the enums' last values. */
_Static_assert(sizeof dtypes / sizeof dtypes[0] == TUTTI_UINT16 + 1, "dtype table");
_Static_assert(sizeof ops / sizeof ops[0] == TUTTI_NUM_OPS, "op table");
/* tutti__dtype_is_int relies on the first integers being the enum's first values, and the
 * 16-bit ones (appended later) its last. */
_Static_assert(TUTTI_INT8 == 0 && TUTTI_UINT64 + 1 == TUTTI_FLOAT16, "integer dtypes first");
_Static_assert(TUTTI_INT16 == TUTTI_FLOAT8_E5M2 + 1, "16-bit integers last");

int tutti__dtype_is_int(int dtype) {
  return (dtype >= 0 && dtype <= TUTTI_UINT64) || dtype == TUTTI_INT16 || dtype == TUTTI_UINT16;
}

int tutti__dtype_valid(int dtype) {
  return dtype >= 0 && (size_t)dtype < sizeof dtypes / sizeof dtypes[0];
}

int tutti__op_valid(int op) { return op >= 0 && (size_t)op < sizeof ops / sizeof ops[0]; }

int tutti__op_supports(int op, int dtype) {
  if (!tutti__op_valid(op) || !tutti__dtype_valid(dtype)) return 0;
  int bitwise = op == TUTTI_BAND || op == TUTTI_BOR || op == TUTTI_BXOR;
  return !bitwise || tutti__dtype_is_int(dtype);
}

size_t tutti__dtype_size(tutti_dtype_t dtype) {
  /* 0 rather than a table overrun, so a caller that skipped validation sizes nothing. */
  return tutti__dtype_valid((int)dtype) ? dtypes[dtype].size : 0;
}

const char *tutti__dtype_name(int dtype) {
  return tutti__dtype_valid(dtype) ? dtypes[dtype].name : "?";
}

const char *tutti__op_name(int op) { return tutti__op_valid(op) ? ops[op] : "?"; }
