/*
 * Point-to-point receives matched by (source, tag), as MPI matches them (see transport.h).
 *
 * A peer's stream is read by a small reader: a header, then its body into the receive that
 * matches it or, when none does, into a kept ("unexpected") message. Messages from one peer
 * are read in stream order and each goes to the earliest posted receive that matches, so
 * matches per (source, tag) keep the sender's order. A receive posted later first looks at
 * the kept messages, oldest first.
 *
 * An any-source receive reads every peer's stream. If it reads a collective's header there
 * (that peer already moved on to the next collective), the header is held, and handed to
 * the collective receive that comes for it. The other way round, a collective receive that
 * reads a point-to-point header (the peer sent that message before the collective's data,
 * and this rank has posted no receive for it yet) diverts it here (tutti__p2p_divert).
 */
#include <stdlib.h>
#include <string.h>

#include "transport/transport.h"

#define HDR_BYTES sizeof(tutti_msg_hdr_t)
#define P2P_BIT 0x80000000u

enum { RD_IDLE, RD_HDR, RD_BODY, RD_HELD };

typedef struct kept {
  struct kept *next;
  int source;
  tutti_msg_hdr_t hdr;
  char *data;
} kept_t;

typedef struct reader {
  int state;
  size_t done; /* bytes of the header (RD_HDR) or body (RD_BODY) read */
  tutti_msg_hdr_t hdr;
  tutti_xfer_t *into; /* RD_BODY: the matched receive, or NULL for ... */
  kept_t *keep;       /* ... a message to keep */
} reader_t;

struct tutti_p2p {
  tutti_xfer_t *any_head, *any_tail; /* posted any-source receives, in post order */
  kept_t *kept_head, *kept_tail;     /* complete unmatched messages, in arrival order */
  uint64_t posted;
  reader_t rd[]; /* one per peer */
};

static tutti_result_t state(struct tutti_comm *comm, struct tutti_p2p **out) {
  if (!comm->p2p) {
    comm->p2p = calloc(1, sizeof *comm->p2p + (size_t)comm->nranks * sizeof(reader_t));
    if (!comm->p2p)
      return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory for point-to-point state");
  }
  *out = comm->p2p;
  return TUTTI_SUCCESS;
}

static int tag_of(const tutti_msg_hdr_t *h) { return (int)h->fp.root; }

static int matches(const tutti_xfer_t *op, int source, int tag) {
  int want = (int)op->hdr.fp.root;
  return (op->peer == TUTTI_ANY_SOURCE || op->peer == source) &&
         (want == TUTTI_ANY_TAG || want == tag);
}

/* The size and dtype check of a matched pair, with the message's own sequence number and
 * tag, so that only a real disagreement (count, dtype, length) fails. */
static tutti_result_t check_pair(struct tutti_comm *comm, tutti_xfer_t *op, int source,
                                 const tutti_msg_hdr_t *got) {
  tutti_xfer_t probe = *op;
  probe.peer = source;
  probe.hdr.seq = got->seq;
  probe.hdr.fp.root = got->fp.root;
  return tutti__check_header(comm, &probe, got);
}

static void finish(tutti_xfer_t *op, int source, const tutti_msg_hdr_t *got) {
  op->peer = source;
  op->got = *got;
  op->done = HDR_BYTES + op->len;
  if (op->status) {
    op->status->source = source;
    op->status->tag = tag_of(got);
  }
  op->complete = 1;
}

/* Unlinks op from the singly linked list head..tail. */
static void unlink_op(tutti_xfer_t **head, tutti_xfer_t **tail, tutti_xfer_t *op) {
  tutti_xfer_t *prev = NULL;
  for (tutti_xfer_t *x = *head; x; prev = x, x = x->next) {
    if (x != op) continue;
    if (prev)
      prev->next = x->next;
    else
      *head = x->next;
    if (*tail == x) *tail = prev;
    return;
  }
}

/* The earliest posted receive (directed at source, or any-source) that takes tag, unlinked
 * from its queue; NULL if none. */
static tutti_xfer_t *take_posted(struct tutti_comm *comm, int source, int tag) {
  tutti_peer_t *p = &comm->peers[source];
  tutti_xfer_t *d = NULL, *a = NULL;
  for (tutti_xfer_t *x = p->recvq_head; x && !d; x = x->next)
    if (x->kind == TUTTI_OP_MATCH && matches(x, source, tag)) d = x;
  for (tutti_xfer_t *x = comm->p2p->any_head; x && !a; x = x->next)
    if (matches(x, source, tag)) a = x;
  if (d && a) {
    if (d->order < a->order)
      a = NULL;
    else
      d = NULL;
  }
  if (d) unlink_op(&p->recvq_head, &p->recvq_tail, d);
  if (a) unlink_op(&comm->p2p->any_head, &comm->p2p->any_tail, a);
  return d ? d : a;
}

/* A kept message is complete: give it to a receive posted meanwhile, or keep it. */
static tutti_result_t deliver(struct tutti_comm *comm, kept_t *k) {
  struct tutti_p2p *s = comm->p2p;
  tutti_xfer_t *op = take_posted(comm, k->source, tag_of(&k->hdr));
  if (!op) {
    k->next = NULL;
    if (s->kept_tail)
      s->kept_tail->next = k;
    else
      s->kept_head = k;
    s->kept_tail = k;
    return TUTTI_SUCCESS;
  }
  tutti_result_t res = check_pair(comm, op, k->source, &k->hdr);
  if (res == TUTTI_SUCCESS) {
    if (op->len) memcpy(op->buf, k->data, op->len);
    finish(op, k->source, &k->hdr);
  }
  free(k->data);
  free(k);
  return res;
}

/* A full header arrived from peer: direct its body to a receive or to a kept message. */
static tutti_result_t route(struct tutti_comm *comm, int peer, reader_t *rd) {
  tutti_msg_hdr_t *h = &rd->hdr;
  rd->done = 0;
  if (h->magic != TUTTI_MSG_MAGIC || !(h->seq & P2P_BIT)) {
    /* A collective's header (or an abort frame): only a collective receive may take it. */
    rd->state = RD_HELD;
    tutti_peer_t *p = &comm->peers[peer];
    for (tutti_xfer_t *x = p->recvq_head; x; x = x->next)
      if (x->kind == TUTTI_OP_MATCH) return tutti__check_header(comm, x, h);
    if (h->magic != TUTTI_MSG_MAGIC) {
      tutti_xfer_t probe = {.peer = peer, .hdr = {.magic = TUTTI_MSG_MAGIC, .seq = P2P_BIT}};
      return tutti__check_header(comm, &probe, h);
    }
    return TUTTI_SUCCESS;
  }
  tutti_xfer_t *op = take_posted(comm, peer, tag_of(h));
  if (op) {
    TRY(check_pair(comm, op, peer, h));
    rd->into = op;
    rd->keep = NULL;
  } else {
    kept_t *k = calloc(1, sizeof *k);
    if (k) k->data = malloc(h->len ? h->len : 1);
    if (!k || !k->data) {
      free(k);
      return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory keeping a %llu-byte message "
                          "from rank %d that no receive matches yet",
                          (unsigned long long)h->len, peer);
    }
    k->source = peer;
    k->hdr = *h;
    rd->into = NULL;
    rd->keep = k;
  }
  rd->state = RD_BODY;
  return TUTTI_SUCCESS;
}

int tutti__p2p_is_p2p_header(const tutti_msg_hdr_t *hdr) {
  return hdr->magic == TUTTI_MSG_MAGIC && (hdr->seq & P2P_BIT);
}

tutti_result_t tutti__p2p_divert(struct tutti_comm *comm, int peer, const tutti_msg_hdr_t *hdr) {
  struct tutti_p2p *s = NULL;
  TRY(state(comm, &s));
  reader_t *rd = &s->rd[peer];
  rd->hdr = *hdr;
  return route(comm, peer, rd);
}

static tutti_result_t read_body(struct tutti_comm *comm, int peer, reader_t *rd,
                                int *moved_any) {
  tutti_peer_t *p = &comm->peers[peer];
  size_t len = rd->hdr.len, moved = 0;
  char *dst = rd->into ? rd->into->buf : rd->keep->data;
  if (rd->done < len) {
    TRY(p->tp->ops->recv(p->tp, peer, dst + rd->done, len - rd->done, &moved));
    rd->done += moved;
    if (moved) *moved_any = 1;
    if (rd->done < len) return TUTTI_SUCCESS;
  }
  rd->state = RD_IDLE;
  rd->done = 0;
  if (rd->into) {
    finish(rd->into, peer, &rd->hdr);
    return TUTTI_SUCCESS;
  }
  return deliver(comm, rd->keep);
}

static int has_match_recv(const tutti_peer_t *p) {
  for (const tutti_xfer_t *x = p->recvq_head; x; x = x->next)
    if (x->kind == TUTTI_OP_MATCH) return 1;
  return 0;
}

int tutti__p2p_wants(const struct tutti_comm *comm, int peer) {
  const struct tutti_p2p *s = comm->p2p;
  if (!s || peer == comm->rank) return 0;
  const reader_t *rd = &s->rd[peer];
  if (rd->state == RD_HDR || rd->state == RD_BODY) return 1;
  return rd->state == RD_IDLE && (s->any_head || has_match_recv(&comm->peers[peer]));
}

tutti_result_t tutti__p2p_progress(struct tutti_comm *comm, int peer, int *moved_any,
                                   int *handled) {
  struct tutti_p2p *s = comm->p2p;
  tutti_peer_t *p = &comm->peers[peer];
  *handled = 0;
  if (!s) return TUTTI_SUCCESS;
  reader_t *rd = &s->rd[peer];
  tutti_xfer_t *head = p->recvq_head;
  if (rd->state == RD_HELD && head && head->kind != TUTTI_OP_MATCH && head->done == 0) {
    /* The collective receive this header was held for. */
    rd->state = RD_IDLE;
    head->got = rd->hdr;
    head->done = HDR_BYTES;
    TRY(tutti__check_header(comm, head, &head->got));
    if (!(head->hdr.seq & P2P_BIT)) p->seen_seq = head->hdr.seq;
    return TUTTI_SUCCESS;
  }
  while (tutti__p2p_wants(comm, peer)) {
    *handled = 1;
    if (rd->state != RD_BODY) {
      size_t moved = 0;
      rd->state = RD_HDR;
      TRY(p->tp->ops->recv(p->tp, peer, (char *)&rd->hdr + rd->done, HDR_BYTES - rd->done,
                           &moved));
      rd->done += moved;
      if (moved) *moved_any = 1;
      if (rd->done < HDR_BYTES) {
        if (rd->done == 0) rd->state = RD_IDLE;
        return TUTTI_SUCCESS;
      }
      TRY(route(comm, peer, rd));
      if (rd->state == RD_HELD) return TUTTI_SUCCESS;
    }
    size_t before = rd->done;
    TRY(read_body(comm, peer, rd, moved_any));
    if (rd->state == RD_BODY && rd->done == before) return TUTTI_SUCCESS;
  }
  /* A collective receive at the head may read on only between messages. */
  if (rd->state != RD_IDLE && rd->state != RD_HELD) *handled = 1;
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__p2p_irecv(struct tutti_comm *comm, tutti_xfer_t *op, int peer, void *buf,
                                size_t len, int tag, tutti_status_t *status) {
  struct tutti_p2p *s = NULL;
  TRY(state(comm, &s));
  tutti__xfer_init(comm, op, TUTTI_OP_MATCH, peer, buf, len, P2P_BIT);
  op->hdr.fp.root = tag;
  op->order = ++s->posted;
  op->status = status;
  kept_t *prev = NULL;
  for (kept_t *k = s->kept_head; k; prev = k, k = k->next) {
    if (!matches(op, k->source, tag_of(&k->hdr))) continue;
    if (prev)
      prev->next = k->next;
    else
      s->kept_head = k->next;
    if (s->kept_tail == k) s->kept_tail = prev;
    tutti_result_t res = check_pair(comm, op, k->source, &k->hdr);
    if (res == TUTTI_SUCCESS) {
      if (len) memcpy(buf, k->data, len);
      finish(op, k->source, &k->hdr);
    }
    free(k->data);
    free(k);
    return res;
  }
  if (peer != TUTTI_ANY_SOURCE && s->rd[peer].state == RD_HELD)
    return tutti__check_header(comm, op, &s->rd[peer].hdr); /* a collective's message is next */
  op->next = NULL;
  tutti_xfer_t **head, **tail;
  if (peer == TUTTI_ANY_SOURCE) {
    head = &s->any_head;
    tail = &s->any_tail;
  } else {
    head = &comm->peers[peer].recvq_head;
    tail = &comm->peers[peer].recvq_tail;
  }
  if (*tail)
    (*tail)->next = op;
  else
    *head = op;
  *tail = op;
  return TUTTI_SUCCESS;
}

void tutti__p2p_drop(struct tutti_comm *comm) {
  struct tutti_p2p *s = comm->p2p;
  if (!s) return;
  while (s->kept_head) {
    kept_t *k = s->kept_head;
    s->kept_head = k->next;
    free(k->data);
    free(k);
  }
  for (int i = 0; i < comm->nranks; i++) {
    reader_t *rd = &s->rd[i];
    if (rd->state == RD_BODY && rd->keep) {
      free(rd->keep->data);
      free(rd->keep);
    }
  }
  free(s);
  comm->p2p = NULL;
}
