#!/bin/sh
# phalanx-master's command line: --help and -h print the usage on stdout and exit 0; without
# --config the usage goes to stderr and the exit status is 2; --check-config validates the file. $1: the phalanx-master binary.
set -u
master=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

for flag in --help -h; do
  out=$("$master" "$flag" 2>/dev/null) || fail "$flag exited $?"
  case $out in "usage: phalanx-master"*) ;; *) fail "$flag printed no usage on stdout: $out" ;; esac
done

out=$("$master" 2>/dev/null)
status=$?
[ "$status" -eq 2 ] || fail "without --config: exit $status, want 2"
[ -z "$out" ] || fail "without --config: stdout not empty: $out"
err=$("$master" 2>&1 >/dev/null)
case $err in "usage: phalanx-master"*) ;; *) fail "without --config: no usage on stderr: $err" ;; esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf 'max_slots_per_pod: 8\nresource_pools: [{pool_name: default, kubernetes_namespace: default}]\n' \
  >"$dir/ok.yaml"
out=$("$master" --config "$dir/ok.yaml" --check-config) || fail "--check-config of a good file: exit $?"
case $out in *"is valid"*) ;; *) fail "--check-config of a good file: $out" ;; esac
printf 'max_slots_per_pod: eight\n' >"$dir/bad.yaml"
err=$("$master" --config "$dir/bad.yaml" --check-config 2>&1)
status=$?
[ "$status" -eq 1 ] || fail "--check-config of a bad file: exit $status, want 1"
case $err in *max_slots_per_pod*) ;; *) fail "--check-config of a bad file: field not named: $err" ;; esac
echo PASS
