/* Making a communicator once the rendezvous address is known (comm.c), for the calls that
 * build new communicators from old ones (shrink.c). */
#ifndef TUTTI_COMM_CREATE_H
#define TUTTI_COMM_CREATE_H

#include "core/internal.h"

/* Joins the rendezvous at ip:port (network order) as rank of nranks, proving secret, and
 * connects the transports. op names the API call in messages. The configuration is inherit's
 * when given (a communicator made from another keeps its settings), else the environment's.
 * wait_for_root: keep trying while nothing listens at ip:port (it may start later), rather
 * than failing at the first refusal. */
tutti_result_t tutti__comm_create(tutti_comm_t *out, int nranks, int rank, uint32_t ip,
                                  uint16_t port, const uint8_t *secret, const char *op,
                                  const tutti_config_t *inherit, int wait_for_root);

/* The communicator's memory and configuration (inherit's, else the environment's), with
 * nothing connected: tutti__comm_create's first half, and how the in-memory transport
 * (transport/mem.c) makes its thread ranks. On failure nothing is left allocated. */
tutti_result_t tutti__comm_alloc(int nranks, int rank, const char *op,
                                 const tutti_config_t *inherit, struct tutti_comm **out);
/* Frees a communicator and everything it holds (tutti_comm_destroy). */
void tutti__comm_free(struct tutti_comm *comm);

#endif
