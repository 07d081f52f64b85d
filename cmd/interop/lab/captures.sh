#!/bin/bash
# captures.sh: takes the golden captures of testdata/captures again, between
# two guests: A (10.77.0.11) always serves, B (10.77.0.12) is the client.
# Each capture is every frame of A's bridge port (tap-A), snaplen 0; the
# output of both sides goes to logs/NAME.log beside it.
#
#   captures.sh [rxe|siw|siwcrc|all [NAME-REGEXP]]
#   (OUT=DIR, default ./lab-captures; run as root, after build-image.sh)
#
# rxe uses GID index 1, the IPv4-mapped RoCEv2 GID (::ffff:10.77.0.x); siw
# needs rdma_cm (perftest -R), since an iWARP QP is only connected through
# the iWARP CM.
set -uo pipefail
LAB=$(cd "$(dirname "$0")" && pwd)
VM="$LAB/vm.sh"
OUT=${OUT:-$PWD/lab-captures}
A=10.77.0.11 B=10.77.0.12
ONLY=${2:-.}

# The captures, one a line: mode, name, the server's command; the client
# runs the same command with A's address added, except where "| CLIENT"
# gives its own.
CAPTURES=$(
	cat <<TABLE
rxe rxe-rc-pingpong       ibv_rc_pingpong -d rxe0 -g 1 -n 10 -s 64
rxe rxe-rc-pingpong-4096  ibv_rc_pingpong -d rxe0 -g 1 -n 5 -s 4096
rxe rxe-write-bw-64       ib_write_bw -d rxe0 -x 1 -F -s 64 -n 100
rxe rxe-write-bw-4096     ib_write_bw -d rxe0 -x 1 -F -s 4096 -n 20
rxe rxe-write-bw-65536    ib_write_bw -d rxe0 -x 1 -F -s 65536 -n 5
rxe rxe-read-bw-4096      ib_read_bw -d rxe0 -x 1 -F -s 4096 -n 20
rxe rxe-read-bw-65536     ib_read_bw -d rxe0 -x 1 -F -s 65536 -n 5
rxe rxe-send-bw-4096      ib_send_bw -d rxe0 -x 1 -F -s 4096 -n 20
rxe rxe-send-bw-ud-1024   ib_send_bw -d rxe0 -x 1 -F -c UD -s 1024 -n 20
rxe rxe-atomic-cmpswap    ib_atomic_bw -d rxe0 -x 1 -F -A CMP_AND_SWAP -n 50
rxe rxe-write-lat-64      ib_write_lat -d rxe0 -x 1 -F -s 64 -n 100
rxe rxe-read-lat-64       ib_read_lat -d rxe0 -x 1 -F -s 64 -n 100
rxe rxe-send-lat-64       ib_send_lat -d rxe0 -x 1 -F -s 64 -n 100
rxe rxe-rping             rping -s -a $A -v -C 10 | rping -c -a $A -v -C 10
rxe rxe-write-bw-cm-4096  ib_write_bw -d rxe0 -R -F -s 4096 -n 20
siw siw-rping             rping -s -a $A -v -C 10 | rping -c -a $A -v -C 10
siw siw-write-bw-4096     ib_write_bw -d siw0 -R -F -s 4096 -n 20
siw siw-write-bw-65536    ib_write_bw -d siw0 -R -F -s 65536 -n 5
siw siw-read-bw-4096      ib_read_bw -d siw0 -R -F -s 4096 -n 20
siw siw-send-bw-4096      ib_send_bw -d siw0 -R -F -s 4096 -n 20
siw siw-write-lat-64      ib_write_lat -d siw0 -R -F -s 64 -n 50
siw siw-send-lat-64       ib_send_lat -d siw0 -R -F -s 64 -n 50
siwcrc siw-rping-mpacrc       rping -s -a $A -v -C 10 | rping -c -a $A -v -C 10
siwcrc siw-read-bw-4096-mpacrc ib_read_bw -d siw0 -R -F -s 4096 -n 20
TABLE
)

boot_pair() { # MODE
	local opts=(--rdma "${1%crc}")
	[ "$1" = siwcrc ] && opts+=(--siwcrc)
	"$VM" stop A
	"$VM" stop B
	"$VM" start A "$A/24" "${opts[@]}" && "$VM" start B "$B/24" "${opts[@]}"
}

# take NAME SERVER CLIENT: the server starts, gets two seconds to listen, the
# client runs; both statuses are logged and must be 0.
take() {
	local name=$1 server=$2 client=$3 log=$OUT/logs/$1.log id rs rc
	echo "=== $name" >"$log"
	"$VM" cap-start "$name" tap-A "$OUT/$name.pcap" 2>>"$log" || return 1
	id=$("$VM" exec-bg A -- "$server")
	sleep 2
	{ echo "--- client (B): $client" && "$VM" exec B --timeout 180 -- "$client"; } >>"$log" 2>&1
	rc=$?
	{ echo "--- server (A): $server" && "$VM" wait A "$id" 60; } >>"$log" 2>&1
	rs=$?
	"$VM" cap-stop "$name" 2>>"$log"
	printf '%-26s server=%s client=%s\n' "$name" "$rs" "$rc"
	[ "$rs" = 0 ] && [ "$rc" = 0 ]
}

run_mode() { # MODE
	local mode name server client booted=false failed=0
	# The table comes in on fd 3: the guests' commands get no stdin to eat.
	while read -r -u 3 mode name server; do
		[ "$mode" = "$1" ] && [[ $name =~ $ONLY ]] || continue
		$booted || { boot_pair "$1" || return 1; booted=true; }
		client="$server $A"
		[[ $server == *"|"* ]] && client=${server#*| } server=${server%% |*}
		take "$name" "$server" "$client" || failed=1
	done 3<<<"$CAPTURES" </dev/null
	if $booted; then
		"$VM" stop A
		"$VM" stop B
	fi
	return $failed
}

mkdir -p "$OUT/logs"
"$VM" net-up
status=0
case ${1:-all} in
all) for m in rxe siw siwcrc; do run_mode $m || status=1; done ;;
rxe | siw | siwcrc) run_mode "$1" || status=1 ;;
*) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0" && exit 2 ;;
esac
echo "captures and logs in $OUT"
exit $status
