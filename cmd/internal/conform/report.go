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
	DUT agentproto.DeviceInfo `json:"dut"`
	// Date is when the run started.
	Date    time.Time `json:"date"`
	Results []Result  `json:"results"`
	Summary Summary   `json:"summary"`
}

// Summary counts verdicts.
type Summary struct {
	Cases         int `json:"cases"`
	Pass          int `json:"pass"`
	Fail          int `json:"fail"`
	Deviation     int `json:"deviation_known"`
	NotApplicable int `json:"not_applicable"`
	CouldNotRun   int `json:"could_not_run"`
	Crashed       int `json:"dut_crashed"`
}

// RunSuite runs cases in order; progress, if set, gets one line per case
// as it ends.
func RunSuite(cfg *Config, cases []Case, progress func(Result)) Report {
	rep := Report{DUT: cfg.Info, Date: time.Now().UTC(), Results: []Result{}}
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
	rep.Summary.count(r.Verdict)
}

func (s *Summary) count(v Verdict) {
	s.Cases++
	switch v {
	case Pass:
		s.Pass++
	case Fail:
		s.Fail++
	case DeviationSeen:
		s.Deviation++
	case NotApplicable:
		s.NotApplicable++
	case CouldNotRun:
		s.CouldNotRun++
	case DUTCrashed:
		s.Crashed++
	}
}

// Recount counts the verdicts of the results again (after MarkCrashed,
// or results appended by hand).
func (rep *Report) Recount() {
	rep.Summary = Summary{}
	for _, r := range rep.Results {
		rep.Summary.count(r.Verdict)
	}
}

// Failed reports whether a case failed or crashed the DUT.
func (rep *Report) Failed() bool { return rep.Summary.Fail+rep.Summary.Crashed > 0 }

// Exit statuses of a run (rnic conform run): a FAIL or a crash is a
// verdict against the DUT; cases that could not run leave the run
// incomplete without saying the DUT broke a rule, so they have a status
// of their own, which CI treats as failing all the same.
const (
	ExitFail       = 1
	ExitIncomplete = 3
)

// ExitCode is the run's exit status: 0 when every case was judged and
// none FAILed or crashed the DUT; ExitFail when some did; else
// ExitIncomplete when some could not run.
func (rep *Report) ExitCode() int {
	switch {
	case rep.Failed():
		return ExitFail
	case rep.Summary.CouldNotRun > 0:
		return ExitIncomplete
	}
	return 0
}

// SummaryLine is the report's last line.
func (rep *Report) SummaryLine() string {
	s := rep.Summary
	line := fmt.Sprintf("conform %s (%s): %d cases: %d pass, %d FAIL, %d deviation-known, %d not-applicable",
		rep.DUT.Name, rep.DUT.Kind, s.Cases, s.Pass, s.Fail, s.Deviation, s.NotApplicable)
	if s.CouldNotRun > 0 {
		line += fmt.Sprintf(", %d could-not-run", s.CouldNotRun)
	}
	if s.Crashed > 0 {
		line += fmt.Sprintf(", %d DUT-crashed", s.Crashed)
	}
	if n := len(rep.Causes()); n > 0 {
		line += fmt.Sprintf("; %d root-cause finding(s): %s", n, strings.Join(rep.Causes(), ", "))
	}
	return line
}

// Causes lists the root causes of the results' findings, in the order
// first met.
func (rep *Report) Causes() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rep.Results {
		for _, f := range r.Findings {
			if !seen[f.Cause] {
				seen[f.Cause] = true
				out = append(out, f.Cause)
			}
		}
	}
	return out
}

// WriteText writes the table and the summary line.
func (rep *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tSECTION\tVERDICT\tTITLE\tEVIDENCE")
	for _, r := range rep.Results {
		ev := textEvidence(&r)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Section, r.Verdict, r.Title, oneLine(ev))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, rep.SummaryLine())
	return err
}

// textEvidence is a result's evidence column: the detail of a verdict
// other than pass, the evidence, the known deviation's reference, the
// crash's case verdict and the findings' causes.
func textEvidence(r *Result) string {
	ev := r.Evidence
	if r.Verdict != Pass && r.Detail != "" {
		ev = r.Detail + " [" + r.Evidence + "]"
	}
	if r.Ref != "" {
		ev += " (known: " + r.Ref + ")"
	}
	if r.Crash != nil {
		ev += "; the case itself: " + string(r.Crash.Verdict)
		if r.Crash.Detail != "" {
			ev += " " + r.Crash.Detail
		}
	}
	for _, f := range r.Findings {
		ev += " (root cause " + f.Cause + ": " + f.Evidence + ")"
	}
	return ev
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// WriteJSON writes the report as one JSON object.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// JUnit XML, as CI systems read it: one testsuite, one testcase per case;
// FAIL and DUT-crashed are failures (of type FAIL or DUT-crashed),
// could-not-run an error, not-applicable a skip; deviation-known passes
// with its detail in system-out, as do a case's findings.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML.
func (rep *Report) WriteJUnit(w io.Writer) error {
	s := junitSuite{Name: "rnic conform " + rep.DUT.Name, Tests: rep.Summary.Cases,
		Failures: rep.Summary.Fail + rep.Summary.Crashed, Errors: rep.Summary.CouldNotRun, Skipped: rep.Summary.NotApplicable}
	var total time.Duration
	for _, r := range rep.Results {
		total += r.Duration
		c := junitCase{Name: r.ID + " " + r.Title, Classname: "conform." + string(r.Transport),
			Time: secs(r.Duration), SystemOut: r.Section + ": " + r.Evidence}
		switch r.Verdict {
		case Fail:
			c.Failure = &junitMessage{Message: r.Detail, Type: string(Fail), Text: r.Evidence}
		case DUTCrashed:
			c.Failure = &junitMessage{Message: r.Detail, Type: string(DUTCrashed),
				Text: strings.Join(r.Crash.Log, "\n") + "\nthe case itself: " + string(r.Crash.Verdict) + " " + r.Crash.Detail + "\n" + r.Evidence}
		case CouldNotRun:
			c.Error = &junitMessage{Message: r.Detail, Type: string(CouldNotRun), Text: r.Evidence}
		case NotApplicable:
			c.Skipped = &junitMessage{Message: r.Detail}
		case DeviationSeen:
			c.SystemOut += "\ndeviation-known (" + r.Ref + "): " + r.Detail
		}
		for _, f := range r.Findings {
			c.SystemOut += "\nroot cause " + f.Cause + " (" + f.Section + "): " + f.Evidence
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
