package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The examples of every README.md in the tree (the first page at the top,
// each component's manual beside its code), checked so that they cannot
// drift:
//
//   - a ```go block is excerpts of an example in a _test.go file of the
//     repository (go test compiles every Example, and runs those with an
//     Output comment): its pieces between "// ..." lines appear in one
//     such file, in order, line for line (indentation aside);
//   - a sample session (a block whose lines start with "$ ") runs: each
//     "$ rnic ..." command runs in process, on this test's ports, and its
//     output must hold the sample's lines in order, numbers aside ("..."
//     stands for anything); a command without output lines before the
//     next "$" is a server the next one needs, run alongside;
//   - every other rnic or rnicd command line of a block names a real
//     command and real flags; the commands that need root, a lab or
//     hardware are checked so, not run; a make command names a target of
//     the Makefile;
//   - every relative link names a file or folder of the tree.
//
// Command lines are written as run from the repository's root (bin/rnic,
// testdata/...), whichever README holds them.

// repoRoot is the repository's root, seen from this package.
const repoRoot = "../.."

// readmeBlock is one fenced block of a README.
type readmeBlock struct {
	lang  string
	line  int // of the opening fence
	lines []string
}

// readme is one README.md of the tree.
type readme struct {
	path   string // from the repository's root, for messages
	text   string
	blocks []readmeBlock
}

// at names a line of the README for a message: "cmd/rnic/README.md:12".
func (r readme) at(line int) string {
	return fmt.Sprintf("%s:%d", r.path, line)
}

// readmes reads every README.md of the tree but hidden folders (.git,
// .ci) and build output; the top one comes first.
func readmes(t *testing.T) []readme {
	t.Helper()
	var out []readme
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != repoRoot && (strings.HasPrefix(d.Name(), ".") || isBuildOutput(path)) {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "README.md" {
			return nil
		}
		rel, _ := filepath.Rel(repoRoot, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out = append(out, readme{path: filepath.ToSlash(rel), text: string(b), blocks: readmeBlocks(t, rel, string(b))})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 || out[0].path != "README.md" {
		t.Fatal("no README.md at the repository's root")
	}
	return out
}

// isBuildOutput: the folders make build writes (bin, lib) at the root.
func isBuildOutput(path string) bool {
	rel, _ := filepath.Rel(repoRoot, path)
	return rel == "bin" || rel == "lib"
}

func readmeBlocks(t *testing.T, path, text string) []readmeBlock {
	t.Helper()
	var out []readmeBlock
	var cur *readmeBlock
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &readmeBlock{lang: strings.TrimPrefix(l, "```"), line: n}
		case cur != nil && l == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, l)
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: block never closed", path, cur.line)
	}
	return out
}

// TestReadmeGoBlocks: every Go block is excerpts of a tested example.
func TestReadmeGoBlocks(t *testing.T) {
	var tests []string // the repository's _test.go files, read
	filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != repoRoot {
			return filepath.SkipDir // .git, .ci
		}
		if err == nil && !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			if b, err := os.ReadFile(path); err == nil {
				tests = append(tests, string(b))
			}
		}
		return nil
	})
	n := 0
	for _, r := range readmes(t) {
		for _, b := range r.blocks {
			if b.lang != "go" {
				continue
			}
			n++
			found := false
			for _, src := range tests {
				if holdsExcerpts(src, b.lines) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s: this Go block is not excerpts of any example test:\n%s", r.at(b.line), strings.Join(b.lines, "\n"))
			}
		}
	}
	if n == 0 {
		t.Error("no Go block in any README")
	}
}

// holdsExcerpts reports whether src holds the pieces of block (separated
// by "// ..." lines) in order, each as consecutive lines, comparing lines
// without their indentation.
func holdsExcerpts(src string, block []string) bool {
	var lines []string
	for _, l := range strings.Split(src, "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	at := 0
	var piece []string
	flush := func() bool {
		if len(piece) == 0 {
			return true
		}
		for i := at; i+len(piece) <= len(lines); i++ {
			if equalLines(lines[i:i+len(piece)], piece) {
				at, piece = i+len(piece), nil
				return true
			}
		}
		return false
	}
	for _, l := range block {
		l = strings.TrimSpace(l)
		if l == "// ..." || l == "..." {
			if !flush() {
				return false
			}
			continue
		}
		piece = append(piece, l)
	}
	return flush()
}

func equalLines(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// readmeTestArgs are added to a sample's command when it runs here, so
// that it uses this test's ports and writes no file into the tree.
var readmeTestArgs = map[string][]string{
	"pingpong": {"-p", "24841", "--rdma-port", "24842"},
	"perf":     {"--rdma-port", "24843"},
	"demo":     {"--port", "24844", "--pcap", filepath.Join(os.TempDir(), "rnic-readme-demo.pcap")},
}

// TestReadmeSessions runs every sample session and compares its output.
func TestReadmeSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the READMEs' sample commands (about 20 s)")
	}
	n := 0
	for _, r := range readmes(t) {
		for _, b := range r.blocks {
			if len(b.lines) == 0 || !strings.HasPrefix(b.lines[0], "$ ") {
				continue
			}
			for _, s := range sessionSteps(b) {
				if !s.runnable() {
					checkCommandLine(t, r.at(b.line), s.cmd)
					continue
				}
				n++
				s.run(t, r.at(b.line))
			}
		}
	}
	if n == 0 {
		t.Error("no runnable sample session in any README")
	}
}

// sessionStep is one "$ command" of a sample and the output shown for it.
type sessionStep struct {
	cmd    string
	output []string
	server *sessionStep // a command to run alongside (a server)
}

func sessionSteps(b readmeBlock) []*sessionStep {
	var steps []*sessionStep
	for _, l := range b.lines {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			if i := strings.Index(c, " #"); i >= 0 {
				c = c[:i] // a comment
			}
			steps = append(steps, &sessionStep{cmd: strings.TrimSpace(c)})
			continue
		}
		if len(steps) > 0 {
			steps[len(steps)-1].output = append(steps[len(steps)-1].output, l)
		}
	}
	// A command with no output followed by another is that one's server.
	var out []*sessionStep
	for i, s := range steps {
		if len(s.output) == 0 && i+1 < len(steps) && s.runnable() {
			steps[i+1].server = s
			continue
		}
		out = append(out, s)
	}
	return out
}

// runnable: an rnic command that needs no root, lab, daemon or device.
func (s *sessionStep) runnable() bool {
	f := strings.Fields(s.cmd)
	if len(f) < 2 || (f[0] != "rnic" && f[0] != "bin/rnic") {
		return false
	}
	for _, a := range f {
		if strings.HasPrefix(a, "--tap") || a == "--netns" || strings.Contains(a, "@") || strings.HasPrefix(a, "verbs:") {
			return false
		}
	}
	return true
}

// args are the command's arguments for run, with this test's additions;
// paths from the repository's root are made relative to this package.
func (s *sessionStep) args() []string {
	f := strings.Fields(s.cmd)[1:]
	var out []string
	for _, a := range f {
		if _, err := os.Stat(filepath.Join("../..", a)); err == nil && !strings.HasPrefix(a, "-") {
			a = filepath.Join("../..", a) // a path from the repository's root
		}
		out = append(out, a)
	}
	return append(out, readmeTestArgs[f[0]]...)
}

func (s *sessionStep) run(t *testing.T, where string) {
	t.Helper()
	args := s.args() // every file a sample names is in the tree: a clone runs them all
	if s.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var sout, serr bytes.Buffer
		done := make(chan int, 1)
		sargs := s.server.args()
		go func() { done <- runIn(ctx, sargs, &sout, &serr) }()
		defer func() {
			if code := <-done; code != 0 {
				t.Errorf("%s: %q: exit %d\n%s%s", where, s.server.cmd, code, sout.String(), serr.String())
			}
		}()
	}
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if code := runIn(ctx, args, &out, &errb); code != 0 {
		t.Errorf("%s: %q: exit %d\n%s%s", where, s.cmd, code, out.String(), errb.String())
		return
	}
	if missing := unmatched(s.output, out.String()+errb.String()); missing != "" {
		t.Errorf("%s: %q: the sample's line\n  %s\nis not in its output (in order, numbers aside):\n%s%s",
			where, s.cmd, missing, out.String(), errb.String())
	}
}

// runIn runs a command line under ctx (instead of the signals').
func runIn(ctx context.Context, args []string, stdout, stderr *bytes.Buffer) int {
	defer setRootContext(ctx)()
	return run(args, stdout, stderr)
}

var (
	numberRun = regexp.MustCompile(`[0-9][0-9a-fA-Fx.:]*`)
	spaceRun  = regexp.MustCompile(`\s+`)
)

// linePattern is a sample line as a pattern: numbers (decimal, hex, with
// dots and colons: addresses, sizes, times) stand for any number, runs of
// spaces for any spaces, "..." for anything.
func linePattern(l string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^\s*`)
	for _, part := range strings.Split(strings.TrimSpace(l), "...") {
		if b.Len() > len(`^\s*`) {
			b.WriteString(`.*`)
		}
		last := 0
		for _, m := range numberRun.FindAllStringIndex(part, -1) {
			b.WriteString(spaceRun.ReplaceAllString(regexp.QuoteMeta(part[last:m[0]]), `\s+`))
			b.WriteString(`[0-9][0-9a-fA-Fx.:]*`)
			last = m[1]
		}
		b.WriteString(spaceRun.ReplaceAllString(regexp.QuoteMeta(part[last:]), `\s+`))
	}
	b.WriteString(`\s*$`)
	return regexp.MustCompile(b.String())
}

// unmatched returns the first sample line not found in output after the
// previous one, or "".
func unmatched(sample []string, output string) string {
	out := strings.Split(output, "\n")
	at := 0
	for _, l := range sample {
		if strings.TrimSpace(l) == "..." || strings.TrimSpace(l) == "" {
			continue
		}
		p := linePattern(l)
		for at < len(out) && !p.MatchString(out[at]) {
			at++
		}
		if at == len(out) {
			return l
		}
		at++
	}
	return ""
}

// TestReadmeCommandLines: every rnic, rnicd and make command line of the
// READMEs' blocks names a command and flags (a target) that exist.
func TestReadmeCommandLines(t *testing.T) {
	for _, r := range readmes(t) {
		for _, b := range r.blocks {
			for _, l := range b.lines {
				l = strings.TrimPrefix(strings.TrimSpace(l), "$ ")
				if i := strings.Index(l, " #"); i >= 0 {
					l = l[:i]
				}
				checkCommandLine(t, r.at(b.line), l)
			}
		}
	}
}

// rnicdSource is cmd/rnicd's source, where its flags are declared.
var rnicdSource = func() string {
	var all []byte
	files, _ := filepath.Glob(filepath.Join(repoRoot, "cmd/rnicd/*.go"))
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			b, _ := os.ReadFile(f)
			all = append(all, b...)
		}
	}
	return string(all)
}()

// checkCommandLine checks one shell line if it runs rnic, rnicd or make;
// where names the block for messages.
func checkCommandLine(t *testing.T, where string, l string) {
	t.Helper()
	f := strings.Fields(l)
	for len(f) > 0 && (f[0] == "sudo" || strings.Contains(f[0], "=") && !strings.HasPrefix(f[0], "-")) {
		f = f[1:] // sudo, and VAR=value before a command
	}
	if len(f) == 0 {
		return
	}
	switch filepath.Base(f[0]) {
	case "rnic":
		if len(f) < 2 {
			return
		}
		c := lookup(f[1])
		if c == nil {
			t.Errorf("%s: %q: no command %q", where, l, f[1])
			return
		}
		help, _, _ := rnic(t, f[1], "--help")
		for _, a := range f[2:] {
			if a == "--" { // rnic exec: the rest is the program's
				break
			}
			if flag, ok := flagOf(a); ok && !strings.Contains(help, flag) {
				t.Errorf("%s: %q: rnic %s has no flag %s", where, l, f[1], a)
			}
		}
	case "rnicd":
		for _, a := range f[1:] {
			if flag, ok := flagOf(a); ok && !strings.Contains(rnicdSource, `"`+strings.TrimLeft(flag, "-")+`"`) {
				t.Errorf("%s: %q: rnicd has no flag %s", where, l, a)
			}
		}
	case "make":
		for _, a := range f[1:] {
			if strings.HasPrefix(a, "-") {
				return // make -C DIR: another Makefile
			}
			if !strings.Contains(a, "=") && !makeTargets[a] {
				t.Errorf("%s: %q: the Makefile has no target %s", where, l, a)
			}
		}
	}
}

// makeTargets are the top Makefile's targets.
var makeTargets = func() map[string]bool {
	b, _ := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-zA-Z0-9_-]+):`).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out
}()

// flagOf is how a command's help names the flag argument a is: "--name"
// or "-x, " for a shorthand; ok is false for an argument that is not a
// flag.
func flagOf(a string) (string, bool) {
	name, _, _ := strings.Cut(a, "=")
	switch {
	case strings.HasPrefix(name, "--") && len(name) > 2:
		return name, true
	case strings.HasPrefix(name, "-") && len(name) == 2 && name[1] != '-':
		return name + ", ", true
	}
	return "", false
}

// TestReadmeNetnsLoopback: a README recipe that makes a network namespace
// brings its lo up. Left down (as `ip netns add` leaves it), nothing in the
// namespace reaches its own addresses: ibv_rc_pingpong through rnic exec,
// its client aimed at the bridge's address, hung in connect while its
// server waited with its QP in INIT.
func TestReadmeNetnsLoopback(t *testing.T) {
	add := regexp.MustCompile(`\bip netns add (\S+)`)
	for _, r := range readmes(t) {
		for _, b := range r.blocks {
			text := strings.Join(b.lines, "\n")
			for _, m := range add.FindAllStringSubmatch(text, -1) {
				if !strings.Contains(text, "ip -n "+m[1]+" link set lo up") {
					t.Errorf("%s: namespace %s is made without `ip -n %s link set lo up`", r.at(b.line), m[1], m[1])
				}
			}
		}
	}
}

// TestReadmeLinks: every relative link of a README ([text](path), images
// too) names a file or folder of the tree, so a moved file shows here.
func TestReadmeLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, r := range readmes(t) {
		for i, l := range strings.Split(r.text, "\n") {
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				target, _, _ := strings.Cut(m[1], "#")
				if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				p := filepath.Join(repoRoot, filepath.Dir(r.path), target)
				if _, err := os.Stat(p); err != nil {
					t.Errorf("%s: link to %s: no such file in the tree", r.at(i+1), m[1])
				}
			}
		}
	}
}

// TestReadmeFirstPage: the top README stays a first page (what rnic is,
// how to start, where to read on) and the commands it gives to set up are
// the ones CI runs, so that a user's first commands are tested ones.
func TestReadmeFirstPage(t *testing.T) {
	top := readmes(t)[0]
	if n := strings.Count(top.text, "\n"); n > 220 {
		t.Errorf("README.md has %d lines: a first page has about 200; move detail into a component's README.md", n)
	}
	ci, err := os.ReadFile(filepath.Join(repoRoot, ".ci/run"))
	if err != nil {
		t.Fatal(err)
	}
	setup := top.blocks[0] // the first block: the set-up commands
	for _, l := range setup.lines {
		cmd, _, _ := strings.Cut(l, "#")
		cmd = strings.TrimSpace(cmd)
		if strings.HasPrefix(cmd, "make ") && !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(cmd)+`$`).Match(ci) {
			t.Errorf("%s: %q is not a line of .ci/run: CI must run what the first page says", top.at(setup.line), cmd)
		}
	}
}

// TestReadmeNoIssueNumbers: the manuals say what is, not which ticket
// made it so; "issue N" means nothing to a reader of a clone.
func TestReadmeNoIssueNumbers(t *testing.T) {
	cite := regexp.MustCompile(`(?i)\bissues? (#|no\.? ?)?[0-9]+`)
	for _, r := range readmes(t) {
		for i, l := range strings.Split(r.text, "\n") {
			if m := cite.FindString(l); m != "" {
				t.Errorf("%s: %q cites a ticket", r.at(i+1), m)
			}
		}
	}
}
