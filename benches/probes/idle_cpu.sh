#!/usr/bin/env bash
# An idle node's CPU: starts `sika serve` on a fresh data directory, waits
# 5 s, then prints the share of one core the process used over the next
# SECONDS (default 20) and how many times its threads woke (context
# switches) per second. Usage: idle_cpu.sh <sika binary> [seconds]
set -euo pipefail
bin=$1
seconds=${2:-20}
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
SIKA_DATA_DIR=$dir "$bin" init --json >/dev/null
SIKA_DATA_DIR=$dir SIKA_LIVE_ADDR=127.0.0.1:0 SIKA_SANDBOX_ADDR=127.0.0.1:0 SIKA_ADMIN_ADDR=127.0.0.1:0 \
  "$bin" serve >"$dir/log" 2>&1 &
pid=$!
sleep 5
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
wakes() { cat /proc/"$pid"/task/*/status | awk '/^(non)?voluntary_ctxt_switches/ {s += $2} END {print s}'; }
t0=$(ticks); w0=$(wakes)
sleep "$seconds"
t1=$(ticks); w1=$(wakes)
python3 -c "print(f'idle CPU: {($t1 - $t0) / $(getconf CLK_TCK) / $seconds * 100:.2f} % of a core, {($w1 - $w0) / $seconds:.0f} wakes/s over $seconds s')"
