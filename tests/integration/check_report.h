/*
 * check_report: the reporting scaffolding shared by ops_check and nb_check (sections with a
 * watchdog, pass/fail counting with a per-section report cap, calls that must succeed, the
 * --only filter, start-up and the final summary). Every line it prints starts with the program
 * name given to check_init.
 */
#ifndef TUTTI_CHECK_REPORT_H
#define TUTTI_CHECK_REPORT_H

#include <stddef.h>

#include "tutti.h"

#define WATCHDOG_S 120
#define MAX_REPORTS 12 /* failure lines printed per rank and section */

/* Names the program in every line, sets the widths of the section name and check count in the
 * per-section lines, makes stdout line-buffered and installs the watchdog's SIGALRM handler. */
void check_init(const char *prog, int name_width, int count_width);

/* Section "init", then tutti_comm_init_env, rank and size (at most max_ranks) and the transport
 * name from TUTTI_TRANSPORT ("auto" when unset). Returns 0, or the exit status on failure. */
int check_start(tutti_comm_t *comm, int *rank, int *nranks, int max_ranks,
                const char **transport);

/* Section "end": sums the failure counts over all ranks, prints this rank's summary (suffix is
 * appended after the transport name when everything passed), destroys the communicator and
 * returns the exit status. */
int check_finish(const char *transport, const char *suffix);

/* Sections (each re-arms the watchdog). */
void begin_section(const char *name);
void end_section(void);
/* 1 if name is in the comma-separated list only (or only is NULL). */
int want_section(const char *only, const char *name);

/* One check that passed / failed (a failure line is printed, at most MAX_REPORTS a section). */
void pass(void);
__attribute__((format(printf, 1, 2))) void fail(const char *fmt, ...);

/* The communicator's last error, or "(no last error)". */
const char *last_error(void);

/* A call that must succeed. On failure it is a failed check; unless the failure is one a rank
 * decides alone before communicating (invalid argument, "no algorithm implements"), the
 * communicator can no longer be trusted and the program stops. Returns 1 on success. */
int call_ok(tutti_result_t rc, const char *desc);

/* malloc that exits on failure (and never asks for 0 bytes). */
void *xmalloc(size_t bytes);

#endif
