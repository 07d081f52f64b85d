#!/usr/bin/env bash
# make conform-self: rnic conform against rnic itself through the command
# line, as a user runs it: per transport an agent process whose own NIC is
# the DUT (on loopback), the tester beside it, every case. Each must pass
# (the suite proves that each rule can be met). Writes OUT/conform-KIND.
# {json,junit.xml,pcap}, the agents' logs and OUT/report (rnic conform
# report). Usage: self.sh RNIC OUT
set -euo pipefail
rnic=$1 out=$2
mkdir -p "$out"
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap stop EXIT

# listening PORT: true once the agent accepts connections (10 s at most).
listening() {
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	return 1
}

# suite TRANSPORT PORT NET: one transport's run; its own loopback addresses
# (127.0.NET.2 the DUT, .3 the tester) keep it apart from other users of
# 127.0.0.x.
suite() {
	local t=$1 port=$2 net=$3
	"$rnic" conform agent --addr "127.0.$net.2" --transport "$t" --listen "127.0.0.1:$port" >"$out/agent-$t.log" 2>&1 &
	pids+=($!)
	listening "$port" || { echo "conform-self: the $t agent never listened:" >&2; cat "$out/agent-$t.log" >&2; return 1; }
	local rc=0
	"$rnic" conform run --agent "127.0.0.1:$port" --udp "127.0.$net.3" --transport "$t" \
		--pcap "$out/conform-$t.pcap" --junit "$out/conform-$t.junit.xml" --json >"$out/conform-$t.json" || rc=$?
	echo "conform-self $t: exit $rc"
	return $rc
}

rc=0
suite roce 7481 31 || rc=1
suite iwarp 7482 32 || rc=1
"$rnic" conform report -o "$out/report" --title "rnic conform: rnic against itself" "$out/conform-roce.json" "$out/conform-iwarp.json"
# The summary of each run: every case passes, or the target fails.
for t in roce iwarp; do
	grep -o '"summary": {[^}]*}' -z "$out/conform-$t.json" | tr -d '\n\0' | tr -s ' '
	echo
done
exit $rc
