/* NCCL_SOCKET_IFNAME's syntax for TUTTI_SOCKET_IFNAME, as a pure function (unit-tested). */
#include <string.h>

#include "core/sock.h"

/* Does name appear in the comma-separated list (exact entries, or prefixes)? */
static int in_list(const char *list, const char *name, int exact) {
  size_t nlen = strlen(name);
  while (*list) {
    const char *end = strchr(list, ',');
    size_t len = end ? (size_t)(end - list) : strlen(list);
    if (len > 0 && (exact ? len == nlen && !strncmp(list, name, len)
                          : len <= nlen && !strncmp(list, name, len)))
      return 1;
    if (!end) break;
    list = end + 1;
  }
  return 0;
}

int tutti__ifname_match(const char *spec, const char *name) {
  int exclude = 0, exact = 0;
  if (*spec == '^') {
    exclude = 1;
    spec++;
  }
  if (*spec == '=') {
    exact = 1;
    spec++;
  }
  int hit = in_list(spec, name, exact);
  return exclude ? !hit : hit;
}
