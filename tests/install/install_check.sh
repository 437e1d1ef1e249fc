#!/usr/bin/env bash
# The installed artefacts, as an outside user meets them: `cmake --install --prefix P` and
# `make install PREFIX=P DESTDIR=D` lay out the header, both libraries (with SONAME links),
# tutti.pc with the real prefix, the CMake package, programs (and nccl-tests names), man pages
# and the Python package; a program built with `pkg-config --cflags --libs tutti` and one built
# with find_package(tutti) + tutti::tutti each run on 2 ranks under the installed tutti-run;
# the installed Python package imports and all-reduces with no PYTHONPATH to the source and no
# LD_LIBRARY_PATH.
#   install_check.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
SRC=$(cd "$1" && pwd)
BUILD=$(cd "$2" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "install_check: FAIL: $*" >&2; exit 1; }
P=$TMP/prefix

cmake --install "$BUILD" --prefix "$P" >/dev/null
LIBDIR=$(dirname "$(find "$P" -name libtutti.so -print -quit)")
[ -n "$LIBDIR" ] || fail "no libtutti.so under $P"
for f in include/tutti.h bin/tutti-run bin/tutti-bench bin/tutti-info bin/tutti-demo bin/tutti-tune \
         bin/all_reduce_perf bin/sendrecv_perf share/man/man1/tutti-run.1 \
         share/man/man1/tutti-bench.1 share/man/man1/tutti-tune.1 share/man/man1/all_reduce_perf.1; do
  [ -e "$P/$f" ] || fail "$f is not installed"
done
[ -f "$LIBDIR/libtutti.a" ] || fail "libtutti.a is not installed"
[ "$(readlink "$LIBDIR/libtutti.so")" = libtutti.so.0 ] || fail "libtutti.so is not a link to libtutti.so.0"
[ -L "$LIBDIR/libtutti.so.0" ] || fail "no libtutti.so.0 link"
objdump -p "$LIBDIR/libtutti.so" | grep -q 'SONAME *libtutti.so.0' || fail "SONAME is not libtutti.so.0"
grep -qx "prefix=$P" "$LIBDIR/pkgconfig/tutti.pc" || fail "tutti.pc does not say prefix=$P"
[ -f "$LIBDIR/cmake/tutti/tuttiConfig.cmake" ] && [ -f "$LIBDIR/cmake/tutti/tuttiConfigVersion.cmake" ] ||
  fail "no CMake package files"

# DESTDIR through make install: files under D/opt/tutti, the .pc says /opt/tutti.
make -s -C "$SRC" install BUILD="$BUILD" PREFIX=/opt/tutti DESTDIR="$TMP/stage" >/dev/null
grep -rqx "prefix=/opt/tutti" "$TMP/stage/opt/tutti" --include=tutti.pc || fail "DESTDIR: tutti.pc does not say prefix=/opt/tutti"
[ -e "$TMP/stage/opt/tutti/include/tutti.h" ] || fail "DESTDIR: no header under the stage"
[ ! -e /opt/tutti/include/tutti.h ] || echo "install_check: note: /opt/tutti exists on this machine"

# Outside consumers, run on 2 ranks by the installed tutti-run (which finds its library by
# its RPATH, no LD_LIBRARY_PATH).
cp "$SRC/tests/install/consumer.c" "$TMP/"
export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
# shellcheck disable=SC2046
cc ${OUTSIDE_CFLAGS:-} "$TMP/consumer.c" $(pkg-config --cflags --libs tutti) -Wl,-rpath,"$LIBDIR" -o "$TMP/pc_consumer"
"$P/bin/tutti-run" -n 2 "$TMP/pc_consumer" | tee "$TMP/pc.out"
[ "$(grep -c ': sum 3 ok' "$TMP/pc.out")" -eq 2 ] || fail "the pkg-config consumer did not sum on 2 ranks"

mkdir "$TMP/cm"
cp "$SRC/tests/install/CMakeLists.txt.consumer" "$TMP/cm/CMakeLists.txt"
cp "$SRC/tests/install/consumer.c" "$TMP/cm/"
cmake -S "$TMP/cm" -B "$TMP/cm/build" -DCMAKE_PREFIX_PATH="$P" \
      -DCMAKE_C_FLAGS="${OUTSIDE_CFLAGS:-}" >/dev/null || fail "find_package(tutti) failed"
cmake --build "$TMP/cm/build" >/dev/null || fail "the find_package consumer did not build"
"$P/bin/tutti-run" -n 2 "$TMP/cm/build/consumer" | tee "$TMP/cm.out"
[ "$(grep -c ': sum 3 ok' "$TMP/cm.out")" -eq 2 ] || fail "the find_package consumer did not sum on 2 ranks"

# The Python package from the prefix: it must load the prefix's library, not the build's.
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  PYDIR=$(dirname "$(find "$P" -name __init__.py -path '*/tutti/*' -print -quit)")
  env -u TUTTI_LIBRARY PYTHONPATH="$(dirname "$PYDIR")" "$P/bin/tutti-run" -n 2 /usr/bin/python3 -c '
import numpy as np, tutti, tutti._lib as L, sys
comm = tutti.init_env()
s = comm.allreduce(np.array([comm.rank + 1.0]))
print("python sum", s[0], L._load()._name)
sys.exit(0 if s[0] == 3 and L._load()._name.startswith(sys.argv[1]) else 1)' "$P" ||
    fail "the installed Python package did not load the prefix's library and sum"
else
  echo "install_check: python3 cannot import numpy: the Python part is skipped"
fi
echo "install_check: ok"
