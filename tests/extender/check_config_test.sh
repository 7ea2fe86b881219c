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

# A placement key shorter than 32 bytes is refused, naming the field.
printf 'short\n' >"$dir/short-key"
err=$("$extender" --placement-key-file "$dir/short-key" --check-config 2>&1)
status=$?
[ "$status" -eq 1 ] || fail "a short key: exit $status, want 1"
case $err in *placement_key_file*"at least 32"*) ;; *) fail "a short key: $err" ;; esac
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/key"
"$extender" --placement-key-file "$dir/key" --check-config >/dev/null || fail "a good key: exit $?"

err=$("$extender" --max-connections 10 --max-connections-per-peer 20 --check-config 2>&1)
[ $? -eq 1 ] || fail "more connections per peer than in total: accepted"
case $err in *max_connections_per_peer*) ;; *) fail "the per-peer limit is not named: $err" ;; esac
echo PASS
