/* The unique id: magic, version, rendezvous address and job secret at fixed offsets. */
#include <string.h>

#include "bootstrap/bootstrap.h"

#define UID_MAGIC 0x31495454u /* "TTI1" little-endian */
#define UID_VERSION 1u

enum { OFF_MAGIC = 0, OFF_VERSION = 4, OFF_IP = 8, OFF_PORT = 12, OFF_SECRET = 16 };

void tutti__uid_pack(const tutti_uid_fields_t *f, tutti_unique_id_t *id) {
  uint32_t magic = UID_MAGIC, version = UID_VERSION;
  memset(id, 0, sizeof *id);
  memcpy(id->internal + OFF_MAGIC, &magic, 4);
  memcpy(id->internal + OFF_VERSION, &version, 4);
  memcpy(id->internal + OFF_IP, &f->ip, 4);
  memcpy(id->internal + OFF_PORT, &f->port, 2);
  memcpy(id->internal + OFF_SECRET, f->secret, TUTTI_SECRET_BYTES);
}

tutti_result_t tutti__uid_unpack(const tutti_unique_id_t *id, tutti_uid_fields_t *f) {
  uint32_t magic, version;
  memcpy(&magic, id->internal + OFF_MAGIC, 4);
  memcpy(&version, id->internal + OFF_VERSION, 4);
  if (magic != UID_MAGIC || version != UID_VERSION) return TUTTI_ERR_INVALID_ARGUMENT;
  memcpy(&f->ip, id->internal + OFF_IP, 4);
  memcpy(&f->port, id->internal + OFF_PORT, 2);
  memcpy(f->secret, id->internal + OFF_SECRET, TUTTI_SECRET_BYTES);
  if (f->port == 0) return TUTTI_ERR_INVALID_ARGUMENT;
  return TUTTI_SUCCESS;
}
