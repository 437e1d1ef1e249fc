/*
 * p2p_tag_check: tagged point-to-point and receives from any source (tutti_send_tag & co.).
 *
 * - order:   rank 0 sends tag 7 then tag 3 to rank 1 (small, and a 4 MiB tag 7 that cannot
 *            fit a transport queue); rank 1 receives tag 3 first and gets the tag-3 payload
 *            while the tag-7 message waits, then tag 7; same-tag messages keep their order.
 * - any:     every other rank sends to rank 0 with its own tag; rank 0 receives from
 *            TUTTI_ANY_SOURCE / TUTTI_ANY_TAG and the status names the sender and tag of the
 *            payload it got, each sender exactly once.
 * - nonblock: irecv_tag from any source and from rank 0 posted before the sends;
 *            tutti_request_status reports source and tag.
 * - then a collective: an any-source receive that one rank satisfies while another rank is
 *            already in the next all-reduce (its message read first must reach the all-reduce).
 * - invalid: negative tags, TUTTI_ANY_SOURCE where it is not allowed.
 *
 *   tutti-run -n 3 p2p_tag_check   (n >= 3)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tutti.h"

static tutti_comm_t comm;
static int rank, nranks, failures;

#define CHECK(cond, ...)                                                                    \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      fprintf(stderr, "p2p_tag_check rank %d: ", rank);                                     \
      fprintf(stderr, __VA_ARGS__);                                                         \
      fprintf(stderr, "\n");                                                                \
      failures++;                                                                           \
    }                                                                                       \
  } while (0)

static void ok(tutti_result_t rc, const char *what) {
  if (rc == TUTTI_SUCCESS) return;
  fprintf(stderr, "p2p_tag_check rank %d: %s returned %s: %s\n", rank, what,
          tutti_result_string(rc), tutti_comm_last_error(comm));
  exit(1);
}

static int32_t val(int src, int tag, size_t i) { return src * 1000000 + tag * 10000 + (int)i; }

static void fill(int32_t *b, size_t n, int src, int tag) {
  for (size_t i = 0; i < n; i++) b[i] = val(src, tag, i);
}

static int holds(const int32_t *b, size_t n, int src, int tag) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != val(src, tag, i)) return 0;
  return 1;
}

static void test_order(void) {
  enum { SMALL = 100, BIG = 1 << 20 }; /* BIG int32s: 4 MiB */
  int32_t *a = malloc(BIG * 4), *b = malloc(SMALL * 4);
  if (rank == 0) {
    fill(a, SMALL, 0, 7);
    ok(tutti_send_tag(a, SMALL, TUTTI_INT32, 1, 7, comm), "send tag 7");
    fill(b, SMALL, 0, 3);
    ok(tutti_send_tag(b, SMALL, TUTTI_INT32, 1, 3, comm), "send tag 3");
    fill(a, BIG, 0, 8);
    ok(tutti_send_tag(a, BIG, TUTTI_INT32, 1, 8, comm), "send big tag 8");
    fill(b, SMALL, 0, 2);
    ok(tutti_send_tag(b, SMALL, TUTTI_INT32, 1, 2, comm), "send tag 2");
    /* Same tag twice: received in the order sent. */
    fill(b, SMALL, 0, 5);
    ok(tutti_send_tag(b, SMALL, TUTTI_INT32, 1, 5, comm), "send tag 5 (first)");
    fill(b, SMALL, 0, 6);
    ok(tutti_send_tag(b, SMALL / 2, TUTTI_INT32, 1, 5, comm), "send tag 5 (second)");
  } else if (rank == 1) {
    tutti_status_t st;
    ok(tutti_recv_tag(b, SMALL, TUTTI_INT32, 0, 3, comm, &st), "recv tag 3");
    CHECK(holds(b, SMALL, 0, 3), "recv(tag=3) did not get the tag-3 payload");
    CHECK(st.source == 0 && st.tag == 3, "status %d/%d, expected 0/3", st.source, st.tag);
    ok(tutti_recv_tag(b, SMALL, TUTTI_INT32, 0, 7, comm, NULL), "recv tag 7");
    CHECK(holds(b, SMALL, 0, 7), "recv(tag=7) did not get the tag-7 payload");
    ok(tutti_recv_tag(b, SMALL, TUTTI_INT32, 0, 2, comm, NULL), "recv tag 2");
    CHECK(holds(b, SMALL, 0, 2), "recv(tag=2) behind a 4 MiB tag-8 message got wrong data");
    ok(tutti_recv_tag(a, BIG, TUTTI_INT32, 0, 8, comm, NULL), "recv big tag 8");
    CHECK(holds(a, BIG, 0, 8), "the kept 4 MiB tag-8 message is wrong");
    ok(tutti_recv_tag(b, SMALL, TUTTI_INT32, 0, TUTTI_ANY_TAG, comm, &st), "recv any tag");
    CHECK(holds(b, SMALL, 0, 5) && st.tag == 5, "first tag-5 message not first");
    ok(tutti_recv_tag(b, SMALL / 2, TUTTI_INT32, 0, 5, comm, NULL), "recv tag 5");
    CHECK(holds(b, SMALL / 2, 0, 6), "second tag-5 message wrong");
  }
  free(a);
  free(b);
}

static void test_any(void) {
  enum { N = 64 };
  int32_t buf[N];
  if (rank != 0) {
    fill(buf, N, rank, 10 + rank);
    ok(tutti_send_tag(buf, N, TUTTI_INT32, 0, 10 + rank, comm), "send to rank 0");
    return;
  }
  int *seen = calloc((size_t)nranks, sizeof *seen);
  for (int k = 1; k < nranks; k++) {
    tutti_status_t st = {-7, -7};
    ok(tutti_recv_tag(buf, N, TUTTI_INT32, TUTTI_ANY_SOURCE, TUTTI_ANY_TAG, comm, &st),
       "recv from any source");
    CHECK(st.source >= 1 && st.source < nranks && st.tag == 10 + st.source,
          "status source %d tag %d", st.source, st.tag);
    if (st.source >= 1 && st.source < nranks) {
      CHECK(holds(buf, N, st.source, st.tag), "payload is not the one of rank %d", st.source);
      CHECK(!seen[st.source]++, "rank %d matched twice", st.source);
    }
  }
  free(seen);
}

static void test_nonblocking(void) {
  enum { N = 32 };
  int32_t x[N], y[N];
  if (rank == 1) {
    tutti_request_t ra, rb;
    ok(tutti_irecv_tag(x, N, TUTTI_INT32, TUTTI_ANY_SOURCE, 5, comm, &ra), "irecv any tag 5");
    ok(tutti_irecv_tag(y, N, TUTTI_INT32, 0, 4, comm, &rb), "irecv 0 tag 4");
    ok(tutti_wait(ra), "wait any");
    ok(tutti_wait(rb), "wait 0");
    tutti_status_t sa, sb;
    ok(tutti_request_status(ra, &sa), "status a");
    ok(tutti_request_status(rb, &sb), "status b");
    CHECK(sa.source == 2 && sa.tag == 5 && holds(x, N, 2, 5), "any-source irecv got %d/%d",
          sa.source, sa.tag);
    CHECK(sb.source == 0 && sb.tag == 4 && holds(y, N, 0, 4), "irecv from 0 got %d/%d",
          sb.source, sb.tag);
    tutti_request_free(ra);
    tutti_request_free(rb);
  } else if (rank == 0 || rank == 2) {
    fill(x, N, rank, rank == 0 ? 4 : 5);
    tutti_request_t r;
    ok(tutti_isend_tag(x, N, TUTTI_INT32, 1, rank == 0 ? 4 : 5, comm, &r), "isend");
    ok(tutti_wait(r), "wait isend");
    tutti_request_free(r);
  }
}

/* Rank 2 goes straight into the all-reduce while rank 1's any-source receive is waiting for
 * rank 0 (which first waits for rank 1's go-ahead, so rank 2's all-reduce message is there
 * first in a ring or tree that sends from 2 to 1). */
static void test_then_collective(void) {
  int32_t v = rank + 1, sum = 0, go = 1, got = 0;
  tutti_status_t st;
  if (rank == 1) {
    ok(tutti_send(&go, 1, TUTTI_INT32, 0, comm), "go-ahead");
    ok(tutti_recv_tag(&got, 1, TUTTI_INT32, TUTTI_ANY_SOURCE, 9, comm, &st), "recv any");
    CHECK(st.source == 0 && got == 99, "any-source receive got %d from %d", got, st.source);
  } else if (rank == 0) {
    ok(tutti_recv(&go, 1, TUTTI_INT32, 1, comm), "wait for go-ahead");
    got = 99;
    ok(tutti_send_tag(&got, 1, TUTTI_INT32, 1, 9, comm), "send tag 9");
  }
  ok(tutti_allreduce(&v, &sum, 1, TUTTI_INT32, TUTTI_SUM, comm), "allreduce after");
  CHECK(sum == nranks * (nranks + 1) / 2, "allreduce after the receive gave %d", sum);
}

static void test_invalid(void) {
  int32_t x = 0;
  tutti_request_t r = NULL;
  CHECK(tutti_send_tag(&x, 1, TUTTI_INT32, (rank + 1) % nranks, -2, comm) ==
            TUTTI_ERR_INVALID_ARGUMENT, "negative tag accepted");
  CHECK(tutti_send_tag(&x, 1, TUTTI_INT32, (rank + 1) % nranks, TUTTI_ANY_TAG, comm) ==
            TUTTI_ERR_INVALID_ARGUMENT, "send with TUTTI_ANY_TAG accepted");
  CHECK(tutti_send_tag(&x, 1, TUTTI_INT32, TUTTI_ANY_SOURCE, 1, comm) ==
            TUTTI_ERR_INVALID_ARGUMENT, "send to TUTTI_ANY_SOURCE accepted");
  CHECK(tutti_recv(&x, 1, TUTTI_INT32, TUTTI_ANY_SOURCE, comm) == TUTTI_ERR_INVALID_ARGUMENT,
        "untagged recv from -1 accepted");
  CHECK(tutti_irecv_tag(&x, 1, TUTTI_INT32, 0, -5, comm, &r) == TUTTI_ERR_INVALID_ARGUMENT &&
            r == NULL, "irecv with tag -5 accepted");
  CHECK(tutti_request_status(NULL, NULL) == TUTTI_ERR_INVALID_ARGUMENT, "status of NULL");
}

int main(void) {
  ok(tutti_comm_init_env(&comm), "tutti_comm_init_env");
  ok(tutti_comm_rank(comm, &rank), "rank");
  ok(tutti_comm_size(comm, &nranks), "size");
  if (nranks < 3) {
    fprintf(stderr, "p2p_tag_check needs at least 3 ranks\n");
    return 2;
  }
  test_order();
  ok(tutti_barrier(comm), "barrier");
  test_any();
  ok(tutti_barrier(comm), "barrier");
  test_nonblocking();
  ok(tutti_barrier(comm), "barrier");
  test_then_collective();
  test_invalid();
  int total = 0;
  ok(tutti_allreduce(&failures, &total, 1, TUTTI_INT32, TUTTI_SUM, comm), "summary");
  ok(tutti_comm_destroy(comm), "destroy");
  if (total) return 1;
  if (rank == 0) printf("p2p_tag_check: all passed on %d ranks\n", nranks);
  return 0;
}
