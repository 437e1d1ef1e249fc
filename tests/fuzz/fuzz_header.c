/* libFuzzer target: the check of every data frame's header against the call this rank posted
 * (tutti__hdr_check, transport/progress.c). The input is the header this rank posted (32
 * bytes, zero-padded) followed by the bytes that arrived as the peer's header. */
#include "fuzz_common.h"
#include "transport/header_check.h"

/* The reference: frames agree when magic, sequence, length and every fingerprint field but
 * the padding agree. */
static int same_call(const tutti_msg_hdr_t *a, const tutti_msg_hdr_t *b) {
  return a->magic == TUTTI_MSG_MAGIC && a->seq == b->seq && a->len == b->len &&
         a->fp.coll == b->fp.coll && a->fp.dtype == b->fp.dtype && a->fp.op == b->fp.op &&
         a->fp.root == b->fp.root && a->fp.count == b->fp.count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tutti_msg_hdr_t want;
  memset(&want, 0, sizeof want);
  size_t head = size < sizeof want ? size : sizeof want;
  memcpy(&want, data, head);
  want.magic = TUTTI_MSG_MAGIC; /* this rank always posts a well-formed header */
  const uint8_t *got = data + head;
  size_t got_len = size - head;
  char msg[512];
  memset(msg, 'x', sizeof msg);
  tutti_result_t res =
      tutti__hdr_check(&want, got, got_len, "rank 1 (pid 2 on host fuzz)", msg, sizeof msg);
  if (got_len < sizeof want) {
    FUZZ_CHECK(res == TUTTI_ERR_REMOTE);
  } else {
    tutti_msg_hdr_t g;
    memcpy(&g, got, sizeof g);
    FUZZ_CHECK((res == TUTTI_SUCCESS) == same_call(&g, &want));
    if (g.magic == TUTTI_ABORT_MAGIC)
      FUZZ_CHECK(res == TUTTI_ERR_REMOTE || res == TUTTI_ERR_INVALID_USAGE);
    else if (g.magic != TUTTI_MSG_MAGIC)
      FUZZ_CHECK(res == TUTTI_ERR_REMOTE);
    else if (res != TUTTI_SUCCESS)
      FUZZ_CHECK(res == TUTTI_ERR_INVALID_USAGE);
  }
  if (res != TUTTI_SUCCESS) FUZZ_CHECK(fuzz_terminated(msg, sizeof msg) && msg[0] != '\0');
  return 0;
}
