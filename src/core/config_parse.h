/*
 * Configuration parsing as a pure function: values come through a lookup callback rather than
 * getenv, so tests and the config fuzzer (tests/fuzz/) feed any environment to the same code
 * tutti__config_load runs.
 */
#ifndef TUTTI_CONFIG_PARSE_H
#define TUTTI_CONFIG_PARSE_H

#include <stddef.h>

#include "core/internal.h"

/* The value of variable name, or NULL when it is unset. */
typedef const char *(*tutti_config_lookup_fn)(const char *name, void *ctx);

/* Fills cfg from the variables lookup returns (unset or empty ones take the table's
 * default). TUTTI_ERR_INVALID_ARGUMENT with the variable and value in err for a malformed one. */
tutti_result_t tutti__config_parse(tutti_config_lookup_fn lookup, void *ctx, tutti_config_t *cfg,
                                   char *err, size_t errlen);

#endif
