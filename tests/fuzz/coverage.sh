#!/usr/bin/env bash
# Source coverage of each parser by its fuzz target's corpus: rebuilds the targets with
# clang's source-based coverage (no sanitizers), replays <build-dir>/corpus/<target>/ and the
# seeds once, and prints llvm-cov's per-function line and region coverage of the parser.
#
#   tests/fuzz/coverage.sh <build-dir>      (the build dir build_and_run.sh used)
set -euo pipefail
B=$(cd "$1" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
FUZZ_DIR=$SRC/tests/fuzz
CLANG=${CLANG:-clang}
PROFDATA=${PROFDATA:-llvm-profdata}
COV=${COV:-llvm-cov}
C=$B/cov
mkdir -p "$C"
FLAGS="-std=c11 -D_GNU_SOURCE -O1 -g -fprofile-instr-generate -fcoverage-mapping -I$SRC/include -I$SRC/src -I$FUZZ_DIR"

# target: the parser source and the functions that are its parser.
declare -A FILE=(
  [fuzz_uid]=src/bootstrap/uid.c
  [fuzz_env]=src/bootstrap/env.c
  [fuzz_config]=src/core/config.c
  [fuzz_rdv]=src/bootstrap/rdv_wire.c
  [fuzz_header]=src/transport/progress.c
  [fuzz_auth]=src/core/auth.c
)
declare -A FUNCS=(
  [fuzz_uid]='tutti__uid_unpack'
  [fuzz_env]='parse_int|parse_addr|find_addr|tutti__env_parse'
  [fuzz_config]='value_of|parse_size|parse_double|tutti__config_parse'
  [fuzz_rdv]='tutti__rdv_'
  [fuzz_header]='tutti__hdr_check|check_fingerprint|coll_label'
  [fuzz_auth]='hex_value|tutti__auth_parse_secret|tutti__auth_proof|tutti__auth_verify'
)
srcs=$(find "$SRC/src" -name '*.c' | sort)
for t in "${!FILE[@]}"; do
  [ -f "$FUZZ_DIR/$t.c" ] || continue
  "$CLANG" $FLAGS -fsanitize=fuzzer "$FUZZ_DIR/$t.c" $srcs -lcrypto -lpthread -lm -o "$C/$t"
  dirs=()
  [ -d "$B/corpus/$t" ] && dirs+=("$B/corpus/$t")
  dirs+=("$FUZZ_DIR/corpus/$t")
  LLVM_PROFILE_FILE="$C/$t.profraw" "$C/$t" -runs=0 "${dirs[@]}" >"$C/$t.log" 2>&1
  "$PROFDATA" merge -sparse "$C/$t.profraw" -o "$C/$t.profdata"
  echo "== $t (${FILE[$t]}); corpus $(ls "${dirs[@]}" | wc -l) inputs"
  "$COV" report -show-functions "$C/$t" -instr-profile="$C/$t.profdata" "$SRC/${FILE[$t]}" |
    grep -E "^Name|${FUNCS[$t]}" | awk '$1 != "Name" {printf "  %-28s regions %s of %s covered (%s), lines %s of %s (%s)\n", $1, $2 - $3, $2, $4, $5 - $6, $5, $7}'
done
