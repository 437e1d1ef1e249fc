/*
 * Small socket helpers for bootstrap and the TCP transport: IPv4 listen/connect with
 * deadlines, and whole-buffer reads and writes that never block past a deadline. Each
 * returns a tutti_result_t and, on failure, a reason in err.
 */
#ifndef TUTTI_SOCK_H
#define TUTTI_SOCK_H

#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"

/* Listens on ip:port (network order; port 0 picks one) and returns the bound port. The
 * backlog is at least SOMAXCONN, whatever backlog asks. */
tutti_result_t tutti__sock_listen(uint32_t ip, uint16_t port, int backlog, int *fd,
                                  uint16_t *bound_port, char *err, size_t errlen);
/* Connects to ip:port; connection refusals are retried until the deadline when retry. */
tutti_result_t tutti__sock_connect(uint32_t ip, uint16_t port, int64_t deadline, int retry,
                                   int *fd, char *err, size_t errlen);
/* Accepts one connection before the deadline. */
tutti_result_t tutti__sock_accept(int lfd, int64_t deadline, int *fd, char *err, size_t errlen);
tutti_result_t tutti__sock_send_all(int fd, const void *buf, size_t len, int64_t deadline,
                                    char *err, size_t errlen);
/* TUTTI_ERR_REMOTE if the peer closes before len bytes. */
tutti_result_t tutti__sock_recv_all(int fd, void *buf, size_t len, int64_t deadline,
                                    char *err, size_t errlen);
/* The IPv4 address (network order) of the first interface that spec selects, in NCCL's
 * NCCL_SOCKET_IFNAME syntax: "eth" (any interface whose name starts so), "=eth0" (exactly),
 * "^docker,lo" (any but those prefixes), "^=docker0" (any but exactly those); lists are
 * comma-separated. Loopback is skipped by an exclusion list unless nothing else matches. */
tutti_result_t tutti__sock_ifaddr(const char *spec, uint32_t *ip, char *err, size_t errlen);
/* 1 when interface name is selected by spec (syntax above), else 0. */
int tutti__ifname_match(const char *spec, const char *name);
/* Resolves a host name or dotted quad to an IPv4 address (network order). */
tutti_result_t tutti__sock_resolve(const char *host, uint32_t *ip, char *err, size_t errlen);
void tutti__sock_nodelay_nonblock(int fd);
/* Sends, without blocking, what the non-blocking socket fd takes of the nparts buffers laid
 * end to end, from byte *sent on, and advances *sent. Returns 1 when all is out, 0 when the
 * socket is full (call again when it is writable), -1 when the peer is gone. */
int tutti__sock_send_parts(int fd, const void *const *bases, const size_t *lens, int nparts,
                           size_t *sent);
/* "a.b.c.d:port" */
const char *tutti__sock_addr_str(uint32_t ip, uint16_t port, char *buf, size_t len);

#endif
