/*
 * The check of a received message header against the one this rank posted, as a pure
 * function (bytes in, verdict and sentence out) so that progress.c and the header fuzzer
 * (tests/fuzz/) run the same code.
 */
#ifndef TUTTI_HEADER_CHECK_H
#define TUTTI_HEADER_CHECK_H

#include <stddef.h>

#include "transport/transport.h"

/* Compares the got_len bytes at got, a header received from the peer described by who, with
 * want, the header this rank posted for the message. TUTTI_SUCCESS when they describe the
 * same call and length; else the error the receiving rank fails with (TUTTI_ERR_REMOTE for a
 * corrupt or short header or a peer that failed, TUTTI_ERR_INVALID_USAGE when the ranks
 * disagree on the call) and, in msg, a sentence naming the field and both values. */
tutti_result_t tutti__hdr_check(const tutti_msg_hdr_t *want, const void *got, size_t got_len,
                                const char *who, char *msg, size_t msglen);

#endif
