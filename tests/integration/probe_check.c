/*
 * Probes never disturb correct calls (transport/tcp_stream.c): over tcp, a rank that waits
 * 200 ms in a call sends probe frames to the peers it waits on and reads probes from the
 * others. Here ranks arrive late on purpose (600 ms, three rounds), so every waiting rank
 * probes, while point-to-point messages of two tags sit in the same streams and are received
 * out of order. Every result is checked against values computed here; a probe taken for a
 * message, or a message taken for a probe, fails a check or the call.
 *
 *   tutti-run -n 3 probe_check      (TUTTI_TRANSPORT=tcp)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tutti.h"

enum { COUNT = 4096, ROUNDS = 3 };

static void nap_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static int fail(int r, const char *what, tutti_comm_t c) {
  printf("probe_check rank %d: FAIL: %s: %s\n", r, what, tutti_comm_last_error(c));
  return 1;
}

int main(void) {
  tutti_comm_t c;
  int r, n;
  if (tutti_comm_init_env(&c) != TUTTI_SUCCESS) return 1;
  tutti_comm_rank(c, &r);
  tutti_comm_size(c, &n);
  if (n < 3) return 2;
  float *x = malloc(COUNT * sizeof *x);
  if (!x) return 1;
  for (int round = 0; round < ROUNDS; round++) {
    int a = 70 + round, b = 30 + round, got_a = -1, got_b = -1;
    /* Rank 1's messages wait in rank 0's stream, ahead of the all-reduce's. */
    if (r == 1 && (tutti_send_tag(&a, 1, TUTTI_INT32, 0, 7, c) != TUTTI_SUCCESS ||
                   tutti_send_tag(&b, 1, TUTTI_INT32, 0, 3, c) != TUTTI_SUCCESS))
      return fail(r, "send", c);
    if (r == 0) nap_ms(600); /* the others wait and probe */
    for (int i = 0; i < COUNT; i++) x[i] = (float)(r * COUNT + i);
    if (tutti_allreduce(x, x, COUNT, TUTTI_FLOAT32, TUTTI_SUM, c) != TUTTI_SUCCESS)
      return fail(r, "allreduce", c);
    for (int i = 0; i < COUNT; i++)
      if (x[i] != (float)(COUNT * n * (n - 1) / 2 + n * i)) return fail(r, "allreduce value", c);
    if (r == 0 && (tutti_recv_tag(&got_b, 1, TUTTI_INT32, 1, 3, c, NULL) != TUTTI_SUCCESS ||
                   tutti_recv_tag(&got_a, 1, TUTTI_INT32, 1, 7, c, NULL) != TUTTI_SUCCESS))
      return fail(r, "recv", c);
    if (r == 0 && (got_a != a || got_b != b)) return fail(r, "point-to-point values", c);
    if (r == n - 1) nap_ms(600); /* the root and the others wait for the last rank */
    for (int i = 0; i < COUNT; i++) x[i] = r == 0 ? (float)(i + round) : -1.0f;
    if (tutti_broadcast(x, x, COUNT, TUTTI_FLOAT32, 0, c) != TUTTI_SUCCESS)
      return fail(r, "broadcast", c);
    for (int i = 0; i < COUNT; i++)
      if (x[i] != (float)(i + round)) return fail(r, "broadcast value", c);
  }
  tutti_comm_destroy(c);
  free(x);
  printf("probe_check rank %d of %d: PASS\n", r, n);
  return 0;
}
