/*
 * The first exchange of an out-of-place all-gather (ring step 0, Bruck distance 1), where a
 * rank sends its own block and must also copy it into its place in the output. Done apart,
 * as before, the block was read from memory twice (the copy into place, then the send into
 * the queue) and, when sent from the output, read back once more. Here each chunk of the
 * input is sent first (copied into the queue, so it is now in this core's cache) and then
 * copied into place from the cache while the peer's chunk is on its way: the input is read
 * from memory once. At n = 2 this exchange is the whole all-gather.
 */
#include "algo/algo.h"
#include "kernels/kernels.h"

tutti_result_t tutti__own_exchange(struct tutti_comm *comm, const tutti_coll_args_t *a, int to,
                                   char *own, int from, char *rbuf, size_t rlen) {
  size_t bytes = a->count * a->esize, ce = tutti__chunk_elems(comm, 1);
  const char *in = a->sendbuf;
  int nt = comm->recv_nt;
  size_t most = bytes > rlen ? bytes : rlen;
  for (size_t off = 0; off < most; off += ce) {
    size_t sl = off < bytes ? (bytes - off < ce ? bytes - off : ce) : 0;
    size_t rl = off < rlen ? (rlen - off < ce ? rlen - off : ce) : 0;
    tutti_xfer_t so, ro;
    if (rl) TRY(tutti__irecv(comm, &ro, from, rbuf + off, rl));
    if (sl) TRY(tutti__isend(comm, &so, to, in + off, sl));
    if (sl) tutti__copy(own + off, in + off, sl, nt);
    if (rl) TRY(tutti__wait(comm, &ro, a->deadline));
    if (sl) TRY(tutti__wait(comm, &so, a->deadline));
  }
  return TUTTI_SUCCESS;
}
