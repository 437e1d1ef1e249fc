#include "core/sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static tutti_result_t sys_err(char *err, size_t errlen, const char *what) {
  snprintf(err, errlen, "%s: %s", what, strerror(errno));
  return TUTTI_ERR_SYSTEM;
}

static int ms_left(int64_t deadline) {
  int64_t ms = (deadline - tutti__now_ns()) / 1000000;
  return ms < 0 ? 0 : ms > 1000 ? 1000 : (int)ms;
}

const char *tutti__sock_addr_str(uint32_t ip, uint16_t port, char *buf, size_t len) {
  char a[INET_ADDRSTRLEN];
  struct in_addr in = {.s_addr = ip};
  inet_ntop(AF_INET, &in, a, sizeof a);
  snprintf(buf, len, "%s:%u", a, (unsigned)ntohs(port));
  return buf;
}

tutti_result_t tutti__sock_listen(uint32_t ip, uint16_t port, int backlog, int *fd,
                                  uint16_t *bound_port, char *err, size_t errlen) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return sys_err(err, errlen, "socket");
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = port, .sin_addr.s_addr = ip};
  char a[64];
  if (bind(s, (struct sockaddr *)&sa, sizeof sa) != 0) {
    snprintf(err, errlen, "cannot listen on %s: %s", tutti__sock_addr_str(ip, port, a, sizeof a),
             strerror(errno));
    close(s);
    return TUTTI_ERR_SYSTEM;
  }
  socklen_t sl = sizeof sa;
  /* Every listener's backlog is at least SOMAXCONN (the kernel caps it there anyway), so it
   * never depends on the job's size and a burst of connections at a large n is not refused. */
  if (listen(s, backlog > SOMAXCONN ? backlog : SOMAXCONN) != 0 || getsockname(s, (struct sockaddr *)&sa, &sl) != 0) {
    close(s);
    return sys_err(err, errlen, "listen");
  }
  *fd = s;
  if (bound_port) *bound_port = sa.sin_port;
  return TUTTI_SUCCESS;
}

/* Waits for fd to become ready for events, up to the deadline. */
static tutti_result_t wait_fd(int fd, short events, int64_t deadline, const char *what,
                              char *err, size_t errlen) {
  for (;;) {
    struct pollfd p = {.fd = fd, .events = events};
    int rc = poll(&p, 1, ms_left(deadline));
    if (rc > 0) return TUTTI_SUCCESS;
    if (rc < 0 && errno != EINTR) return sys_err(err, errlen, "poll");
    if (tutti__now_ns() >= deadline) {
      snprintf(err, errlen, "timed out %s", what);
      return TUTTI_ERR_TIMEOUT;
    }
  }
}

tutti_result_t tutti__sock_connect(uint32_t ip, uint16_t port, int64_t deadline, int retry,
                                   int *fd, char *err, size_t errlen) {
  char a[64];
  tutti__sock_addr_str(ip, port, a, sizeof a);
  for (;;) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0) return sys_err(err, errlen, "socket");
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = port, .sin_addr.s_addr = ip};
    int rc = connect(s, (struct sockaddr *)&sa, sizeof sa);
    int e = rc == 0 ? 0 : errno;
    if (e == EINPROGRESS) {
      tutti_result_t r = wait_fd(s, POLLOUT, deadline, "connecting", err, errlen);
      if (r != TUTTI_SUCCESS) {
        close(s);
        snprintf(err, errlen, "timed out connecting to %s", a);
        return r;
      }
      socklen_t el = sizeof e;
      getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &el);
    }
    if (e == 0) {
      int fl = fcntl(s, F_GETFL);
      fcntl(s, F_SETFL, fl & ~O_NONBLOCK);
      *fd = s;
      return TUTTI_SUCCESS;
    }
    close(s);
    int transient = e == ECONNREFUSED || e == ECONNRESET || e == ETIMEDOUT || e == EAGAIN;
    if (!retry || !transient || tutti__now_ns() >= deadline) {
      snprintf(err, errlen, "cannot connect to %s: %s", a, strerror(e));
      return transient ? TUTTI_ERR_TIMEOUT : TUTTI_ERR_SYSTEM;
    }
    struct timespec nap = {0, 20 * 1000000}; /* the listener may not be up yet */
    nanosleep(&nap, NULL);
  }
}

tutti_result_t tutti__sock_accept(int lfd, int64_t deadline, int *fd, char *err, size_t errlen) {
  for (;;) {
    TRY(wait_fd(lfd, POLLIN, deadline, "waiting for connections", err, errlen));
    int s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (s >= 0) {
      *fd = s;
      return TUTTI_SUCCESS;
    }
    if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN)
      return sys_err(err, errlen, "accept");
  }
}

tutti_result_t tutti__sock_send_all(int fd, const void *buf, size_t len, int64_t deadline,
                                    char *err, size_t errlen) {
  const char *p = buf;
  while (len) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      TRY(wait_fd(fd, POLLOUT, deadline, "sending", err, errlen));
    } else {
      snprintf(err, errlen, "send failed: %s", strerror(errno));
      return TUTTI_ERR_REMOTE;
    }
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__sock_recv_all(int fd, void *buf, size_t len, int64_t deadline,
                                    char *err, size_t errlen) {
  char *p = buf;
  while (len) {
    ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
    } else if (n == 0) {
      snprintf(err, errlen, "connection closed by the other side");
      return TUTTI_ERR_REMOTE;
    } else if (errno == EAGAIN || errno == EINTR) {
      TRY(wait_fd(fd, POLLIN, deadline, "receiving", err, errlen));
    } else {
      snprintf(err, errlen, "recv failed: %s", strerror(errno));
      return TUTTI_ERR_REMOTE;
    }
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__sock_ifaddr(const char *spec, uint32_t *ip, char *err, size_t errlen) {
  struct ifaddrs *ifs;
  if (getifaddrs(&ifs) != 0) return sys_err(err, errlen, "getifaddrs");
  /* An exclusion list ("^docker") would select loopback first on most machines; like NCCL,
   * prefer any other match and fall back to loopback only when it is the one match. */
  int found = 0, found_lo = 0;
  uint32_t lo_ip = 0;
  for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !tutti__ifname_match(spec, i->ifa_name))
      continue;
    uint32_t a = ((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr;
    if (spec[0] == '^' && (ntohl(a) >> 24) == 127) {
      if (!found_lo) lo_ip = a;
      found_lo = 1;
      continue;
    }
    *ip = a;
    found = 1;
  }
  freeifaddrs(ifs);
  if (!found && found_lo) {
    *ip = lo_ip;
    found = 1;
  }
  if (!found) {
    snprintf(err, errlen, "no interface with an IPv4 address matches TUTTI_SOCKET_IFNAME=%s "
             "(syntax: eth, =eth0, ^docker)", spec);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__sock_resolve(const char *host, uint32_t *ip, char *err, size_t errlen) {
  struct in_addr in;
  if (inet_pton(AF_INET, host, &in) == 1) {
    *ip = in.s_addr;
    return TUTTI_SUCCESS;
  }
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
  int rc = getaddrinfo(host, NULL, &hints, &res);
  if (rc != 0) {
    snprintf(err, errlen, "cannot resolve host %s: %s", host, gai_strerror(rc));
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  *ip = ((struct sockaddr_in *)(void *)res->ai_addr)->sin_addr.s_addr;
  freeaddrinfo(res);
  return TUTTI_SUCCESS;
}

void tutti__sock_nodelay_nonblock(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

int tutti__sock_send_parts(int fd, const void *const *bases, const size_t *lens, int nparts,
                           size_t *sent) {
  enum { MAX_PARTS = 8 };
  size_t total = 0;
  for (int i = 0; i < nparts; i++) total += lens[i];
  while (*sent < total) {
    struct iovec iov[MAX_PARTS];
    int n = 0;
    size_t skip = *sent;
    for (int i = 0; i < nparts && i < MAX_PARTS; i++) {
      if (skip >= lens[i]) {
        skip -= lens[i];
        continue;
      }
      iov[n++] = (struct iovec){(char *)bases[i] + skip, lens[i] - skip};
      skip = 0;
    }
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
    if (k <= 0) return -1;
    *sent += (size_t)k;
  }
  return 1;
}
