// The report as one self-contained HTML page: the ladders inline, no
// script but the measurement hook the browser test reads.

package publish

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/rnic/rnic/cmd/internal/conform"
)

func writeHTML(w io.Writer, secs []section, o Options) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"+
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n",
		esc(o.Title), css)
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p>%s</p>\n", esc(o.Title), esc(intro))
	b.WriteString("<nav><ul>\n")
	for i, s := range secs {
		fmt.Fprintf(&b, "<li><a href=\"#dut-%d\">%s</a>: %d departures</li>\n", i+1, esc(DUTLine(s.Run.Report)), len(s.Groups))
	}
	b.WriteString("</ul></nav>\n")
	for i, s := range secs {
		htmlSection(&b, i+1, s)
	}
	b.WriteString(measureScript)
	b.WriteString("</body>\n</html>\n")
	_, err := w.Write(b.Bytes())
	return err
}

func htmlSection(b *bytes.Buffer, n int, s section) {
	rep := s.Run.Report
	fmt.Fprintf(b, "<section id=\"dut-%d\">\n<h2>%s</h2>\n<p class=\"src\">From <code>%s</code>.</p>\n", n, esc(DUTLine(rep)), esc(s.Run.Source))
	b.WriteString("<table class=\"summary\"><tr>")
	for _, c := range verdictColumns {
		fmt.Fprintf(b, "<th>%s</th>", esc(c))
	}
	b.WriteString("</tr><tr>")
	for _, v := range summaryCells(rep.Summary) {
		fmt.Fprintf(b, "<td>%d</td>", v)
	}
	b.WriteString("</tr></table>\n")
	if len(s.Groups) == 0 {
		b.WriteString("<p>No departure from the spec: every case judged passed.</p>\n")
	}
	for i, g := range s.Groups {
		htmlGroup(b, rep, fmt.Sprintf("dut-%d-%d", n, i+1), i+1, g, s.Ladders[i])
	}
	if len(s.NotRun) > 0 {
		b.WriteString("<h3>Could not run</h3>\n<p>These cases say nothing of their rules.</p>\n<table><tr><th>rule</th><th>why</th></tr>\n")
		for _, r := range s.NotRun {
			fmt.Fprintf(b, "<tr><td><code>%s</code></td><td>%s</td></tr>\n", esc(r.ID), esc(r.Detail))
		}
		b.WriteString("</table>\n")
	}
	b.WriteString("</section>\n")
}

func htmlGroup(b *bytes.Buffer, rep *conform.Report, id string, n int, g Group, pic ladderPic) {
	fmt.Fprintf(b, "<article id=\"%s\" class=\"%s\">\n<h3>%d. %s: %s</h3>\n", id, kindClass(g.Kind), n, esc(string(g.Kind)), esc(g.Name))
	if g.Section != "" {
		fmt.Fprintf(b, "<p><b>Breaks</b> %s: %s.</p>\n", esc(g.Section), esc(g.Rule))
	} else {
		fmt.Fprintf(b, "<p><b>Breaks</b> %s.</p>\n", esc(g.Rule))
	}
	fmt.Fprintf(b, "<p><b>Evidence:</b> <span class=\"ev\">%s</span></p>\n", esc(g.Evidence))
	if len(g.Log) > 0 {
		fmt.Fprintf(b, "<p><b>Kernel log:</b></p>\n<pre class=\"log\">%s</pre>\n", esc(strings.Join(g.Log, "\n")))
	}
	fmt.Fprintf(b, "<p><b>Rules it affects</b> (%d):</p>\n<table><tr><th>rule</th><th>section</th><th>the rule, in short</th><th>verdict</th></tr>\n", len(g.Results))
	for _, r := range g.Results {
		fmt.Fprintf(b, "<tr><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td></tr>\n", esc(r.ID), esc(r.Section), esc(r.Title), esc(ownVerdict(r)))
	}
	b.WriteString("</table>\n")
	if len(pic.SVG) > 0 {
		fmt.Fprintf(b, "<figure class=\"ladder\">%s<figcaption>%s</figcaption></figure>\n", inlineSVG(pic.SVG), esc(pic.Caption))
	}
	fmt.Fprintf(b, "<p><b>Reproduce</b> <code>%s</code>:</p>\n<pre class=\"cmd\">%s</pre>\n</article>\n", esc(g.First().ID), esc(strings.Join(Reproduce(rep, g.First()), "\n")))
}

func kindClass(k Kind) string { return strings.ReplaceAll(strings.ToLower(string(k)), " ", "-") }

// inlineSVG drops an SVG document's XML declaration so that it sits
// inside the page.
func inlineSVG(svg []byte) string {
	s := string(svg)
	if strings.HasPrefix(s, "<?xml") {
		if i := strings.Index(s, "?>"); i >= 0 {
			s = s[i+2:]
		}
	}
	return strings.TrimSpace(s)
}

func esc(s string) string { return html.EscapeString(s) }

// css keeps the page readable at any width: tables and logs wrap, a
// ladder scales down to the column.
const css = `
body { font-family: system-ui, sans-serif; margin: 0 auto; padding: 0 1em 3em; max-width: 78em; color: #111; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { border-bottom: 2px solid #444; margin-top: 2em; }
article { border-left: 4px solid #999; padding: 0 0 0 1em; margin: 1.5em 0; }
article.dut-crash { border-color: #b00020; } article.root-cause { border-color: #d07000; }
article.fail { border-color: #c03030; } article.deviation-known { border-color: #4070b0; }
table { border-collapse: collapse; width: 100%; table-layout: auto; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
table.summary { width: auto; } table.summary td { text-align: right; }
th:last-child, td:last-child { overflow-wrap: normal; }
code, pre, .ev { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.9em; }
.ev { overflow-wrap: anywhere; }
pre { background: #f4f4f4; padding: 0.5em; white-space: pre-wrap; overflow-wrap: anywhere; }
figure.ladder { margin: 1em 0; max-width: 100%; }
figure.ladder svg { max-width: 100%; height: auto; display: block; border: 1px solid #ddd; }
figcaption { font-size: 0.85em; color: #555; }
`

// measureScript, with #measure in the address, writes how far the page
// overflows sideways and how many ladders it shows into <pre
// id="measure"> (the browser test reads it); otherwise it does nothing.
const measureScript = `<script>
if (/measure/.test(location.hash)) {
  var doc = document.documentElement;
  var figs = document.querySelectorAll('figure.ladder svg');
  var wide = 0;
  figs.forEach(function (s) { var r = s.getBoundingClientRect(); if (r.right > doc.clientWidth + 0.5) wide++; });
  var pre = document.createElement('pre');
  pre.id = 'measure';
  pre.textContent = JSON.stringify({overflow: doc.scrollWidth - doc.clientWidth, ladders: figs.length, wide: wide, articles: document.querySelectorAll('article').length});
  document.body.appendChild(pre);
}
</script>
`
