#!/usr/bin/env bash
# The node's memory while it streams a CSV export of N collections (issue
# 33: "memory stays flat however many rows"). Makes a data directory with
# `sika init`, fills its sandbox ledger with N pending collections through
# the engine (seed_collections), serves it with the release binary, and
# downloads /v1/exports/collections.csv with curl (at RATE bytes/s when
# given: a slow reader) while sampling the node's VmRSS; prints VmHWM
# before and after, the largest VmRSS seen, the rows and the bytes.
#
# Usage: benches/probes/export_rss.sh TARGET_DIR [N] [RATE [SECONDS]]
#   cargo build --release --bin sika && cargo build --release -p sika-benches --bin seed_collections
#   benches/probes/export_rss.sh target 1000000          # as fast as curl reads
#   benches/probes/export_rss.sh target 1000000 2M 60    # a reader taking 2 MB/s, for 60 s
set -euo pipefail
target=$1 count=${2:-1000000} rate=${3:-} seconds_max=${4:-}
dir=$(mktemp -d)
trap 'kill "${node:-}" 2>/dev/null || true; rm -rf "$dir"' EXIT
export SIKA_DATA_DIR=$dir/data SIKA_LIVE_ADDR=127.0.0.1:18480 SIKA_SANDBOX_ADDR=127.0.0.1:18481 \
  SIKA_ADMIN_ADDR=127.0.0.1:18482 SIKA_RATE_LIMIT=1000000
init=$("$target/release/sika" init --json)
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$init" "$1"; }
"$target/release/seed_collections" "$SIKA_DATA_DIR" "$(field organizationId)" "$count"
"$target/release/sika" serve >"$dir/node.log" 2>&1 &
node=$!
until curl -sf http://127.0.0.1:18481/healthz >/dev/null; do sleep 0.2; done
kib() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$node/status"; }
echo "cores $(nproc); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "before: VmRSS $(kib VmRSS) KiB, VmHWM $(kib VmHWM) KiB"
started=$(date +%s.%N)
curl -sS ${rate:+--limit-rate "$rate"} ${seconds_max:+--max-time "$seconds_max"} -D "$dir/headers" -o "$dir/export.csv" \
  -H "authorization: Bearer $(field sandboxKey)" http://127.0.0.1:18481/v1/exports/collections.csv &
reader=$!
peak=0
while kill -0 "$reader" 2>/dev/null; do
  rss=$(kib VmRSS); [ "$rss" -gt "$peak" ] && peak=$rss
  sleep 0.25
done
wait "$reader" || echo "(the reader stopped after ${seconds_max:-?} s, as asked)"
seconds=$(echo "$(date +%s.%N) - $started" | bc)
echo "after: VmRSS $(kib VmRSS) KiB, VmHWM $(kib VmHWM) KiB; largest VmRSS sampled during the export $peak KiB"
echo "rows $(($(wc -l <"$dir/export.csv") - 1)), bytes $(wc -c <"$dir/export.csv"), seconds $seconds; load average $(cut -d' ' -f1-3 /proc/loadavg)"
grep -i -E '^(content-type|content-disposition|transfer-encoding|content-length)' "$dir/headers" || true
