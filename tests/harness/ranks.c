#include "ranks.h"

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define MAX_RANKS 64

void harness_run_ranks(int n, harness_rank_fn fn, void *arg) {
  ASSERT(n > 0 && n <= MAX_RANKS);
  pid_t kid[MAX_RANKS];
  int idp[2];
  ASSERT(pipe(idp) == 0);
  for (int r = 0; r < n; r++) {
    kid[r] = fork();
    ASSERT(kid[r] >= 0);
    if (kid[r] == 0) {
      close(idp[1]);
      tutti_unique_id_t id;
      /* Ids are written whole and are smaller than PIPE_BUF: one read takes one id. */
      if (read(idp[0], &id, sizeof id) != (ssize_t)sizeof id) _exit(1);
      close(idp[0]);
      fn(&id, r, arg);
      _exit(0);
    }
  }
  close(idp[0]);
  tutti_unique_id_t id;
  memset(&id, 0, sizeof id);
  tutti_result_t rc = tutti_get_unique_id(&id);
  for (int r = 0; r < n; r++) ASSERT(write(idp[1], &id, sizeof id) == (ssize_t)sizeof id);
  close(idp[1]);
  ASSERT_EQ(rc, TUTTI_SUCCESS);
  for (int r = 0; r < n; r++) {
    int st;
    ASSERT(waitpid(kid[r], &st, 0) == kid[r] && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
}
