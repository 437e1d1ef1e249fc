/* TUTTI_SOCKET_IFNAME selection in NCCL's syntax: prefixes, "=" exact, "^" exclusion, lists. */
#include <arpa/inet.h>

#include "core/sock.h"
#include "harness.h"

TEST(prefix_matches_the_start_of_the_name) {
  ASSERT(tutti__ifname_match("eth", "eth0"));
  ASSERT(tutti__ifname_match("eth", "eth12"));
  ASSERT(tutti__ifname_match("eth0", "eth0"));
  ASSERT(!tutti__ifname_match("eth0", "eth"));
  ASSERT(!tutti__ifname_match("eth", "veth0"));
}

TEST(equals_means_exact) {
  ASSERT(tutti__ifname_match("=eth0", "eth0"));
  ASSERT(!tutti__ifname_match("=eth0", "eth01"));
  ASSERT(!tutti__ifname_match("=eth", "eth0"));
}

TEST(caret_excludes) {
  ASSERT(!tutti__ifname_match("^docker", "docker0"));
  ASSERT(tutti__ifname_match("^docker", "eth0"));
  ASSERT(!tutti__ifname_match("^docker,lo", "lo"));
  ASSERT(tutti__ifname_match("^docker,lo", "ens3"));
  ASSERT(!tutti__ifname_match("^=docker0", "docker0"));
  ASSERT(tutti__ifname_match("^=docker0", "docker01"));
}

TEST(lists_and_empty_entries) {
  ASSERT(tutti__ifname_match("ib,eth", "eth1"));
  ASSERT(tutti__ifname_match("ib,eth", "ib0"));
  ASSERT(!tutti__ifname_match("ib,eth", "lo"));
  ASSERT(!tutti__ifname_match(",,", "eth0"));
  ASSERT(!tutti__ifname_match("", "eth0"));
  ASSERT(tutti__ifname_match("=lo,=eth0", "lo"));
}

TEST(loopback_is_found_by_exact_name) {
  uint32_t ip = 0;
  char err[256];
  ASSERT_EQ(tutti__sock_ifaddr("=lo", &ip, err, sizeof err), TUTTI_SUCCESS);
  ASSERT_EQ(ntohl(ip) >> 24, 127);
  ASSERT_EQ(tutti__sock_ifaddr("=no_such_if0", &ip, err, sizeof err),
            TUTTI_ERR_INVALID_ARGUMENT);
  ASSERT(strstr(err, "TUTTI_SOCKET_IFNAME=") != NULL);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
