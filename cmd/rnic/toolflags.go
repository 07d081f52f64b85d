// What the tools' commands (perf, pingpong, rping) do alike with their
// flags: parse them, printing the usage on --help, and open the --pcap
// file.

package main

import (
	"errors"
	"io"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/transport"
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
func openPcap(path string) (*transport.PcapWriter, error) {
	if path == "" {
		return nil, nil
	}
	return transport.CreatePcap(path)
}
