#!/usr/bin/env bash
# Builds seed_outside.c the way an outside user would, with exactly the command API.md gives,
# against the built library only, and runs it on 3 ranks.
#
#   bash outside_build.sh SOURCE_DIR BUILD_DIR
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 SOURCE_DIR BUILD_DIR" >&2
  exit 2
fi
SRC=$(cd "$1" && pwd)
BUILD=$(cd "$2" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

cd "$SRC/tests/integration"
set -x
# OUTSIDE_CFLAGS: extra flags a sanitizer build of the library needs in its users.
cc ${OUTSIDE_CFLAGS:-} -I"$SRC/include" seed_outside.c -L"$BUILD/lib" -ltutti -lpthread -Wl,-rpath,"$BUILD/lib" -o "$TMP/prog"
"$BUILD/bin/tutti-run" -n 3 "$TMP/prog"
