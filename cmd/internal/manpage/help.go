// Reading a help text: the layout every rnic program prints for --help.
//
//	usage: PROG ...          the synopsis, up to the first blank line
//	       PROG ...
//
//	Prose, in paragraphs;    the description
//	    indented lines are examples, kept as they are.
//
//	flags:                   a flag set's PrintDefaults (pflag), or
//	flags of NAME:           several, one per mode of the command
//	  -S, --socket string   usage
//	      --json            usage

package main

import (
	"fmt"
	"regexp"
	"strings"
)

// helpText is one --help output, taken apart.
type helpText struct {
	synopsis []string // the usage lines, "usage: " taken off
	body     []block
	flags    []flagGroup
}

// block is a run of lines of the description: prose to fill, or
// verbatim lines (an example, a format), with a paragraph break before
// it when para.
type block struct {
	verbatim bool
	para     bool
	lines    []string
}

// flagGroup is one flag set's flags; name is empty for "flags:", NAME for
// "flags of NAME:".
type flagGroup struct {
	name  string
	flags []flagEntry
}

// flagEntry is one line (and its continuation lines) of PrintDefaults.
type flagEntry struct {
	short string   // "S", or empty
	long  string   // "socket"
	arg   string   // what follows the name: "string", "[=N]", or empty
	usage []string // its usage, one element per line
}

const usagePrefix = "usage: "

var (
	// flagsHeader starts the flag sets: "flags:" or "flags of NAME:".
	flagsHeader = regexp.MustCompile(`^flags(?: of (\S+))?:$`)
	// flagLine is the start of a flag's entry: pflag indents it by two
	// spaces with a shorthand, by six without; its usage's further lines
	// are indented deeper.
	flagLine = regexp.MustCompile(`^(?:  -(\S), |      )--([^\s=\[]+)(.*)$`)
)

// parseHelp takes out apart; it fails on anything not in the layout
// above, so that a help text the pages would garble stops the build.
func parseHelp(out string) (*helpText, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], usagePrefix) {
		return nil, fmt.Errorf("help text does not start with %q", usagePrefix)
	}
	h := &helpText{}
	i := 0
	for ; i < len(lines) && lines[i] != ""; i++ {
		h.synopsis = append(h.synopsis, strings.TrimPrefix(dropIndent(lines[i], len(usagePrefix)), usagePrefix))
	}
	end := len(lines)
	for j := i; j < len(lines); j++ {
		if flagsHeader.MatchString(lines[j]) {
			end = j
			break
		}
	}
	h.body = parseBody(lines[i:end])
	flags, err := parseFlags(lines[end:])
	if err != nil {
		return nil, err
	}
	h.flags = flags
	return h, nil
}

// dropIndent removes up to n leading spaces.
func dropIndent(s string, n int) string {
	for n > 0 && strings.HasPrefix(s, " ") {
		s, n = s[1:], n-1
	}
	return s
}

// parseBody splits the description into prose and verbatim blocks.
func parseBody(lines []string) []block {
	var blocks []block
	para := true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			para = true
			continue
		}
		verbatim := strings.HasPrefix(l, " ")
		if n := len(blocks); n > 0 && !para && blocks[n-1].verbatim == verbatim {
			blocks[n-1].lines = append(blocks[n-1].lines, l)
			continue
		}
		// Prose after verbatim lines starts a paragraph of its own.
		blocks = append(blocks, block{verbatim: verbatim, para: para || !verbatim, lines: []string{l}})
		para = false
	}
	for i := range blocks {
		if blocks[i].verbatim {
			blocks[i].lines = trimCommonIndent(blocks[i].lines)
		}
	}
	return blocks
}

// trimCommonIndent removes the indent all lines share.
func trimCommonIndent(lines []string) []string {
	common := -1
	for _, l := range lines {
		n := len(l) - len(strings.TrimLeft(l, " "))
		if common < 0 || n < common {
			common = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l[common:]
	}
	return out
}

// parseFlags reads the flag sets from their first header on.
func parseFlags(lines []string) ([]flagGroup, error) {
	var groups []flagGroup
	for _, l := range lines {
		if l == "" {
			continue
		}
		if m := flagsHeader.FindStringSubmatch(l); m != nil {
			groups = append(groups, flagGroup{name: m[1]})
			continue
		}
		g := &groups[len(groups)-1]
		if m := flagLine.FindStringSubmatch(l); m != nil {
			g.flags = append(g.flags, newFlag(m[1], m[2], m[3]))
			continue
		}
		if n := len(g.flags); n > 0 && strings.HasPrefix(l, "        ") {
			f := &g.flags[n-1]
			f.usage = append(f.usage, strings.TrimSpace(l))
			continue
		}
		return nil, fmt.Errorf("flags: line %q is neither a flag nor its usage", l)
	}
	return groups, nil
}

// newFlag is a flag from its entry's first line: the argument, if any,
// then at least three spaces (PrintDefaults' alignment), then the usage.
func newFlag(short, long, rest string) flagEntry {
	f := flagEntry{short: short, long: long}
	arg, usage, ok := strings.Cut(rest, "   ")
	if !ok {
		arg, usage = "", rest
	}
	f.arg = strings.TrimSpace(arg)
	f.usage = []string{strings.TrimSpace(usage)}
	return f
}
