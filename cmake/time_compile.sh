#!/usr/bin/env bash
# A compiler launcher (CMAKE_CXX_COMPILER_LAUNCHER, set by the
# TANDEM_TIME_COMPILES option): runs the compile command it is given and
# appends a line to LOG, the first argument:
#   user+sys-seconds max-RSS-MB object-file
# bench/compile_costs.py reads the log and prints the heaviest translation
# units, which is how a change states what its test files and headers cost.
set -u
log=$1
shift
object=""
previous=""
for argument in "$@"; do
  [ "$previous" = "-o" ] && object=$argument
  previous=$argument
done
measured=$(mktemp)
/usr/bin/time -o "$measured" -f "%U %S %M" "$@"
status=$?
# time's last line (a failed command adds one before it).
tail -n 1 "$measured" | awk -v object="$object" 'NF == 3 { printf "%.2f %d %s\n", $1 + $2, $3 / 1024, object }' >>"$log"
rm -f "$measured"
exit $status
