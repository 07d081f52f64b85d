#!/bin/bash
# vm.sh: the lab's network and guests. Every object lives in the network
# namespace $LAB_NS (default rnlab): the bridge, the TAPs, each QEMU and each
# tcpdump; nothing is added to the root namespace. Run as root.
#
#   vm.sh net-up                        namespace and bridge (idempotent)
#   vm.sh net-down                      stop every guest and capture, delete the namespace
#   vm.sh start NAME IP/LEN [OPTS]      boot a guest in the background; returns at LAB-READY
#         OPTS: --rdma rxe|siw|both|none  --siwcrc  --mtu N  --mem MiB  --smp N
#               --timeout SECONDS  --karg WORD (an extra kernel argument)
#   vm.sh run NAME IP/LEN SCRIPT [OPTS] boot, run SCRIPT in the guest with the serial
#                                       console on stdout, power off, exit with its status
#   vm.sh exec NAME [--timeout S] -- CMD   run CMD (bash) in the guest, print its output,
#                                       exit with its status
#   vm.sh exec-bg NAME -- CMD           start CMD in the guest, print its id
#   vm.sh wait NAME ID [TIMEOUT]        wait for an exec-bg command: its output and status
#                                       (124: timed out, 126: the guest is gone)
#   vm.sh console NAME                  the guest's serial root shell (Ctrl-] leaves)
#   vm.sh stop NAME                     power the guest off (QEMU is killed if it lingers)
#   vm.sh tap-add NAME | tap-del NAME   a bridge port tap-NAME for a process of your own
#   vm.sh cap-start TAG IFACE FILE [BPF]   tcpdump -s0 on IFACE (tap-A, br0, ...) into FILE
#   vm.sh cap-stop TAG                  stop that capture, flushing FILE
#   vm.sh list                          the running guests
#   vm.sh nsexec CMD...                 run CMD in the lab's namespace
#
# A guest's /lab is a 9p share of $LAB_STATE/NAME/share: exec drops command
# files there for guest/lab-agent, and reads their output and status back.
set -uo pipefail

LAB=$(cd "$(dirname "$0")" && pwd)
LAB_NS=${LAB_NS:-rnlab}
LAB_BR=${LAB_BR:-br0}
LAB_BR_IP=${LAB_BR_IP-10.77.0.1/24} # the namespace's own address; empty: none
LAB_BR_MAC=${LAB_BR_MAC:-02:4d:00:00:00:01} # the bridge's own, locally administered
LAB_TAP_MTU=${LAB_TAP_MTU:-9216}
LAB_CACHE=${LAB_CACHE:-/var/cache/rnic/lab}
LAB_STATE=${LAB_STATE:-/run/rnic-lab}
LAB_ACCEL=${LAB_ACCEL:-tcg} # kvm where nested virtualisation works
LAB_MEM=${LAB_MEM:-1024}
LAB_SMP=${LAB_SMP:-1}
# The kernel's own arguments: quiet, serial console, no probing of absent
# hardware, no timer calibration checks (slow and flaky under TCG).
KARGS="console=ttyS0,115200 quiet loglevel=3 panic=-1 mitigations=off tsc=reliable no_timer_check random.trust_cpu=on i8042.noaux i8042.nokbd 8250.nr_uarts=1"

die() {
	echo "vm.sh: $*" >&2
	exit 1
}
ns() { ip netns exec "$LAB_NS" "$@"; }
have_ns() { [ -e "/run/netns/$LAB_NS" ]; }
# alive PIDFILE: the process lives and is no zombie (this machine's PID 1
# may not reap daemonised QEMUs, so kill -0 would say yes to a corpse).
running() {
	local st
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) && [ -n "$st" ] && [ "$st" != Z ]
}
alive() { [ -s "$1" ] && running "$(cat "$1")"; } # PIDFILE
# mac_of 10.77.0.11/24 -> 52:54:00:4d:00:0b: a guest's MAC follows its address.
mac_of() {
	local a b c d
	IFS=. read -r a b c d <<<"${1%/*}"
	printf '52:54:00:%02x:%02x:%02x\n' "$b" "$c" "$d"
}

net_up() {
	have_ns || ip netns add "$LAB_NS" || die "cannot create namespace $LAB_NS"
	ip -n "$LAB_NS" link set lo up
	# No IPv6 from the namespace itself: the captures stay quiet.
	ns sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ip -n "$LAB_NS" link show "$LAB_BR" >/dev/null 2>&1 ||
		ip -n "$LAB_NS" link add "$LAB_BR" type bridge stp_state 0 forward_delay 0 mcast_snooping 0
	# A fixed address: a bridge that takes its ports' MACs was seen with
	# 00:00:00:00:00:00 after TAPs came and went, and then answered no ARP.
	ip -n "$LAB_NS" link set "$LAB_BR" address "$LAB_BR_MAC"
	ip -n "$LAB_NS" link set "$LAB_BR" up
	if [ -n "$LAB_BR_IP" ] && ! ip -n "$LAB_NS" -4 addr show dev "$LAB_BR" | grep -q inet; then
		ip -n "$LAB_NS" addr add "$LAB_BR_IP" dev "$LAB_BR"
	fi
}

# tap_add NAME: tap-NAME on the bridge. The MTU is jumbo because a bridge
# drops, without a word, frames larger than the port they leave by.
tap_add() {
	local t=tap-$1
	have_ns || net_up
	ip -n "$LAB_NS" link show "$t" >/dev/null 2>&1 || ip -n "$LAB_NS" tuntap add dev "$t" mode tap
	ip -n "$LAB_NS" link set "$t" mtu "$LAB_TAP_MTU" master "$LAB_BR" up
}
tap_del() { ip -n "$LAB_NS" link del "tap-$1" 2>/dev/null || true; }

# parse_opts OPTS...: sets LAB_APPEND (the guest's lab.* words), TIMEOUT,
# LAB_MEM and LAB_SMP.
parse_opts() {
	local rdma=none
	LAB_APPEND="" TIMEOUT=${LAB_BOOT_TIMEOUT:-240}
	while [ $# -gt 0 ]; do
		case $1 in
		--rdma) rdma=$2 && shift ;;
		--siwcrc) LAB_APPEND+=" lab.siwcrc=1" ;;
		--mtu) LAB_APPEND+=" lab.mtu=$2" && shift ;;
		--mem) LAB_MEM=$2 && shift ;;
		--smp) LAB_SMP=$2 && shift ;;
		--timeout) TIMEOUT=$2 && shift ;;
		--karg) LAB_APPEND+=" $2" && shift ;;
		*) die "unknown option $1" ;;
		esac
		shift
	done
	LAB_APPEND+=" lab.rdma=$rdma"
}

# qemu_cmd NAME IP APPEND: the QEMU command line, one word per line.
# vnet_hdr=off: without the virtio-net header the guest gets no segmentation
# or checksum offload, so every frame on the bridge is wire-sized with final
# checksums, as golden captures need. snapshot=on: the guests share the
# read-only image, each writing to an overlay that vanishes with it.
qemu_cmd() {
	local name=$1 ip=$2 append=$3 d=$LAB_STATE/$1 cpu="-cpu max"
	[ "$LAB_ACCEL" = kvm ] && cpu="-cpu host,-arch-capabilities"
	printf '%s\n' qemu-system-x86_64 -name "lab-$name" -machine "pc,accel=$LAB_ACCEL" $cpu \
		-smp "$LAB_SMP" -m "$LAB_MEM" -nodefaults -no-user-config -display none -no-reboot \
		-bios /usr/share/qemu/qboot.rom \
		-kernel "$LAB_CACHE/vmlinuz" -initrd "$LAB_CACHE/initrd.img" \
		-drive "file=$LAB_CACHE/rootfs.img,if=virtio,format=raw,snapshot=on,cache=unsafe" \
		-netdev "tap,id=net0,ifname=tap-$name,script=no,downscript=no,vnet_hdr=off" \
		-device "virtio-net-pci,netdev=net0,mac=$(mac_of "$ip"),romfile=" \
		-virtfs "local,path=$d/share,mount_tag=lab,security_model=none,id=lab" \
		-append "$KARGS lab.name=$name lab.ip=$ip$append"
}

# prepare NAME: a fresh state directory and the guest's TAP.
prepare() {
	local d=$LAB_STATE/$1
	[ -s "$LAB_CACHE/rootfs.img" ] || die "no guest image in $LAB_CACHE: run $LAB/build-image.sh"
	alive "$d/pid" && die "guest $1 is already running (pid $(cat "$d/pid"))"
	rm -rf "$d" && mkdir -p "$d/share/cmd" "$d/share/out"
	net_up
	tap_add "$1"
}

vm_start() { # NAME IP OPTS...
	local name=$1 ip=$2 d=$LAB_STATE/$1 t0 i
	shift 2
	parse_opts "$@"
	prepare "$name"
	local -a cmd
	mapfile -t cmd < <(qemu_cmd "$name" "$ip" "$LAB_APPEND")
	t0=$(date +%s%N)
	ns "${cmd[@]}" -chardev "socket,id=con,path=$d/console.sock,server=on,wait=off,logfile=$d/console.log" \
		-serial chardev:con -pidfile "$d/pid" -daemonize 2>"$d/qemu.err" || { cat "$d/qemu.err" >&2; die "qemu failed"; }
	for ((i = 0; ; i++)); do
		[ -e "$d/share/ready" ] && break
		alive "$d/pid" || { tail -30 "$d/console.log" >&2; die "guest $name died while booting"; }
		[ $i -gt $((TIMEOUT * 10)) ] && { tail -30 "$d/console.log" >&2; die "guest $name: no LAB-READY in ${TIMEOUT}s"; }
		sleep 0.1
	done
	printf 'guest %s up: ip=%s pid=%s in %.1fs (guest uptime %ss)\n' "$name" "$ip" "$(cat "$d/pid")" \
		"$(awk -v ns=$(($(date +%s%N) - t0)) 'BEGIN { print ns / 1e9 }')" "$(cat "$d/share/ready")"
}

vm_run() { # NAME IP SCRIPT OPTS...
	local name=$1 ip=$2 script=$3 d=$LAB_STATE/$1 rc
	shift 3
	parse_opts "$@"
	prepare "$name"
	cp "$script" "$d/share/run.sh"
	local -a cmd
	mapfile -t cmd < <(qemu_cmd "$name" "$ip" "$LAB_APPEND lab.run=/lab/run.sh")
	ns timeout "${LAB_RUN_TIMEOUT:-1800}" "${cmd[@]}" -serial stdio -pidfile "$d/pid" </dev/null
	rc=$?
	tap_del "$name"
	[ -s "$d/share/exit" ] && exit "$(cat "$d/share/exit")"
	echo "vm.sh: guest $name ended without LAB-EXIT (qemu status $rc)" >&2
	exit 125
}

submit() { # NAME CMD... -> id
	local dir=$LAB_STATE/$1/share/cmd id
	shift
	id=$(date +%s%N)-$$-$RANDOM
	printf '%s\n' "$*" >"$dir/.$id" && mv "$dir/.$id" "$dir/$id.sh" && echo "$id"
}

# await NAME ID TIMEOUT STREAM: waits for the command's status file; with
# STREAM=1 its output is printed as it grows, else all at the end.
await() {
	local name=$1 id=$2 timeout=$3 stream=$4 out=$LAB_STATE/$1/share/out/$2 shown=0 size i
	for ((i = 0; ; i++)); do
		if [ "$stream" = 1 ] && [ -f "$out.out" ]; then
			size=$(stat -c %s "$out.out")
			if [ "$size" -gt "$shown" ]; then
				tail -c +$((shown + 1)) "$out.out" | head -c $((size - shown))
				shown=$size
			fi
		fi
		if [ -f "$out.rc" ]; then
			[ -f "$out.out" ] && tail -c +$((shown + 1)) "$out.out"
			return "$(cat "$out.rc")"
		fi
		alive "$LAB_STATE/$name/pid" || { echo "vm.sh: guest $name is not running" >&2; return 126; }
		[ $i -ge $((timeout * 5)) ] && { echo "vm.sh: $id did not finish in ${timeout}s" >&2; return 124; }
		sleep 0.2
	done
}

vm_stop() { # NAME
	local d=$LAB_STATE/$1 pid i
	if alive "$d/pid"; then
		pid=$(cat "$d/pid")
		submit "$1" 'sync; echo o > /proc/sysrq-trigger' >/dev/null
		for ((i = 0; i < 100; i++)); do running "$pid" || break; sleep 0.1; done
		running "$pid" && kill "$pid" && sleep 0.5
		running "$pid" && kill -9 "$pid"
	fi
	tap_del "$1"
}

# cap_start TAG IFACE FILE [BPF...]. tcpdump's own PID is recorded (ip netns
# exec execs it); --immediate-mode, because a short capture could otherwise
# end with its packets still in an unretired ring block.
cap_start() {
	local tag=$1 ifc=$2 file=$3 pf=$LAB_STATE/cap-$1.pid ef=$LAB_STATE/cap-$1.err i
	shift 3
	mkdir -p "$LAB_STATE" "$(dirname "$file")"
	alive "$pf" && die "capture $tag is already running"
	rm -f "$file"
	ip netns exec "$LAB_NS" tcpdump -i "$ifc" -s 0 -U -n --immediate-mode -w "$file" "$@" </dev/null 2>"$ef" &
	echo $! >"$pf"
	for ((i = 0; i < 50; i++)); do
		grep -qs 'listening on' "$ef" && return 0 # the file appears when tcpdump's shell opens it
		sleep 0.1
	done
	cat "$ef" >&2
	die "tcpdump did not start"
}

# cap_stop TAG: SIGTERM (a background job of a script ignores SIGINT).
cap_stop() {
	local pf=$LAB_STATE/cap-$1.pid i
	alive "$pf" || return 0
	sleep 0.5 # the last frames of the test
	kill -TERM "$(cat "$pf")"
	for ((i = 0; i < 50; i++)); do alive "$pf" || break; sleep 0.1; done
	alive "$pf" && { echo "vm.sh: capture $1 did not stop" >&2; return 1; }
	grep -E 'captured|dropped' "$LAB_STATE/cap-$1.err" | paste -sd' ' >&2
	rm -f "$pf"
}

net_down() {
	local p t
	for p in "$LAB_STATE"/*/pid; do [ -e "$p" ] && vm_stop "$(basename "$(dirname "$p")")"; done
	for p in "$LAB_STATE"/cap-*.pid; do
		[ -e "$p" ] || continue
		t=${p##*/cap-}
		cap_stop "${t%.pid}"
	done
	! have_ns || ip netns del "$LAB_NS"
}

cmd=${1:-help}
shift
case $cmd in
net-up) net_up ;;
net-down) net_down ;;
tap-add) tap_add "$1" && echo "tap-$1" ;;
tap-del) tap_del "$1" ;;
start) [ $# -ge 2 ] || die "usage: start NAME IP/LEN [OPTS]" && vm_start "$@" ;;
run) [ $# -ge 3 ] || die "usage: run NAME IP/LEN SCRIPT [OPTS]" && vm_run "$@" ;;
exec | exec-bg)
	name=$1 timeout=600
	shift
	[ "${1:-}" = --timeout ] && timeout=$2 && shift 2
	[ "${1:-}" = -- ] && shift
	alive "$LAB_STATE/$name/pid" || die "guest $name is not running"
	id=$(submit "$name" "$@") || die "cannot queue the command"
	[ "$cmd" = exec-bg ] && echo "$id" && exit 0
	await "$name" "$id" "$timeout" 1
	exit ;;
wait) await "$1" "$2" "${3:-600}" 0 ;;
console) exec socat -,raw,echo=0,escape=0x1d "UNIX-CONNECT:$LAB_STATE/$1/console.sock" ;;
stop) vm_stop "$1" ;;
cap-start) cap_start "$@" ;;
cap-stop) cap_stop "$1" ;;
list)
	for p in "$LAB_STATE"/*/pid; do
		alive "$p" && echo "$(basename "$(dirname "$p")") pid=$(cat "$p")"
	done
	true ;;
nsexec) ns "$@" ;;
*) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0" ;;
esac
