/* The collective kinds' table (colls.h). */
#include "core/colls.h"

/*  name               label              rooted reduces variable p2p times_n */
const tutti_coll_info_t tutti__colls[TUTTI_COLL_COUNT] = {
    [TUTTI_COLL_ALLGATHER] = {"allgather", "allgather", 0, 0, 0, 0, 1},
    [TUTTI_COLL_ALLREDUCE] = {"allreduce", "allreduce", 0, 1, 0, 0, 0},
    [TUTTI_COLL_REDUCE_SCATTER] = {"reduce_scatter", "reduce_scatter", 0, 1, 0, 0, 1},
    [TUTTI_COLL_BROADCAST] = {"broadcast", "broadcast", 1, 0, 0, 0, 0},
    [TUTTI_COLL_REDUCE] = {"reduce", "reduce", 1, 1, 0, 0, 0},
    [TUTTI_COLL_BARRIER] = {"barrier", "barrier", 0, 0, 0, 0, 0},
    [TUTTI_COLL_ALLGATHERV] = {"allgatherv", "allgatherv", 0, 0, 1, 0, 0},
    [TUTTI_COLL_REDUCE_SCATTERV] = {"reduce_scatterv", "reduce_scatterv", 0, 1, 1, 0, 0},
    [TUTTI_COLL_GATHERV] = {"gatherv", "gatherv", 1, 0, 1, 0, 0},
    [TUTTI_COLL_SCATTERV] = {"scatterv", "scatterv", 1, 0, 1, 0, 0},
    [TUTTI_COLL_ALLTOALLV] = {"alltoallv", "alltoallv", 0, 0, 1, 0, 0},
    [TUTTI_COLL_SEND] = {"send", "send/recv", 0, 0, 0, 1, 0},
    [TUTTI_COLL_RECV] = {"recv", "send/recv", 0, 0, 0, 1, 0},
};

const tutti_coll_info_t *tutti__coll_info(int coll) {
  static const tutti_coll_info_t unknown = {"?", "?", 0, 0, 0, 0, 0};
  return coll >= 0 && coll < TUTTI_COLL_COUNT ? &tutti__colls[coll] : &unknown;
}

const char *tutti__coll_name(tutti_coll_t coll) { return tutti__coll_info((int)coll)->name; }

size_t tutti__coll_bytes(tutti_coll_t coll, size_t count, size_t esize, int nranks) {
  size_t b = count * esize;
  return tutti__coll_info((int)coll)->times_n ? b * (size_t)nranks : b;
}
