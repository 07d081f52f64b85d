package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// edgeBase is each command's arguments around the flag under test: quick,
// on loopback addresses and ports of this test, writing no files. A
// command missing here fails the test, so a new one gets its row.
var edgeBase = map[string][]string{
	"decode":   {"decode", "/nonexistent/x.pcap"},
	"demo":     {"demo", "--pcap", "", "--addr-a", "127.0.21.2", "--addr-b", "127.0.21.3", "--port", "24811"},
	"sim":      {"sim", "--ops", "20"},
	"pingpong": {"pingpong", "--addr", "127.0.21.3", "--rdma-port", "24812", "-p", "24813", "-n", "2", "127.0.21.2"},
	"perf":     {"perf", "--rdma-port", "24814", "-n", "2", "--no-raw"},
	"rping":    {"rping", "-c", "-a", "127.0.21.2", "-I", "127.0.21.3", "-p", "24815", "-C", "1"},
	"stat":     {"stat", "--socket", "/nonexistent/rnicd.sock"},
	// The system's libibverbs stands in for the drop-in (the plugin only
	// checks it is there); the plugin's socket goes in the test's directory.
	"k8s": {"k8s", "device-plugin", "--kubelet-socket", "kubelet.sock", "--socket", "/nonexistent/rnicd.sock", "--lib-dir", "/usr/lib/x86_64-linux-gnu"},
	// No daemon: generate fails after its flags are taken.
	"cdi":     {"cdi", "generate", "-S", "/nonexistent/rnicd.sock", "-o", "-"},
	"devices": {"devices"},
	"devinfo": {"devinfo", "-v"},
	"exec":    {"exec"},
	"ladder":  {"ladder", "/nonexistent/x.pcap", "-o", "/nonexistent/x.svg"},
	"conform": {"conform", "run", "--agent", "127.0.21.2:24816", "--udp", "127.0.21.3", "--only", "in-order"},
	"lab":     {"lab", "run", "rc-basics"},
}

// heavy are in-range values left out because they would take gigabytes
// or minutes (their max+1 is still checked): a 1 GiB perf message (2 GiB
// per side), a 2 GiB pingpong buffer, 2^26 simulated operations (the
// simulation has no wall-clock bound).
var heavy = map[string]bool{
	"perf --size 1073741824":     true,
	"pingpong --size 2147483648": true,
	"sim --ops 67108864":         true,
}

// bounded are the flag ranges the commands declare.
var bounded = map[string][]bound{"perf": perfBounds, "pingpong": pingpongBounds, "sim": simBounds}

// numericFlag matches a numeric flag in a command's --help.
var numericFlag = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([\w-]+) (int|uint|uint16|uint32|uint64|uints|ints|float|duration|string|stringArray)\b`)

// hostFlags would change the host (create a TAP device, enslave it to a
// bridge, enter a namespace) with a value that parses: their own tests
// run them in namespaces of their own.
var hostFlags = map[string]bool{"tap": true, "netns": true, "bridge": true}

// edgeValues are the values a flag of type typ is tried with: 0, 1,
// negative, huge, overflowing, and the declared max and max+1.
func edgeValues(typ string, b *bound) []string {
	var v []string
	switch typ {
	case "float":
		v = []string{"0", "1", "-1", "0.5", "NaN", "+Inf", "1e308"}
	case "duration":
		v = []string{"0", "1ns", "-1s", "2562047h"}
	case "string", "stringArray":
		v = []string{"", "-", "::", "999.1.1.1", "/nonexistent/x", "x@/nonexistent/s", "verbs:nosuch", "@", strings.Repeat("a", 5000)}
	default:
		v = []string{"0", "1", "-1", "9223372036854775807", "99999999999999999999999", "0x10"}
	}
	if b != nil {
		v = append(v, strconv.FormatInt(b.max, 10), strconv.FormatInt(b.max+1, 10), strconv.FormatInt(b.min-1, 10))
	}
	return v
}

// TestNoFlagPanics runs every command of the table, in process, with each
// of its numeric and string flags at each edge value and asserts a clean end: exit 0,
// 1 or 2, never a panic or a hang, an error in one line with one prefix.
// Each run gets a short deadline, so runs that would go on (a server, a
// long test) end through cancellation, which must be clean too.
func TestNoFlagPanics(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every command over every flag (about ten seconds)")
	}
	// A file flag given "-" or "::" creates that file: here, not in the
	// source tree.
	t.Chdir(t.TempDir())
	for _, c := range commands {
		base, ok := edgeBase[c.name]
		if !ok {
			t.Errorf("command %s has no row in edgeBase", c.name)
			continue
		}
		help, _, _ := rnic(t, c.name, "--help")
		for _, m := range numericFlag.FindAllStringSubmatch(help, -1) {
			flag, typ := m[1], m[2]
			if hostFlags[flag] {
				continue
			}
			var b *bound
			for i := range bounded[c.name] {
				if bounded[c.name][i].flag == flag {
					b = &bounded[c.name][i]
				}
			}
			for _, v := range edgeValues(typ, b) {
				if heavy[c.name+" --"+flag+" "+v] {
					continue
				}
				args := append(append([]string{}, base...), "--"+flag+"="+v)
				edgeRun(t, c.name, args)
			}
		}
	}
}

// edgeRun runs one command line with a deadline and checks how it ended.
func edgeRun(t *testing.T, name string, args []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	defer setRootContext(ctx)()
	var out, errb bytes.Buffer
	type result struct {
		code  int
		panic string
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{-1, fmt.Sprintf("%v\n%s", p, debug.Stack())}
			}
		}()
		done <- result{code: run(args, &out, &errb)}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("rnic %q still running 30 s after its deadline", args)
	}
	stderr := errb.String()
	switch {
	case r.panic != "":
		t.Errorf("rnic %q panicked: %s", args, r.panic)
	case r.code < 0 || r.code > 2:
		t.Errorf("rnic %q: exit %d, want 0, 1 or 2\n%s", args, r.code, stderr)
	case r.code != 0 && stderr == "" && out.Len() == 0:
		t.Errorf("rnic %q: exit %d and not a word why", args, r.code)
	case strings.Contains(stderr, "rnic "+name+": "+name+":"):
		t.Errorf("rnic %q: doubled prefix: %s", args, stderr)
	case strings.Contains(stderr, "goroutine "):
		t.Errorf("rnic %q: a stack on stderr: %s", args, stderr)
	}
}
