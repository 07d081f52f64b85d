// The report as Markdown, its ladders as SVG files beside it.

package publish

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/rnic/rnic/cmd/internal/conform"
)

// verdictColumns are the summary table's verdicts, in order.
var verdictColumns = []string{"cases", "pass", "FAIL", "deviation-known", "not-applicable", "could-not-run", "DUT-crashed"}

func summaryCells(s conform.Summary) []int {
	return []int{s.Cases, s.Pass, s.Fail, s.Deviation, s.NotApplicable, s.CouldNotRun, s.Crashed}
}

// writeMarkdown writes the report; its ladders are referred to by their
// file names.
func writeMarkdown(w io.Writer, secs []section, o Options) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "# %s\n\n", o.Title)
	fmt.Fprint(b, intro)
	for _, s := range secs {
		mdSection(b, s)
	}
	return b.Flush()
}

// intro says how to read the report.
const intro = `Each departure from the spec is listed once, under its root cause, with every rule it
touched and that case's own verdict. Frame numbers (#n→ sent by the tester, #n← from the DUT)
are those of the run's capture, or of the case's own where each case kept one; the ladder shows
them. A finding is a departure a case met on the way to its own rule, which the case then judged
as the DUT meant it.
`

func mdSection(b *bufio.Writer, s section) {
	rep := s.Run.Report
	fmt.Fprintf(b, "\n## %s\n\n", DUTLine(rep))
	fmt.Fprintf(b, "From `%s`.\n\n", s.Run.Source)
	fmt.Fprintf(b, "| %s |\n|%s\n", strings.Join(verdictColumns, " | "), strings.Repeat("---|", len(verdictColumns)))
	var cells []string
	for _, n := range summaryCells(rep.Summary) {
		cells = append(cells, fmt.Sprint(n))
	}
	fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
	if len(s.Groups) == 0 {
		fmt.Fprintln(b, "\nNo departure from the spec: every case judged passed.")
	}
	for i, g := range s.Groups {
		mdGroup(b, rep, i+1, g, s.Ladders[i])
	}
	if len(s.NotRun) > 0 {
		fmt.Fprintf(b, "\n### Could not run\n\nThese cases say nothing of their rules.\n\n| rule | why |\n|---|---|\n")
		for _, r := range s.NotRun {
			fmt.Fprintf(b, "| `%s` | %s |\n", r.ID, mdCell(r.Detail))
		}
	}
}

func mdGroup(b *bufio.Writer, rep *conform.Report, n int, g Group, pic ladderPic) {
	fmt.Fprintf(b, "\n### %d. %s: %s\n\n", n, g.Kind, mdInline(g.Name))
	if g.Section != "" {
		fmt.Fprintf(b, "**Breaks** %s: %s.\n\n", g.Section, g.Rule)
	} else {
		fmt.Fprintf(b, "**Breaks** %s.\n\n", g.Rule)
	}
	fmt.Fprintf(b, "**Evidence:** %s\n\n", mdInline(g.Evidence))
	if len(g.Log) > 0 {
		fmt.Fprintf(b, "**Kernel log:**\n\n```\n%s\n```\n\n", strings.Join(g.Log, "\n"))
	}
	fmt.Fprintf(b, "**Rules it affects** (%d):\n\n| rule | section | the rule, in short | verdict |\n|---|---|---|---|\n", len(g.Results))
	for _, r := range g.Results {
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", r.ID, mdCell(r.Section), mdCell(r.Title), mdCell(ownVerdict(r)))
	}
	if pic.File != "" {
		fmt.Fprintf(b, "\n**Frames** (%s):\n\n![ladder of %s](%s)\n", pic.Caption, g.First().ID, pic.File)
	}
	fmt.Fprintf(b, "\n**Reproduce** `%s`:\n\n```sh\n%s\n```\n", g.First().ID, strings.Join(Reproduce(rep, g.First()), "\n"))
}

// ownVerdict is a result's verdict as a group lists it: a crash says
// what the case itself concluded.
func ownVerdict(r conform.Result) string {
	if r.Crash != nil {
		return fmt.Sprintf("DUT-crashed (the case itself: %s)", r.Crash.Verdict)
	}
	return string(r.Verdict)
}

// mdCell makes s safe inside a table cell.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return mdInline(strings.ReplaceAll(s, "\n", " "))
}

// mdInline keeps s from starting Markdown of its own (emphasis, HTML).
func mdInline(s string) string {
	r := strings.NewReplacer("*", `\*`, "_", `\_`, "<", "&lt;", ">", "&gt;", "`", "'")
	return r.Replace(s)
}
