// Building the report's content: runs, their groups, ladders and the
// command lines that reproduce a case.

package publish

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rnic/rnic/cmd/internal/conform"
)

// Run is one conform run: its report and where its captures are.
type Run struct {
	Report *conform.Report
	// Source names where the report came from (its JSON file).
	Source string
	// Pcap is the run's one capture (rnic conform run --pcap), whose
	// frames each result's Frames index; CaseDir, if Pcap is "", holds
	// one capture per case (conform.CaptureName), as make conform-lab
	// keeps them.
	Pcap    string
	CaseDir string
}

// LoadRun reads a run's JSON. Its captures are found as make conform-lab
// and make conform-self keep them: pcap if given, else a directory named
// like the JSON without its extension (conform-siw.json, conform-siw/),
// else a capture so named (conform-roce.json, conform-roce.pcap).
func LoadRun(jsonPath, pcap string) (Run, error) {
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return Run{}, err
	}
	var rep conform.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return Run{}, fmt.Errorf("%s: %w", jsonPath, err)
	}
	if len(rep.Results) == 0 {
		return Run{}, fmt.Errorf("%s: no results", jsonPath)
	}
	run := Run{Report: &rep, Source: filepath.Base(jsonPath), Pcap: pcap}
	if pcap == "" {
		base := strings.TrimSuffix(jsonPath, filepath.Ext(jsonPath))
		if st, err := os.Stat(base); err == nil && st.IsDir() {
			run.CaseDir = base
		} else if _, err := os.Stat(base + ".pcap"); err == nil {
			run.Pcap = base + ".pcap"
		}
	}
	return run, nil
}

// Capture returns the capture holding r's frames and their range (to 0:
// to its end); ok is false when the run kept none.
func (run *Run) Capture(r conform.Result) (path string, from, to int, ok bool) {
	if run.Pcap != "" {
		if r.Frames[0] == 0 {
			return "", 0, 0, false
		}
		return run.Pcap, r.Frames[0], r.Frames[1], true
	}
	if run.CaseDir == "" {
		return "", 0, 0, false
	}
	p := filepath.Join(run.CaseDir, conform.CaptureName(r.ID))
	if _, err := os.Stat(p); err != nil {
		return "", 0, 0, false
	}
	return p, r.Frames[0], r.Frames[1], true
}

// Options shape the report.
type Options struct {
	// Title heads the report.
	Title string
	// Ladder draws frames from..to (0: all) of a capture as an SVG
	// document; nil draws none.
	Ladder func(capture string, from, to int, title string) ([]byte, error)
}

// DUTLine says which DUT a run was: device, kind, transport, host
// kernel, date.
func DUTLine(rep *conform.Report) string {
	d := rep.DUT
	s := fmt.Sprintf("%s (%s, %s)", d.Name, d.Kind, transportName(d.Transport))
	if d.Host != "" {
		s += ", " + d.Host
	}
	if !rep.Date.IsZero() {
		s += ", run " + rep.Date.UTC().Format("2006-01-02 15:04 UTC")
	}
	return s
}

func transportName(t string) string {
	switch t {
	case "roce":
		return "RoCEv2"
	case "iwarp":
		return "iWARP"
	}
	return t
}

// Reproduce returns the command lines that run r's case again against
// the same kind of DUT: the agent on the DUT's host, the tester beside
// it, and for the lab's Linux DUTs the make line that does both.
func Reproduce(rep *conform.Report, r conform.Result) []string {
	d := rep.DUT
	if d.Kind == "rnic" {
		// rnic's own NIC in the agent's process, on loopback.
		return []string{
			fmt.Sprintf("rnic conform agent -d %s --addr 127.0.0.2 --transport %s --listen 127.0.0.1:7471 &", d.Name, d.Transport),
			fmt.Sprintf("rnic conform run --agent 127.0.0.1:7471 --udp 127.0.0.3 --transport %s --only '=%s' --pcap case.pcap", d.Transport, r.ID),
		}
	}
	lines := []string{
		"# on the DUT's host (rnic built with -tags verbs)",
		fmt.Sprintf("rnic conform agent -d verbs:%s --listen DUT_IP:7471 --tester TESTER_IP", d.Name),
		"# on the tester's",
		fmt.Sprintf("rnic conform run --agent DUT_IP:7471 --transport %s --udp TESTER_IP --only '=%s' --pcap case.pcap", d.Transport, r.ID),
	}
	if d.Kind == "rxe" || d.Kind == "siw" {
		lines = append(lines, "# or both sides in the lab (root; Linux "+d.Kind+" in a QEMU guest)",
			fmt.Sprintf("make conform-lab CONFORM_FLAGS=\"--only '=%s'\"", r.ID))
	}
	return lines
}

// section is one DUT's part of the report.
type section struct {
	Run     Run
	Groups  []Group
	NotRun  []conform.Result
	Ladders map[int]ladderPic // by group index
}

// ladderPic is a drawn ladder: the SVG and what it shows.
type ladderPic struct {
	SVG     []byte
	Caption string
	File    string // its file name beside the Markdown
}

// build groups every run and draws one ladder per group.
func build(runs []Run, o Options) []section {
	var out []section
	for i, run := range runs {
		s := section{Run: run, Groups: Groups(run.Report), NotRun: CouldNotRun(run.Report), Ladders: map[int]ladderPic{}}
		for gi, g := range s.Groups {
			if pic, ok := drawGroup(&run, g, o, fmt.Sprintf("ladder-%d-%d.svg", i+1, gi+1)); ok {
				s.Ladders[gi] = pic
			}
		}
		out = append(out, s)
	}
	return out
}

// drawGroup draws the frames of the first case of g that has a capture.
func drawGroup(run *Run, g Group, o Options, file string) (ladderPic, bool) {
	if o.Ladder == nil {
		return ladderPic{}, false
	}
	for _, r := range g.Results {
		path, from, to, ok := run.Capture(r)
		if !ok {
			continue
		}
		svg, err := o.Ladder(path, from, to, r.ID)
		if err != nil {
			continue
		}
		what := "frames " + frameRange(from, to)
		return ladderPic{SVG: svg, File: file, Caption: fmt.Sprintf("%s: %s of %s", r.ID, what, filepath.Base(path))}, true
	}
	return ladderPic{}, false
}

func frameRange(from, to int) string {
	switch {
	case from == 0 && to == 0:
		return "all"
	case to == 0:
		return fmt.Sprintf("%d on", from)
	}
	return fmt.Sprintf("%d-%d", from, to)
}
