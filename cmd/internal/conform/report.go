// The suite's report: a text table, JSON, JUnit XML and a summary line.

package conform

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
)

// Report is a run of the suite.
type Report struct {
	DUT     agentproto.DeviceInfo `json:"dut"`
	Results []Result              `json:"results"`
	Summary Summary               `json:"summary"`
}

// Summary counts verdicts.
type Summary struct {
	Cases         int `json:"cases"`
	Pass          int `json:"pass"`
	Fail          int `json:"fail"`
	Deviation     int `json:"deviation_known"`
	NotApplicable int `json:"not_applicable"`
}

// RunSuite runs cases in order; progress, if set, gets one line per case
// as it ends.
func RunSuite(cfg *Config, cases []Case, progress func(Result)) Report {
	rep := Report{DUT: cfg.Info, Results: []Result{}}
	for _, c := range cases {
		res := RunCase(cfg, c, false)
		rep.add(res)
		if progress != nil {
			progress(res)
		}
	}
	return rep
}

func (rep *Report) add(r Result) {
	rep.Results = append(rep.Results, r)
	s := &rep.Summary
	s.Cases++
	switch r.Verdict {
	case Pass:
		s.Pass++
	case Fail:
		s.Fail++
	case DeviationSeen:
		s.Deviation++
	case NotApplicable:
		s.NotApplicable++
	}
}

// Failed reports whether any case failed.
func (rep *Report) Failed() bool { return rep.Summary.Fail > 0 }

// SummaryLine is the report's last line.
func (rep *Report) SummaryLine() string {
	s := rep.Summary
	return fmt.Sprintf("conform %s (%s): %d cases: %d pass, %d FAIL, %d deviation-known, %d not-applicable",
		rep.DUT.Name, rep.DUT.Kind, s.Cases, s.Pass, s.Fail, s.Deviation, s.NotApplicable)
}

// WriteText writes the table and the summary line.
func (rep *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tSECTION\tVERDICT\tTITLE\tEVIDENCE")
	for _, r := range rep.Results {
		ev := r.Evidence
		if r.Verdict != Pass && r.Detail != "" {
			ev = r.Detail + " [" + r.Evidence + "]"
		}
		if r.Ref != "" {
			ev += " (known: " + r.Ref + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Section, r.Verdict, r.Title, oneLine(ev))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, rep.SummaryLine())
	return err
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// WriteJSON writes the report as one JSON object.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// JUnit XML, as CI systems read it: one testsuite, one testcase per case;
// FAIL is a failure, not-applicable a skip, deviation-known passes with
// its detail in system-out.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML.
func (rep *Report) WriteJUnit(w io.Writer) error {
	s := junitSuite{Name: "rnic conform " + rep.DUT.Name, Tests: rep.Summary.Cases,
		Failures: rep.Summary.Fail, Skipped: rep.Summary.NotApplicable}
	var total time.Duration
	for _, r := range rep.Results {
		total += r.Duration
		c := junitCase{Name: r.ID + " " + r.Title, Classname: "conform." + string(r.Transport),
			Time: secs(r.Duration), SystemOut: r.Section + ": " + r.Evidence}
		switch r.Verdict {
		case Fail:
			c.Failure = &junitMessage{Message: r.Detail, Text: r.Evidence}
		case NotApplicable:
			c.Skipped = &junitMessage{Message: r.Detail}
		case DeviationSeen:
			c.SystemOut += "\ndeviation-known (" + r.Ref + "): " + r.Detail
		}
		s.Cases = append(s.Cases, c)
	}
	s.Time = secs(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
