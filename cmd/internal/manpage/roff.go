// Writing man(7) roff: the page header, sections, filled and verbatim
// text, and tagged paragraphs for flags, with text escaped so that groff
// prints it as the program does.

package main

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// roff accumulates one page.
type roff struct {
	b strings.Builder
}

// escape makes s safe on a roff text line: backslashes print as
// themselves, and hyphens as ASCII minus signs (\-), so flags pasted from
// the rendered page work; a line starting with a control character is
// protected by a zero-width \&. Characters beyond ASCII become \[uXXXX],
// which groff reads whatever the input encoding.
func escape(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == '\\':
			b.WriteString(`\e`)
		case c == '-':
			b.WriteString(`\-`)
		case c > unicode.MaxASCII:
			fmt.Fprintf(&b, `\[u%04X]`, c)
		default:
			b.WriteRune(c)
		}
	}
	s = b.String()
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// breakable is escape for filled text: a comma inside a word may end a
// line (\:), so a long list such as --device's key=value,key=value
// wraps instead of running past the margin.
func breakable(s string) string {
	return innerComma.ReplaceAllString(escape(s), `,\:$1`)
}

var innerComma = regexp.MustCompile(`,(\S)`)

// request writes a request line: ".TH", ".SH NAME", ...
func (r *roff) request(name string, args ...string) {
	r.b.WriteString("." + name)
	for _, a := range args {
		r.b.WriteString(" " + a)
	}
	r.b.WriteString("\n")
}

// text writes lines of filled text.
func (r *roff) text(lines ...string) {
	for _, l := range lines {
		r.b.WriteString(breakable(l) + "\n")
	}
}

// header is the title line: the page's name, section, and the source
// (the release); no date, so a rebuild from the same source gives the
// same page.
func (r *roff) header(name string, section int, source, manual string) {
	r.request("TH", quote(strings.ToUpper(name)), fmt.Sprint(section), `""`, quote(source), quote(manual))
	// Names, paths and flags read best whole: no hyphenation, no
	// stretched spaces.
	r.request("nh")
	r.request("ad", "l")
}

// quote makes s one argument of a request.
func quote(s string) string {
	return `"` + strings.ReplaceAll(escape(s), `"`, `""`) + `"`
}

// section starts a section.
func (r *roff) section(title string) { r.request("SH", quote(title)) }

// verbatim writes lines unfilled, indented.
func (r *roff) verbatim(lines []string) {
	r.request("RS", "4")
	r.request("nf")
	for _, l := range lines {
		r.b.WriteString(escape(l) + "\n")
	}
	r.request("fi")
	r.request("RE")
}

// blocks writes a description.
func (r *roff) blocks(bs []block) {
	for _, b := range bs {
		if b.para {
			r.request("PP")
		}
		if b.verbatim {
			r.verbatim(b.lines)
		} else {
			r.text(b.lines...)
		}
	}
}

// flag writes one flag as a tagged paragraph: the tag "-S, --socket
// string" in bold with the argument in italics, then its usage.
func (r *roff) flag(f flagEntry) {
	r.request("TP")
	tag := `\fB\-\-` + escape(f.long) + `\fR`
	if f.short != "" {
		tag = `\fB\-` + escape(f.short) + `\fR, ` + tag
	}
	if f.arg != "" {
		tag += ` \fI` + escape(f.arg) + `\fR`
	}
	r.b.WriteString(tag + "\n")
	for i, l := range f.usage {
		if i > 0 {
			r.request("br")
		}
		r.text(l)
	}
}

// seeAlso writes references to other pages, "name(section)".
func (r *roff) seeAlso(refs []string) {
	r.section("SEE ALSO")
	for i, ref := range refs {
		name, sec, _ := strings.Cut(strings.TrimSuffix(ref, ")"), "(")
		sep := ","
		if i == len(refs)-1 {
			sep = ""
		}
		r.request("BR", escape(name), "("+sec+")"+sep)
	}
}

func (r *roff) String() string { return r.b.String() }
