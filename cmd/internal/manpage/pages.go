// The pages: rnic(1), the overview of its commands; rnic-COMMAND(1), one
// per command, from rnic help COMMAND; rnicd(8), from rnicd --help.

package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rnic/rnic/cmd/internal/version"
)

// page is one generated man page.
type page struct {
	name    string // rnic-exec
	section int
	text    string // roff
}

// file is the page's path below the output directory: man1/rnic-exec.1.
func (p page) file() string { return fmt.Sprintf("man%d/%s.%d", p.section, p.name, p.section) }

// command is one line of rnic help's command list.
type command struct {
	name, summary string
}

// commandLine is an entry of rnic help's list: two spaces, the name, the
// summary.
var commandLine = regexp.MustCompile(`^  (\S+) +(\S.*)$`)

// noPage are entries of rnic help that are no command of their own.
var noPage = map[string]bool{"help": true, "version": true}

// parseCommands reads rnic help: its first line (the summary), and the
// list after "commands:".
func parseCommands(out string) (summary string, cmds []command, err error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	summary = strings.TrimPrefix(lines[0], "rnic: ")
	in := false
	for _, l := range lines[1:] {
		if l == "commands:" {
			in = true
			continue
		}
		if m := commandLine.FindStringSubmatch(l); in && m != nil {
			cmds = append(cmds, command{name: m[1], summary: m[2]})
		}
	}
	if len(cmds) == 0 {
		return "", nil, fmt.Errorf("rnic help lists no commands")
	}
	return summary, cmds, nil
}

// source is the pages' footer: the release they document.
func source() string { return "rnic " + version.Release }

const manual = "rnic manual"

// overviewPage is rnic(1): what rnic is and its commands, each pointing to
// its own page.
func overviewPage(summary string, cmds []command) page {
	var r roff
	r.header("rnic", 1, source(), manual)
	r.section("NAME")
	r.text("rnic - " + summary)
	r.section("SYNOPSIS")
	r.verbatim([]string{"rnic COMMAND [flags] [args]", "rnic help [COMMAND]", "rnic --version"})
	r.section("DESCRIPTION")
	r.text("rnic is the command-line front end of the rnic software RDMA NIC: one binary, one command per task. " +
		"rnic help COMMAND, or the command's own page, describes a command and its flags.")
	r.section("COMMANDS")
	var refs []string
	for _, c := range cmds {
		r.request("TP")
		r.b.WriteString(`\fB` + escape(c.name) + `\fR` + "\n")
		if noPage[c.name] {
			r.text(c.summary + ".")
			continue
		}
		r.text(c.summary + "; see rnic-" + c.name + "(1).")
		refs = append(refs, "rnic-"+c.name+"(1)")
	}
	r.seeAlso(append([]string{"rnicd(8)"}, refs...))
	return page{name: "rnic", section: 1, text: r.String()}
}

// commandPage is rnic-NAME(1) from the command's help.
func commandPage(c command, h *helpText) page {
	name := "rnic-" + c.name
	return helpPage(name, 1, c.summary, h, []string{"rnic(1)", "rnicd(8)"})
}

// daemonPage is rnicd(8): its summary is the first sentence of its
// description.
func daemonPage(h *helpText) page {
	return helpPage("rnicd", 8, firstSentence(h.body), h, []string{"rnic(1)", "rnic-exec(1)", "rnic-stat(1)", "systemd.socket(5)"})
}

// helpPage is the page of a help text: NAME, SYNOPSIS, DESCRIPTION, then
// OPTIONS (OPTIONS OF NAME for each of several flag sets), SEE ALSO.
func helpPage(name string, section int, summary string, h *helpText, refs []string) page {
	var r roff
	r.header(name, section, source(), manual)
	r.section("NAME")
	r.text(name + " - " + summary)
	r.section("SYNOPSIS")
	r.verbatim(h.synopsis)
	r.section("DESCRIPTION")
	r.blocks(h.body)
	for _, g := range h.flags {
		title := "OPTIONS"
		if g.name != "" {
			title += " OF " + strings.ToUpper(g.name)
		}
		r.section(title)
		for _, f := range g.flags {
			r.flag(f)
		}
	}
	r.seeAlso(refs)
	return page{name: name, section: section, text: r.String()}
}

// firstSentence is the description's first sentence, lower-cased at the
// start and without its period, as a NAME line's summary reads.
func firstSentence(body []block) string {
	if len(body) == 0 {
		return ""
	}
	s := strings.Join(body[0].lines, " ")
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSuffix(s, ".")
	return strings.ToLower(s[:1]) + s[1:]
}
