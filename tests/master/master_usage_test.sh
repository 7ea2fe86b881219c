#!/bin/sh
# phalanx-master's command line: --help and -h print the usage on stdout and exit 0; without
# --config, or with a flag or argument it refuses (named on stderr), the usage goes to stderr and
# the exit status is 2; --check-config validates the file. $1: the phalanx-master binary.
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
# refused WANT ARGS...: the command line ARGS is refused with exit status 2, and stderr names WANT
# before the usage.
refused() {
  want=$1
  shift
  err=$("$master" "$@" 2>&1 >/dev/null)
  status=$?
  [ "$status" -eq 2 ] || fail "$*: exit $status, want 2"
  case $err in "phalanx-master: $want"*"usage: phalanx-master"*) ;; *) fail "$*: $err" ;; esac
}
ok="$dir/ok.yaml"
refused 'unknown flag "--listne"' --config "$ok" --listne 0.0.0.0:1
refused 'unexpected argument "extra"' --config "$ok" --check-config extra
refused '--listen: needs a value' --config "$ok" --listen
refused '--listen: expected HOST:PORT with a port of 0-65535, got "127.0.0.1"' \
  --config "$ok" --listen 127.0.0.1
refused '--metrics-listen: expected HOST:PORT with a port of 0-65535, got ":70000"' \
  --config "$ok" --metrics-listen=:70000
out=$("$master" --config="$ok" --listen 127.0.0.1:1 --check-config) || fail "flags before --check-config: exit $?"
printf 'max_slots_per_pod: eight\n' >"$dir/bad.yaml"
err=$("$master" --config "$dir/bad.yaml" --check-config 2>&1)
status=$?
[ "$status" -eq 1 ] || fail "--check-config of a bad file: exit $status, want 1"
case $err in *max_slots_per_pod*) ;; *) fail "--check-config of a bad file: field not named: $err" ;; esac
echo PASS
