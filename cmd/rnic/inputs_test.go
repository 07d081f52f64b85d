package main

import (
	"os"
	"strings"
	"testing"
)

// TestInputsValidated: values that used to be taken silently (0 as "the
// default"), allocated before failing, or mistaken for something else are
// refused up front, in one line naming the flag and its range.
func TestInputsValidated(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"perf", "-s", "0"}, "rnic perf: -s/--size 0: must be 1..1073741824 (rnic help perf)"},
		{[]string{"perf", "-n", "0"}, "-n/--iters 0: must be 1..67108864"},
		{[]string{"perf", "--qps", "-1"}, "-q/--qps -1: must be 1..32766"},
		{[]string{"perf", "--qps", "32767"}, "-q/--qps 32767: must be 1..32766"},
		{[]string{"perf", "--inflight", "0"}, "--inflight 0: must be 1..1073741824"},
		// A depth given is kept and checked; one left at the default fits.
		{[]string{"perf", "send_bw", "--qps", "64", "-r", "512", "-n", "1"},
			"rnic perf: bad configuration: -q/--qps 64 × -r/--rx-depth 512 needs a receive CQ of 32769 entries, " +
				"the rnic NIC allows 32767 (max_cqe): at most 63 QPs at this depth"},
		{[]string{"perf", "--qps", "256", "-t", "128", "-n", "1"}, "-q/--qps 256 × -t/--tx-depth 128 needs a send CQ of 32769 entries"},
		{[]string{"perf", "nosuch_bw"}, `rnic perf: no test "nosuch_bw": write_bw, read_bw,`},
		{[]string{"pingpong", "-s", "0"}, "rnic pingpong: -s/--size 0: must be 1..2147483648"},
		{[]string{"pingpong", "-s", "4294967297"}, "-s/--size 4294967297: must be 1..2147483648"},
		{[]string{"pingpong", "-r", "40000"}, "-r/--rx-depth 40000: must be 1..32766"},
		{[]string{"sim", "--qps", "100000"}, "rnic sim: --qps 100000: must be 1..4096"},
		{[]string{"sim", "--qps", "2000"}, "rnic sim: --qps 2000 × --depth 8 × --max-msg 16384: the buffers would take 1625 MiB, at most 1024 MiB\n"},
		{[]string{"sim", "--max-msg", "0"}, "--max-msg 0: must be 1..16777216"},
		{[]string{"sim", "--loss", "NaN"}, "--loss NaN: must be a probability in [0, 1)"},
		{[]string{"rping", "-c", "-a", "127.0.0.1", "-C", "-1"}, "rnic rping: bad configuration: Invalid count -1"},
		{[]string{"rping", "-c", "-a", "127.0.0.1", "-S", "1"}, "rnic rping: bad configuration: Invalid size 1"},
		{[]string{"perf", "-m", "300"}, "rnic perf: -m/--mtu 300: must be 256, 512, 1024, 2048 or 4096 (rnic help perf)"},
		{[]string{"pingpong", "-m", "0"}, "rnic pingpong: -m/--mtu 0: must be 256, 512, 1024, 2048 or 4096"},
		{[]string{"sim", "--mtu", "9000"}, "rnic sim: --mtu 9000: must be 256, 512, 1024, 2048 or 4096"},
		{[]string{"demo", "--timeout", "0s"}, "rnic demo: --timeout 0s: must be positive"},
	} {
		_, errOut, code := rnic(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("rnic %q: exit %d, stderr %q; want 2 and one line with %q", c.args, code, errOut, c.want)
		}
	}
}

// TestDecodeStdin: "-" is the standard input, as tcpdump -w - pipes it.
func TestDecodeStdin(t *testing.T) {
	f, err := os.Open("../../testdata/captures/rxe-rc-pingpong.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stdin = f
	defer func() { stdin = os.Stdin }()
	out, errOut, code := rnic(t, "decode", "-")
	fromFile, _, _ := rnic(t, "decode", "../../testdata/captures/rxe-rc-pingpong.pcap")
	if code != 0 || out != fromFile || !strings.Contains(out, "summary: frames=") {
		t.Errorf("decode -: exit %d, stderr %q, output equal to the file's: %v\n%s", code, errOut, out == fromFile, out)
	}
}
