// Command manpage writes rnic's man pages from the programs' own help, so
// that the pages say what the installed binaries say: rnic(1) from rnic
// help, rnic-COMMAND(1) from rnic help COMMAND for every command it
// lists, rnicd(8) from rnicd --help. make man (and make install) runs it
// on the built binaries:
//
//	go run ./cmd/internal/manpage -rnic bin/rnic -rnicd bin/rnicd -o bin/man
//
// It writes DIR/man1/rnic.1, DIR/man1/rnic-COMMAND.1 and DIR/man8/rnicd.8,
// and fails on a help text it cannot read (help.go says what it reads).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	rnic := flag.String("rnic", "bin/rnic", "the rnic binary")
	rnicd := flag.String("rnicd", "bin/rnicd", "the rnicd binary")
	out := flag.String("o", "bin/man", "the directory to write man1/ and man8/ in")
	flag.Parse()
	pages, err := generate(*rnic, *rnicd)
	if err == nil {
		err = write(*out, pages)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "manpage: %v\n", err)
		os.Exit(1)
	}
}

// generate makes every page from the binaries' help.
func generate(rnic, rnicd string) ([]page, error) {
	top, err := helpOf(rnic, "help")
	if err != nil {
		return nil, err
	}
	summary, cmds, err := parseCommands(top)
	if err != nil {
		return nil, err
	}
	pages := []page{overviewPage(summary, cmds)}
	for _, c := range cmds {
		if noPage[c.name] {
			continue
		}
		h, err := parsedHelp(rnic, "help", c.name)
		if err != nil {
			return nil, err
		}
		pages = append(pages, commandPage(c, h))
	}
	h, err := parsedHelp(rnicd, "--help")
	if err != nil {
		return nil, err
	}
	return append(pages, daemonPage(h)), nil
}

// parsedHelp runs a help command and takes its output apart.
func parsedHelp(bin string, args ...string) (*helpText, error) {
	out, err := helpOf(bin, args...)
	if err != nil {
		return nil, err
	}
	h, err := parseHelp(out)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", filepath.Base(bin), strings.Join(args, " "), err)
	}
	return h, nil
}

// helpOf runs bin args and returns its standard output. The environment
// leaves out what makes a default depend on who builds: RNIC_* and
// XDG_RUNTIME_DIR (the default socket), so the pages show the defaults
// of a system install.
func helpOf(bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{} // not nil: nil is the whole environment
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "RNIC_") && !strings.HasPrefix(e, "XDG_RUNTIME_DIR=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// write writes the pages below dir, in place of those an earlier run
// wrote (a command since removed must not keep its page).
func write(dir string, pages []page) error {
	for _, pattern := range []string{"man1/rnic.1", "man1/rnic-*.1", "man8/rnicd.8"} {
		old, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	for _, p := range pages {
		path := filepath.Join(dir, p.file())
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(p.text), 0o644); err != nil {
			return err
		}
	}
	return nil
}
