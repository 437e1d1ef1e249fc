/*
 * Relaying ranks' output. Each rank writes into its own pipes; we only ever write whole,
 * prefixed lines to our stdout/stderr, each batch with one write loop and from one thread, so
 * lines of different ranks never mix mid-line whatever the ranks do.
 */
#include "run.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes asked of read() at a time. */
#define READ_CHUNK 65536
/* A "line" longer than this is printed in pieces, so a rank that never writes a newline cannot
 * make us buffer without bound. */
#define MAX_LINE (1u << 20)

/* Set once a write to fd 1 or 2 fails for good (say the reader of `tutti-run | head` left):
 * from then on that stream's output is dropped, but we keep reading the pipes so the ranks
 * never block on a full pipe and the job still ends normally. */
static int sink_broken[3];

/* The prefixed text of one batch of lines, reused between calls. */
static char *out_buf;
static size_t out_cap;

void relay_write_all(int fd, const char *msg, size_t len) {
  if (fd < 1 || fd > 2 || sink_broken[fd])
    return;
  while (len > 0) {
    ssize_t n = write(fd, msg, len);
    if (n >= 0) {
      msg += n;
      len -= (size_t)n;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      /* Someone made our terminal non-blocking; wait for room instead of dropping text. */
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      (void)poll(&p, 1, 1000);
    } else if (errno != EINTR) {
      sink_broken[fd] = 1;
      return;
    }
  }
}

void relay_init(struct relay *r, int rank, int out_fd) {
  memset(r, 0, sizeof(*r));
  r->fd = -1;
  r->out_fd = out_fd;
  int n = snprintf(r->prefix, sizeof(r->prefix), "[%d] ", rank);
  r->prefix_len = n > 0 ? (size_t)n : 0;
}

/* Makes out_buf hold at least need bytes; returns 0, or -1 when memory ran out. */
static int out_reserve(size_t need) {
  if (need <= out_cap)
    return 0;
  size_t cap = out_cap ? out_cap : 4096;
  while (cap < need)
    cap *= 2;
  char *p = realloc(out_buf, cap);
  if (!p)
    return -1;
  out_buf = p;
  out_cap = cap;
  return 0;
}

/* Writes r->buf[0, upto) as prefixed lines (it must end with '\n' unless add_newline), then
 * keeps only the bytes after it. */
static void emit(struct relay *r, size_t upto, int add_newline) {
  /* Worst case every byte is a newline, each getting a prefix. */
  size_t lines = add_newline;
  for (size_t i = 0; i < upto; i++)
    lines += r->buf[i] == '\n';
  size_t need = upto + add_newline + lines * r->prefix_len;
  if (out_reserve(need) != 0) {
    /* No memory for the prefixed copy: print the text unprefixed rather than lose it. */
    relay_write_all(r->out_fd, r->buf, upto);
    if (add_newline)
      relay_write_all(r->out_fd, "\n", 1);
  } else {
    size_t o = 0, start = 0;
    while (start < upto) {
      const char *nl = memchr(r->buf + start, '\n', upto - start);
      size_t end = nl ? (size_t)(nl - r->buf) + 1 : upto;
      memcpy(out_buf + o, r->prefix, r->prefix_len);
      o += r->prefix_len;
      memcpy(out_buf + o, r->buf + start, end - start);
      o += end - start;
      start = end;
    }
    if (add_newline)
      out_buf[o++] = '\n';
    relay_write_all(r->out_fd, out_buf, o);
  }
  memmove(r->buf, r->buf + upto, r->len - upto);
  r->len -= upto;
}

/* Prints every complete line in the buffer, and an over-long unfinished one. */
static void emit_complete_lines(struct relay *r) {
  size_t last = r->len;
  while (last > 0 && r->buf[last - 1] != '\n')
    last--;
  if (last > 0)
    emit(r, last, 0);
  if (r->len >= MAX_LINE)
    emit(r, r->len, 1);
}

void relay_close(struct relay *r) {
  if (r->len > 0)
    emit(r, r->len, 1);
  if (r->fd >= 0)
    close(r->fd);
  r->fd = -1;
  free(r->buf);
  r->buf = NULL;
  r->len = r->cap = 0;
}

/* Makes room for one more read; returns 0, or -1 when memory ran out. */
static int reserve_read(struct relay *r) {
  if (r->cap - r->len >= READ_CHUNK)
    return 0;
  size_t cap = r->len + READ_CHUNK;
  char *p = realloc(r->buf, cap);
  if (!p)
    return -1;
  r->buf = p;
  r->cap = cap;
  return 0;
}

void relay_pump(struct relay *r, int max_reads) {
  for (int i = 0; r->fd >= 0 && (max_reads <= 0 || i < max_reads); i++) {
    if (reserve_read(r) != 0) {
      /* Flush what we hold so the existing buffer can take the next read. */
      if (r->len == 0)
        return;
      emit(r, r->len, 1);
      continue;
    }
    ssize_t n = read(r->fd, r->buf + r->len, r->cap - r->len);
    if (n > 0) {
      r->len += (size_t)n;
      emit_complete_lines(r);
    } else if (n == 0) {
      relay_close(r);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return;
    } else if (errno != EINTR) {
      relay_close(r);
    }
  }
}
