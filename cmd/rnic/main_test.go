package main

import (
	"bytes"
	"strings"
	"testing"
)

// rnic runs the command line and returns stdout, stderr and the status.
func rnic(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestDispatch(t *testing.T) {
	for _, c := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{nil, 2, "", "usage: rnic COMMAND"},
		{[]string{"help"}, 0, "decode", ""},
		{[]string{"--help"}, 0, "usage: rnic COMMAND", ""},
		{[]string{"help", "decode"}, 0, "summary: frames=N roce=N icrc_bad=N iwarp=N crc_bad=N unknown=N", ""},
		{[]string{"help", "nosuch"}, 2, "", `no such command "nosuch"`},
		{[]string{"nosuch"}, 2, "", `no such command "nosuch"`},
		{[]string{"decode"}, 2, "", "no capture file given"},
		{[]string{"decode", "--bogus", "x.pcap"}, 2, "", "unknown flag: --bogus"},
	} {
		out, errOut, code := rnic(t, c.args...)
		if code != c.code || !strings.Contains(out, c.stdout) || !strings.Contains(errOut, c.stderr) {
			t.Errorf("rnic %q: status %d, stdout %q, stderr %q; want %d, %q, %q",
				c.args, code, out, errOut, c.code, c.stdout, c.stderr)
		}
	}
	// Every command in the table is listed by help.
	out, _, _ := rnic(t, "help")
	for _, c := range commands {
		if !strings.Contains(out, c.name) {
			t.Errorf("help does not list %s", c.name)
		}
	}
}
