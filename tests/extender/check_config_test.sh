#!/bin/sh
# phalanx-extender --check-config: exit 0 and "valid" for a good configuration, exit 1 naming the
# field for a bad one. $1: the phalanx-extender binary.
set -u
extender=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

printf 'slot_type: gpu\nmax_slots_per_pod: 8\n' >"$dir/ok.yaml"
out=$("$extender" --config "$dir/ok.yaml" --check-config) || fail "a good file: exit $?"
case $out in *"is valid"*) ;; *) fail "a good file: $out" ;; esac

printf 'max_slots_per_pod: eight\n' >"$dir/bad.yaml"
err=$("$extender" --config "$dir/bad.yaml" --check-config 2>&1)
status=$?
[ "$status" -eq 1 ] || fail "a bad file: exit $status, want 1"
case $err in *max_slots_per_pod*) ;; *) fail "a bad file: the field is not named: $err" ;; esac
echo PASS
