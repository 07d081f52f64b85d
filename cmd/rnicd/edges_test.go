package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
)

// rnicdNumeric matches a numeric flag in rnicd's help.
var rnicdNumeric = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([\w-]+) (int|uint|uint16|uint32|uint64)\b`)

// TestNoFlagPanics: rnicd with each numeric flag (and --mtu) at 0, 1,
// -1, huge and overflowing values ends cleanly: it serves and stops on a
// signal (0), or refuses the value (2) or fails to open (1) with one
// prefixed line, never a panic.
func TestNoFlagPanics(t *testing.T) {
	var help bytes.Buffer
	printHelp(&help)
	flags := []string{"mtu"}
	for _, m := range rnicdNumeric.FindAllStringSubmatch(help.String(), -1) {
		flags = append(flags, m[1])
	}
	if len(flags) < 4 {
		t.Fatalf("found only %v in the help", flags)
	}
	sock := filepath.Join(t.TempDir(), "rnicd.sock")
	for _, flag := range flags {
		for _, v := range []string{"0", "1", "-1", "576", "9000", "9001", "9223372036854775807", "18446744073709551616", "99999999999999999999999"} {
			args := []string{"--udp", "127.0.24.2:24871", "--socket", sock, "--" + flag + "=" + v}
			code, stderr, p := runGuarded(args)
			switch {
			case p != "":
				t.Errorf("rnicd %q panicked: %s", args, p)
			case code < 0 || code > 2:
				t.Errorf("rnicd %q: exit %d", args, code)
			case code != 0 && !strings.HasPrefix(stderr, "rnicd: "):
				t.Errorf("rnicd %q: exit %d, stderr %q", args, code, stderr)
			case strings.Contains(stderr, "rnicd: rnicd:"):
				t.Errorf("rnicd %q: doubled prefix: %q", args, stderr)
			}
			os.Remove(sock)
		}
	}
}

// runGuarded runs rnicd with a stop already signalled, recovering a
// panic.
func runGuarded(args []string) (code int, stderr, panicked string) {
	var out, errb bytes.Buffer
	stop := make(chan os.Signal, 1)
	stop <- syscall.SIGTERM
	defer func() {
		if p := recover(); p != nil {
			panicked = fmt.Sprintf("%v\n%s", p, debug.Stack())
		}
	}()
	code = run(args, &out, &errb, stop)
	return code, errb.String(), ""
}
