/*
 * Registered buffers (tutti_mem_alloc): memory of one process that the other local ranks of
 * its communicator can map, so that the single-copy algorithms (algo/cma*.c) read and write
 * a peer's buffer in place with memcpy or a reduction kernel instead of process_vm_readv into
 * a landing buffer.
 *
 * A region is a memfd (no name in /dev/shm, so a crash leaves nothing behind) mapped shared
 * by its owner. A peer finds it through the owner's descriptor of a call (the region's fd
 * number, inode, address and length), opens /proc/<pid>/fd/<fd> (the same ptrace permission
 * that process_vm_readv needs), checks the inode, maps it once and keeps the mapping.
 */
#ifndef TUTTI_CORE_MEMREG_H
#define TUTTI_CORE_MEMREG_H

#include <stddef.h>
#include <stdint.h>

#include "tutti.h"

struct tutti_comm;

/* One buffer of a call as its owner describes it to its peers: its address, and the
 * registered region it lies in (len 0: none). */
typedef struct {
  uint64_t addr;
  uint64_t reg_base, reg_len, reg_ino;
  int32_t reg_fd;
  uint32_t pad;
} tutti_regbuf_t;

/* Fills *out for this rank's buffer p of len bytes: the region of comm that holds all of it,
 * or none. Cheap when nothing is registered (one load). */
void tutti__memreg_describe(struct tutti_comm *comm, const void *p, size_t len,
                            tutti_regbuf_t *out);

/* This process's address of [addr, addr + len) in peer's buffer b, when b is registered, the
 * range lies in its region and the region can be mapped here (mapped on first use, then
 * cached); NULL otherwise, and the caller falls back to process_vm_readv/writev. A region
 * that cannot be mapped is logged once (INFO) and not tried again. The range's pages are
 * faulted in here the first time (2 MiB at a time, tutti__first_use), so a caller about to
 * read a range in pieces may pass it whole first to take that cost in one go. */
void *tutti__memreg_peer(struct tutti_comm *comm, int peer, const tutti_regbuf_t *b,
                         uint64_t addr, size_t len);

/* Unmaps every region comm allocated and every peer region it mapped (comm destroy). */
void tutti__memreg_destroy(struct tutti_comm *comm);

#endif
