package ladder

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Geometry, in SVG user units (pixels).
const (
	leftW    = 150 // frame number and time column
	rowH     = 40
	gapH     = 26
	slant    = 10 // how far an arrow descends: it takes time to arrive
	legendY  = 44
	legendRH = 16
	legendCW = 290
	charW    = 6.1 // width of one character of the 10 px monospace font
	minLane  = 250
	maxLane  = 720
)

// NS is the XML namespace of the ladder's attributes in an SVG file
// (rnic:frame, rnic:class, rnic:qps, rnic:frames); HTML uses data-*.
const NS = "https://github.com/rnic/rnic/ladder"

var classColour = [numClasses]string{"#1f5fbf", "#1a7f37", "#555555", "#c62828", "#d9730d", "#6a3d9a", "#9e9e9e", "#000000"}

var classLegend = [numClasses]string{
	"request (SEND, WRITE, READ req, atomics)", "response (READ resp, atomic ACK)", "ACK", "NAK (code on label)",
	"RNR NAK (wait)", "setup: IB CM, MPA Req/Rep", "TCP segment (no FPDU done)", "undecodable",
}

// diagram is what the renderers draw.
type diagram struct {
	title string
	lanes []string
	laneX map[string]float64
	laneW float64
	rows  []row
	byQP  bool
	attr  string // "rnic:" (SVG file) or "data-" (HTML)
	// noLegend: the legend is drawn outside the SVG (the HTML page), so it
	// neither widens the diagram nor takes rows above it.
	noLegend bool
	width    float64
	top      float64 // y of the first row
	height   float64
}

func newDiagram(evs []Event, o Options, attr string, noLegend bool) *diagram {
	gap := o.Gap
	if gap <= 0 {
		gap = 10 * time.Millisecond
	}
	d := &diagram{title: o.Title, laneX: map[string]float64{}, byQP: o.ByQP, attr: attr, noLegend: noLegend}
	longest := 0
	for i := range evs {
		if evs[i].Mark {
			continue
		}
		s, t := laneNames(&evs[i], o.ByQP)
		for _, l := range []string{s, t} {
			if _, ok := d.laneX[l]; !ok {
				d.laneX[l] = 0
				d.lanes = append(d.lanes, l)
			}
		}
		longest = max(longest, len(evs[i].Label)+len(evs[i].Note)+1, len(evs[i].Sub)*9/10)
	}
	d.laneW = math.Round(min(max(float64(longest)*charW+40, minLane), maxLane))
	for i, l := range d.lanes {
		d.laneX[l] = leftW + d.laneW/2 + float64(i)*d.laneW
	}
	d.rows = layout(evs, gap)
	d.width = leftW + float64(len(d.lanes))*d.laneW
	d.top = legendY + 44
	if !noLegend {
		d.width = max(d.width, 4*legendCW+20)
		d.top += 5 * legendRH
	}
	y := d.top
	for _, r := range d.rows {
		y += r.height()
	}
	d.height = y + 40
	return d
}

func (r *row) height() float64 {
	if r.kind == rowGap {
		return gapH
	}
	return rowH
}

// WriteSVG renders the events as an SVG 1.1 document.
func WriteSVG(w io.Writer, evs []Event, o Options) error {
	evs = selectEvents(evs, o)
	d := newDiagram(evs, o, "rnic:", false)
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	// No DOCTYPE: the rnic: attributes are in a namespace of their own,
	// which SVG 1.1 allows but its DTD does not list.
	d.svg(&b, ` xmlns:rnic="`+NS+`"`)
	_, err := w.Write(b.Bytes())
	return err
}

// CaptureSVG draws the frames o selects of the capture at path as an SVG
// document (a report that shows the frames of one case).
func CaptureSVG(path string, o Options) ([]byte, error) {
	evs, err := Load(path, o)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err = WriteSVG(&b, evs, o)
	return b.Bytes(), err
}

// svg writes the <svg> element; extra is added to its attributes.
func (d *diagram) svg(b *bytes.Buffer, extra string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" version="1.1"%s width="%s" height="%s" viewBox="0 0 %s %s" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="10">`+"\n",
		extra, num(d.width), num(d.height), num(d.width), num(d.height))
	d.defs(b)
	fmt.Fprintf(b, `<rect x="0" y="0" width="%s" height="%s" fill="#ffffff"/>`+"\n", num(d.width), num(d.height))
	if d.title != "" {
		fmt.Fprintf(b, `<text x="10" y="24" font-size="15" font-weight="bold" fill="#111111">%s</text>`+"\n", esc(d.title))
	}
	if !d.noLegend {
		d.legend(b)
	}
	d.laneLines(b)
	y := d.top
	for i := range d.rows {
		d.row(b, &d.rows[i], y)
		y += d.rows[i].height()
	}
	b.WriteString("</svg>\n")
}

func (d *diagram) defs(b *bytes.Buffer) {
	b.WriteString("<defs>\n")
	for c := Class(0); c < numClasses; c++ {
		fmt.Fprintf(b, `<marker id="head-%s" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="%s"/></marker>`+"\n", c, classColour[c])
	}
	b.WriteString("</defs>\n")
}

// legendItem is one entry of the legend: a small drawing (in a 40×12
// box around the origin) and what it means.
type legendItem struct{ draw, text string }

// legendItems say what every colour and shape means.
func legendItems() []legendItem {
	var items []legendItem
	item := func(draw, text string) { items = append(items, legendItem{draw, text}) }
	line := func(colour, dash string) string {
		if dash != "" {
			dash = ` stroke-dasharray="` + dash + `"`
		}
		return fmt.Sprintf(`<line x1="0" y1="0" x2="32" y2="0" stroke="%s" stroke-width="2"%s/>`, colour, dash)
	}
	for c := Class(0); c < numClasses; c++ {
		item(line(classColour[c], "")+fmt.Sprintf(`<path d="M26,-4 L32,0 L26,4 z" fill="%s"/>`, classColour[c]), classLegend[c])
	}
	item(line("#333333", "7 4"), "retransmission (PSN sent again)")
	item(line("#333333", "2 3"), "duplicate (sent again, or a link copy)")
	item(line("#333333", "")+badMark(16, 0), "bad ICRC / MPA CRC")
	item(line("#333333", "")+`<rect x="0" y="-3" width="6" height="6" fill="#333333"/>`, "TCP segment that completed an FPDU")
	item(`<line x1="0" y1="0" x2="20" y2="0" stroke="#333333" stroke-width="2"/>`+crossMark(20, 0), "lost by the link (simulated)")
	item(hourglass(10, 0), "timer expiry / RNR wait (sim trace)")
	item(`<rect x="0" y="-5" width="32" height="10" fill="#1f5fbf" fill-opacity="0.15" stroke="#1f5fbf"/>`, "run of Middle packets (one band)")
	item(`<path d="M0,-4 L8,4 L16,-4 L24,4 L32,-4" fill="none" stroke="#333333"/>`, "idle pause (length marked)")
	return items
}

// legend draws the legend inside the SVG, four items a row: an SVG file
// stands alone. The HTML page puts it outside, where it wraps (html.go).
func (d *diagram) legend(b *bytes.Buffer) {
	b.WriteString(`<g class="legend">` + "\n")
	for i, it := range legendItems() {
		x, y := 10+float64(i%4)*legendCW, legendY+float64(i/4)*legendRH
		fmt.Fprintf(b, `<g transform="translate(%s,%s)">%s<text x="40" y="4" fill="#111111">%s</text></g>`+"\n", num(x), num(y), it.draw, esc(it.text))
	}
	b.WriteString("</g>\n")
}

func badMark(x, y float64) string {
	return fmt.Sprintf(`<circle class="badcrc" cx="%s" cy="%s" r="6" fill="#ffffff" stroke="#c62828" stroke-width="2"/><path d="M%s,%s l6,6 m0,-6 l-6,6" stroke="#c62828" stroke-width="2"/>`,
		num(x), num(y), num(x-3), num(y-3))
}

func crossMark(x, y float64) string {
	return fmt.Sprintf(`<path d="M%s,%s l10,10 m0,-10 l-10,10" stroke="#c62828" stroke-width="2.5"/>`, num(x-5), num(y-5))
}

func (d *diagram) laneLines(b *bytes.Buffer) {
	b.WriteString(`<g class="lanes">` + "\n")
	y0 := d.top - 14
	for _, l := range d.lanes {
		x := d.laneX[l]
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" font-size="12" font-weight="bold" fill="#111111">%s</text>`+"\n", num(x), num(y0-8), esc(l))
		fmt.Fprintf(b, `<line class="lane" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#777777" stroke-width="1.5"/>`+"\n", num(x), num(y0), num(x), num(d.height-24))
	}
	fmt.Fprintf(b, `<text x="8" y="%s" fill="#555555">frame</text><text x="54" y="%s" fill="#555555">time (s)</text>`+"\n", num(y0-8), num(y0-8))
	b.WriteString("</g>\n")
}

func (d *diagram) row(b *bytes.Buffer, r *row, y float64) {
	fmt.Fprintf(b, `<g class="row" transform="translate(0,%s)">`+"\n", num(y))
	switch r.kind {
	case rowGap:
		d.gapRow(b, r)
	case rowBand:
		d.band(b, r)
	default:
		if r.events[0].Mark {
			d.mark(b, r.events[0])
		} else {
			d.arrow(b, r.events[0], false)
		}
	}
	b.WriteString("</g>\n")
}

// mark draws an engine event (timer expiry, RNR wait) across the lanes.
func (d *diagram) mark(b *bytes.Buffer, e *Event) {
	fmt.Fprintf(b, `<g class="mark" %sqps="%s"><title>%s</title>`, d.attr, qps(e), esc(e.Decode))
	fmt.Fprintf(b, `<text x="54" y="24" fill="#555555">%s</text>`, seconds(e.Time))
	fmt.Fprintf(b, `%s<text x="%s" y="24" font-style="italic" fill="%s">%s</text></g>`,
		hourglass(leftW+4, 20), num(leftW+20), classColour[ClassRNR], esc(e.Label))
}

// hourglass is the shape of an engine timer or wait, centred at x, y.
func hourglass(x, y float64) string {
	return fmt.Sprintf(`<path d="M%s,%s h10 l-10,12 h10 z" fill="none" stroke="%s" stroke-width="1.5"/>`,
		num(x), num(y-6), classColour[ClassRNR])
}

func (d *diagram) gapRow(b *bytes.Buffer, r *row) {
	mid := float64(gapH) / 2
	fmt.Fprintf(b, `<g class="gap" %sgap="%s">`, d.attr, seconds(r.gap))
	for _, l := range d.lanes {
		x := d.laneX[l]
		fmt.Fprintf(b, `<rect x="%s" y="2" width="12" height="%d" fill="#ffffff"/><path d="M%s,%s l6,-5 l6,5 l6,-5" fill="none" stroke="#777777"/>`,
			num(x-6), gapH-4, num(x-9), num(mid+2))
	}
	fmt.Fprintf(b, `<text x="8" y="%s" font-style="italic" fill="#333333">idle %s s</text></g>`+"\n", num(mid+4), seconds(r.gap))
}

// arrow draws one frame, at the top of its row. hidden hides it (a member
// of a collapsed band; the HTML page shows it when the band is expanded).
func (d *diagram) arrow(b *bytes.Buffer, e *Event, hidden bool) {
	src, dst := laneNames(e, d.byQP)
	x1, x2 := d.laneX[src], d.laneX[dst]
	colour := classColour[e.Class]
	vis := ""
	if hidden {
		vis = ` display="none"`
	}
	fmt.Fprintf(b, `<g class="frame %s" id="f%d" %sframe="%d" %sclass="%s" %sqps="%s"%s>`,
		e.Class, e.Frame, d.attr, e.Frame, d.attr, e.Class, d.attr, qps(e), vis)
	fmt.Fprintf(b, `<title>%s</title>`, esc(e.Decode))
	fmt.Fprintf(b, `<text x="8" y="24" fill="#555555">#%d</text><text x="54" y="24" fill="#555555">%s</text>`, e.Frame, seconds(e.Time))
	dash := ""
	switch {
	case e.Retx:
		dash = ` stroke-dasharray="7 4"`
	case e.Dup:
		dash = ` stroke-dasharray="2 3"`
	}
	ya, yb := 15.0, 15.0+slant
	mx, my, anchor := (x1+x2)/2, (ya+yb)/2, "middle"
	switch {
	case x1 == x2: // a frame to itself (loopback)
		fmt.Fprintf(b, `<path d="M%s,%s C%s,%s %s,%s %s,%s" fill="none" stroke="%s" stroke-width="1.6"%s marker-end="url(#head-%s)"/>`,
			num(x1), num(ya), num(x1+50), num(ya), num(x1+50), num(yb), num(x1+2), num(yb), colour, dash, e.Class)
		mx, anchor = x1+44, "start"
	case e.Lost:
		ex := x1 + (x2-x1)*0.7
		ey := ya + (yb-ya)*0.7
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.6"%s/><g class="lost">%s</g>`,
			num(x1), num(ya), num(ex), num(ey), colour, dash, crossMark(ex, ey))
	default:
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.6"%s marker-end="url(#head-%s)"/>`,
			num(x1), num(ya), num(x2), num(yb), colour, dash, e.Class)
	}
	if e.FPDU {
		fmt.Fprintf(b, `<rect class="fpdu" x="%s" y="%s" width="6" height="6" fill="#333333"/>`, num(x1-3), num(ya-3))
	}
	label := e.Label
	if e.Note != "" {
		label += " " + e.Note
	}
	fmt.Fprintf(b, `<text class="label" x="%s" y="%s" text-anchor="%s" fill="%s" font-weight="bold">%s</text>`, num(mx), num(my-6), anchor, darker(e.Class), esc(label))
	if e.Sub != "" {
		fmt.Fprintf(b, `<text class="sub" x="%s" y="%s" text-anchor="%s" fill="#333333" font-size="9">%s</text>`, num(mx), num(my+13), anchor, esc(e.Sub))
	}
	if e.BadCRC {
		b.WriteString(badMark(mx+(x2-x1)*0.2, my+(yb-ya)*0.2))
	}
	b.WriteString("</g>\n")
}

// darker is the label colour: the class colour, but never the light grey
// of TCP segments (text must stay readable when printed).
func darker(c Class) string {
	if c == ClassTCP {
		return "#616161"
	}
	return classColour[c]
}

// band draws a run of Middle packets as one box with a count, and its
// members hidden.
func (d *diagram) band(b *bytes.Buffer, r *row) {
	first, last := r.events[0], r.events[len(r.events)-1]
	src, dst := laneNames(first, d.byQP)
	x1, x2 := d.laneX[src], d.laneX[dst]
	lo, hi := min(x1, x2), max(x1, x2)
	if lo == hi {
		hi = lo + 60
	}
	colour := classColour[first.Class]
	fmt.Fprintf(b, `<g class="band" %sframes="%d-%d" %scount="%d">`, d.attr, first.Frame, last.Frame, d.attr, len(r.events))
	fmt.Fprintf(b, `<g class="bandbox"><title>%d frames, click to expand (HTML)</title>`, len(r.events))
	fmt.Fprintf(b, `<text x="8" y="24" fill="#555555">#%d-%d</text><text x="54" y="24" fill="#555555">%s</text>`, first.Frame, last.Frame, seconds(first.Time))
	fmt.Fprintf(b, `<rect x="%s" y="6" width="%s" height="28" fill="%s" fill-opacity="0.15" stroke="%s"/>`, num(lo), num(hi-lo), colour, colour)
	fmt.Fprintf(b, `<line x1="%s" y1="20" x2="%s" y2="20" stroke="%s" stroke-width="3" marker-end="url(#head-%s)"/>`, num(x1), num(x2), colour, first.Class)
	text := fmt.Sprintf("%d × %s", len(r.events), first.Label)
	if first.psn >= 0 {
		text = fmt.Sprintf("%d × %s", len(r.events), strings.TrimSpace(strings.Split(first.Label, " psn=")[0])) +
			fmt.Sprintf(" psn=%d-%d", first.psn, last.psn)
	}
	fmt.Fprintf(b, `<text class="label" x="%s" y="16" text-anchor="middle" fill="%s" font-weight="bold">%s</text></g>`, num((lo+hi)/2), darker(first.Class), esc(text))
	b.WriteString(`<g class="members">` + "\n")
	for i, e := range r.events {
		fmt.Fprintf(b, `<g transform="translate(0,%d)">`, i*rowH)
		d.arrow(b, e, true)
		b.WriteString("</g>\n")
	}
	b.WriteString("</g></g>\n")
}

// qps lists the QPs a frame touches, for the QP filter.
func qps(e *Event) string {
	var s []string
	for _, q := range []int{e.SrcQP, e.DstQP} {
		if q >= 0 {
			s = append(s, fmt.Sprintf("0x%06x", q))
		}
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
}

func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		default:
			if r < 0x20 && r != '\n' && r != '\t' {
				r = '?' // not allowed in XML 1.0
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}
