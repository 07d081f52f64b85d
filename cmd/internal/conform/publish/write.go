// Writing the report's files.

package publish

import (
	"bytes"
	"os"
	"path/filepath"
)

// Files written into the output directory (beside them, the ladders'
// SVG files the Markdown refers to).
const (
	MarkdownFile = "report.md"
	HTMLFile     = "report.html"
)

// Write writes the report of runs into dir: report.md, report.html and
// one SVG per ladder.
func Write(dir string, runs []Run, o Options) error {
	if o.Title == "" {
		o.Title = "rnic conform: deviation report"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A report written again replaces its ladders: none of an earlier
	// one stays behind.
	old, _ := filepath.Glob(filepath.Join(dir, "ladder-*.svg"))
	for _, f := range old {
		os.Remove(f)
	}
	secs := build(runs, o)
	for _, s := range secs {
		for _, pic := range s.Ladders {
			if err := os.WriteFile(filepath.Join(dir, pic.File), pic.SVG, 0o644); err != nil {
				return err
			}
		}
	}
	var md, page bytes.Buffer
	if err := writeMarkdown(&md, secs, o); err != nil {
		return err
	}
	if err := writeHTML(&page, secs, o); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, MarkdownFile), md.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, HTMLFile), page.Bytes(), 0o644)
}
