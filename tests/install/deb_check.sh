#!/usr/bin/env bash
# The Debian package: `cpack -G DEB` builds it, `dpkg -i` installs it, then `import tutti,
# tutti.torch` works with no PYTHONPATH, the installed all_reduce_perf runs under the
# installed tutti-run, and `dpkg -r` removes every file it installed (nothing left behind,
# __pycache__ included). Needs root and dpkg: skipped (exit 77) with the reason otherwise, and
# when a package named tutti is installed already (it is not ours to remove).
#   deb_check.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
skip() { echo "deb_check: SKIPPED: $*"; exit 77; }
fail() { echo "deb_check: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "needs root to dpkg -i (CI runs as root)"
command -v dpkg >/dev/null && command -v dpkg-deb >/dev/null || skip "no dpkg on this machine"
if dpkg-query -W -f='${Status}' tutti 2>/dev/null | grep -q '^install ok installed'; then
  skip "a package named tutti is installed already"
fi
TMP=$(mktemp -d)
trap 'dpkg -r tutti >/dev/null 2>&1 || true; rm -rf "$TMP"' EXIT

(cd "$BUILD" && cpack -G DEB -B "$TMP" >/dev/null) || fail "cpack -G DEB failed"
DEB=$(ls "$TMP"/tutti_*.deb)
dpkg-deb -I "$DEB" | sed -n 's/^ \(Package\|Version\|Depends\):/  &/p'
# What was there before: directories shared with other packages stay after dpkg -r.
dpkg-deb -c "$DEB" | awk '{print $6}' | sed 's|^\./|/|; s|/$||' | while read -r f; do
  [ -z "$f" ] || [ -e "$f" ] || echo "$f"
done >"$TMP/new"
# dpkg holds a lock that apt may have at this moment: wait for it, up to a minute.
for i in $(seq 60); do
  out=$(dpkg -i "$DEB" 2>&1) && break
  echo "$out" | grep -q 'lock' || { echo "$out" >&2; fail "dpkg -i failed"; }
  sleep 1
done
dpkg -L tutti >"$TMP/files"
for f in /usr/include/tutti.h /usr/bin/tutti-run /usr/bin/all_reduce_perf; do
  grep -qx "$f" "$TMP/files" || fail "$f is not in the package"
done
pkg-config --exists tutti 2>/dev/null || echo "deb_check: note: pkg-config does not see tutti"
(cd / && env -u PYTHONPATH -u TUTTI_LIBRARY /usr/bin/python3 -c 'import tutti, tutti.torch; print("import ok", tutti.__file__)') ||
  fail "import tutti, tutti.torch failed after dpkg -i"
(cd / && env -u PYTHONPATH -u TUTTI_LIBRARY /usr/bin/tutti-run -n 2 /usr/bin/all_reduce_perf -b 8 -e 1k -f 4 -n 2 -w 1 -g 1) |
  grep -q '# Out of bounds values : 0 OK' || fail "the installed all_reduce_perf did not run"
for i in $(seq 60); do
  out=$(dpkg -r tutti 2>&1) && break
  echo "$out" | grep -q 'lock' || { echo "$out" >&2; fail "dpkg -r failed"; }
  sleep 1
done
echo "$out" | grep -i 'warning' && fail "dpkg -r warned: $out"
state=$(dpkg-query -W -f='${Status}' tutti 2>/dev/null || true)
case $state in ""|*not-installed*) ;; *) fail "after dpkg -r the package is in state '$state'" ;; esac
left=0
while read -r f; do # everything the package added must be gone
  if [ -e "$f" ] || [ -L "$f" ]; then echo "left behind: $f"; left=1; fi
done <"$TMP/new"
[ $left -eq 0 ] || fail "dpkg -r left files behind"
echo "deb_check: ok"
