/*
 * Hang forensics: what this rank waits for, peer by peer, in words ("rank 5 never posted call
 * #812 (allreduce)"). Logged on a timeout, and on SIGUSR1 without stopping anything.
 */
#ifndef TUTTI_FORENSICS_H
#define TUTTI_FORENSICS_H

#include <stddef.h>

#include "core/internal.h"

/* One sentence on what this rank waits for from peer into buf: 1 if it waits for something,
 * 0 (and a sentence on where the peer stands) if not. Call from the thread that drives comm. */
int tutti__forensics_peer(const struct tutti_comm *comm, int peer, char *buf, size_t len);

/* Logs the whole report (one line per peer, pending ones first, at most one screen); why says
 * what triggered it. always: write it even when logging is off (an explicit request). */
void tutti__forensics_log(const struct tutti_comm *comm, const char *why, int always);

/* Writes the report if SIGUSR1 arrived since comm's last one. Cheap; called by waits before
 * they sleep, so a hung rank answers within one sleep slice. */
void tutti__forensics_poll(struct tutti_comm *comm);

/* Installs the SIGUSR1 handler once per process, if comm's configuration asks for it and the
 * program has not installed its own (a library must not take a signal the program uses), and
 * makes comm answer only signals that arrive from now on. */
void tutti__forensics_attach(struct tutti_comm *comm);

/* The same installation before a communicator exists: a SIGUSR1 during the rendezvous must
 * be reported, not kill the process (the signal's default action). */
void tutti__forensics_install(const tutti_config_t *cfg);

/* For waits without a communicator (the rendezvous): the number of SIGUSR1 so far, and
 * whether one arrived since *seen was taken (updating it). Each waiter keeps its own count. */
unsigned tutti__forensics_signals(void);
int tutti__forensics_requested(unsigned *seen);

#endif
