// What the tools' commands (perf, pingpong, rping) do alike with their
// flags: parse them, printing the usage on --help, and open the --pcap
// file.

package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/transport/pcap"
)

// parseFlags parses args into fs. On --help it prints the usage on stdout
// and says so; any other error is the caller's usage error.
func parseFlags(fs *pflag.FlagSet, args []string, stdout io.Writer) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return true, nil
		}
		return false, err
	}
	return false, nil
}

// openPcap creates the --pcap file; nil when path is empty.
func openPcap(path string) (*pcap.Writer, error) {
	if path == "" {
		return nil, nil
	}
	return pcap.Create(path)
}

// toolCommand is one of those commands while it starts.
type toolCommand struct {
	name           string // perf, pingpong, rping
	stdout, stderr io.Writer
}

// usage reports a usage error and returns the exit status 2.
func (t toolCommand) usage(err error) int {
	fmt.Fprintf(t.stderr, "rnic %s (rnic help %s)\n", withPrefix(t.name+": ", err), t.name)
	return 2
}

// parse parses args into fs and resolves them: ok, or the exit status
// (0 after --help).
func (t toolCommand) parse(fs *pflag.FlagSet, args []string, resolve func() error) (code int, ok bool) {
	help, err := parseFlags(fs, args, t.stdout)
	switch {
	case help:
		return 0, false
	case err == nil:
		err = resolve()
	}
	if err != nil {
		return t.usage(err), false
	}
	return 0, true
}

// pcap opens the --pcap file (nil for none): ok, or the exit status.
func (t toolCommand) pcap(path string) (pw *pcap.Writer, code int, ok bool) {
	pw, err := openPcap(path)
	if err != nil {
		fmt.Fprintf(t.stderr, "rnic %s\n", withPrefix(t.name+": ", err))
		return nil, 2, false
	}
	return pw, 0, true
}

// toolCaptures are a run's --pcap file and --trace writer.
type toolCaptures struct {
	pcap  *pcap.Writer // nil without --pcap
	trace io.Writer    // stderr with --trace, else nil
}

// close closes the --pcap file, if any.
func (c toolCaptures) close() {
	if c.pcap != nil {
		c.pcap.Close()
	}
}

// captures opens the --pcap file and picks the --trace writer: ok, or the
// exit status.
func (t toolCommand) captures(pcapPath string, trace bool) (c toolCaptures, code int, ok bool) {
	c.pcap, code, ok = t.pcap(pcapPath)
	if ok && trace {
		c.trace = t.stderr
	}
	return c, code, ok
}
