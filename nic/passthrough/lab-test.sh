#!/bin/bash
# lab-test.sh: the passthrough (-tags verbs) tests inside lab guests: P1 with
# rxe (RoCEv2) and P2 with siw (iWARP). Builds the test binaries on the host
# (bookworm host and guests share glibc), boots a guest only if it is not
# running (and then stops it again), runs plain and -race binaries, exits
# non-zero if any run failed. From the repository root, as root:
#   bash nic/passthrough/lab-test.sh   (RUN=pattern selects tests)
set -u
LAB=${LAB:-cmd/interop/lab}   # the lab directory (vm.sh, build-image.sh)
OUT=${OUT:-/tmp/pt}
RUN=${RUN:-.}   # -test.run pattern
mkdir -p "$OUT"
go test -c -tags verbs -o "$OUT/passthrough.test" ./nic/passthrough || exit 1
go test -c -race -tags verbs -o "$OUT/passthrough.race.test" ./nic/passthrough || exit 1
bash "$LAB/build-image.sh" || exit 1
bash "$LAB/vm.sh" net-up || exit 1
rc=0
for g in "P1 10.77.0.31 rxe" "P2 10.77.0.32 siw"; do
	set -- $g
	booted=0
	if ! bash "$LAB/vm.sh" list | grep -q "^$1 "; then
		bash "$LAB/vm.sh" start "$1" "$2/24" --rdma "$3" || { rc=1; continue; }
		booted=1
	fi
	cp "$OUT/passthrough.test" "$OUT/passthrough.race.test" "/run/rnic-lab/$1/share/"
	echo "== $1 ($3): passthrough tests"
	for bin in passthrough.test passthrough.race.test; do
		bash "$LAB/vm.sh" exec "$1" --timeout 600 -- \
			"cd /lab && ./$bin -test.v -test.timeout 300s -test.run '$RUN'" || rc=1
	done
	[ "$booted" = 1 ] && bash "$LAB/vm.sh" stop "$1"
done
exit $rc
