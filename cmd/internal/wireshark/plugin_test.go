package wireshark

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const captures = "../../../testdata/captures/"

// tshark runs tshark with the plugin on file: the frame numbers that match
// filter, one field's values by frame otherwise.
func tshark(t *testing.T, file, filter string, fields ...string) [][]string {
	t.Helper()
	bin, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark is not installed (apt-get install tshark): the plugin runs inside it")
	}
	plugin, err := filepath.Abs("rnic.lua")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-n", "-X", "lua_script:" + plugin, "-r", file, "-T", "fields"}
	if filter != "" {
		args = append(args, "-Y", filter)
	}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark %s: %v", strings.Join(args, " "), err)
	}
	var rows [][]string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if l != "" {
			rows = append(rows, strings.Split(l, "\t"))
		}
	}
	return rows
}

// frameNumbers is the first column of rows as frame numbers.
func frameNumbers(t *testing.T, rows [][]string) []int {
	t.Helper()
	var out []int
	for _, r := range rows {
		n, err := strconv.Atoi(r[0])
		if err != nil {
			t.Fatalf("frame number %q: %v", r[0], err)
		}
		out = append(out, n)
	}
	return out
}

// TestPluginLoads: tshark knows the plugin's fields (a Lua error would
// leave them undefined and the filter rejected).
func TestPluginLoads(t *testing.T) {
	rows := tshark(t, captures+"rxe-rping.pcap", "rnic.icrc.status", "frame.number")
	if len(rows) == 0 {
		t.Fatal("no frame has rnic.icrc.status: the plugin did not run")
	}
}

// writeAltered writes b (an edited capture) to a temporary file.
func writeAltered(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "altered.pcap")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// equalFrames fails unless the frames got are exactly want.
func equalFrames(t *testing.T, what string, got, want []int) {
	t.Helper()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: frames %v, want %v", what, got, want)
	}
}
