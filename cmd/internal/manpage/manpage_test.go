package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

const sampleHelp = `usage: prog run [-d DEV] FILE
       prog list

Does things.
Over two lines.

    prog run -d x f
  prog list
Then prose again.

flags of run:
  -d, --dev string    the device
      --fast          go fast,
                      faster on a second line
flags of list:
      --n int[=3]     how many (default 1)
`

// TestParseHelp: the synopsis, prose and verbatim blocks, and flag sets
// with shorthands, arguments and usages over several lines.
func TestParseHelp(t *testing.T) {
	h, err := parseHelp(sampleHelp)
	if err != nil {
		t.Fatal(err)
	}
	want := &helpText{
		synopsis: []string{"prog run [-d DEV] FILE", "prog list"},
		body: []block{
			{para: true, lines: []string{"Does things.", "Over two lines."}},
			{verbatim: true, para: true, lines: []string{"  prog run -d x f", "prog list"}},
			{para: true, lines: []string{"Then prose again."}},
		},
		flags: []flagGroup{
			{name: "run", flags: []flagEntry{
				{short: "d", long: "dev", arg: "string", usage: []string{"the device"}},
				{long: "fast", usage: []string{"go fast,", "faster on a second line"}},
			}},
			{name: "list", flags: []flagEntry{{long: "n", arg: "int[=3]", usage: []string{"how many (default 1)"}}}},
		},
	}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("parsed\n%+v\nwant\n%+v", h, want)
	}
}

// TestParseHelpRefuses: a help text out of the layout stops the pages.
func TestParseHelpRefuses(t *testing.T) {
	for _, bad := range []string{
		"no usage line\n",
		"usage: prog\n\nflags:\nnot a flag\n",
	} {
		if _, err := parseHelp(bad); err == nil {
			t.Errorf("parseHelp(%q) succeeded", bad)
		}
	}
}

// TestEscape: roff's control characters and non-ASCII text print as
// themselves.
func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		`a\b`:       `a\eb`,
		"--flag":    `\-\-flag`,
		".start":    `\&.start`,
		"'start":    `\&'start`,
		"≥ 16 µs":   `\[u2265] 16 \[u00B5]s`,
		"a,b, c":    "a,b, c",
		"plain txt": "plain txt",
	} {
		if got := escape(in); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := breakable("k=v,k=v, x"); got != `k=v,\:k=v, x` {
		t.Errorf("breakable = %q", got)
	}
}

// built builds rnic and rnicd into a temporary directory.
func built(t *testing.T) (rnic, rnicd string) {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{"rnic", "rnicd"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, p), "../../"+p).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", p, err, out)
		}
	}
	return filepath.Join(dir, "rnic"), filepath.Join(dir, "rnicd")
}

// flagsInHelp are the flags a help text's flag sets name, found by a
// looser reading than the parser's: every line of the flag sets that
// starts, after spaces, with a dash.
func flagsInHelp(out string) (long, short []string) {
	_, sets, _ := strings.Cut(out, "\nflags")
	re := regexp.MustCompile(`^\s+(?:-(\S), )?--([a-z0-9][a-z0-9-]*)`)
	for _, l := range strings.Split(sets, "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			long = append(long, m[2])
			if m[1] != "" {
				short = append(short, m[1])
			}
		}
	}
	return long, short
}

// TestPages generates the pages from the real binaries and checks that
// every command rnic help lists has a page that rnic(1) points to, every
// flag of every help is on its page, and the pages render without a
// warning.
func TestPages(t *testing.T) {
	rnic, rnicd := built(t)
	pages, err := generate(rnic, rnicd)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]page{}
	for _, p := range pages {
		byName[p.name] = p
	}
	top, _ := helpOf(rnic, "help")
	_, cmds, _ := parseCommands(top)
	type source struct {
		page string
		args []string
		bin  string
	}
	sources := []source{{"rnicd", []string{"--help"}, rnicd}}
	for _, c := range cmds {
		if !strings.Contains(byName["rnic"].text, `\fB`+escape(c.name)+`\fR`) {
			t.Errorf("rnic(1) does not list %s", c.name)
		}
		if !noPage[c.name] {
			sources = append(sources, source{"rnic-" + c.name, []string{"help", c.name}, rnic})
		}
	}
	if len(sources) < 10 {
		t.Fatalf("only %d commands found in rnic help:\n%s", len(sources)-1, top)
	}
	for _, s := range sources {
		p, ok := byName[s.page]
		if !ok {
			t.Errorf("no page %s", s.page)
			continue
		}
		out, err := helpOf(s.bin, s.args...)
		if err != nil {
			t.Fatal(err)
		}
		long, short := flagsInHelp(out)
		if len(long) == 0 {
			t.Errorf("%s: no flags found in its help", s.page)
		}
		for _, f := range long {
			if !strings.Contains(p.text, `\fB\-\-`+escape(f)+`\fR`) {
				t.Errorf("%s: flag --%s missing", s.page, f)
			}
		}
		for _, f := range short {
			if !strings.Contains(p.text, `\fB\-`+f+`\fR, \fB\-\-`) {
				t.Errorf("%s: shorthand -%s missing", s.page, f)
			}
		}
	}
	dir := t.TempDir()
	if err := write(dir, pages); err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		renders(t, filepath.Join(dir, p.file()), p.name)
	}
}

// renders checks that groff reads the page without a warning and that
// man -l shows it, where they are installed.
func renders(t *testing.T, path, name string) {
	t.Helper()
	if _, err := exec.LookPath("groff"); err == nil {
		if out, err := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z", path).CombinedOutput(); err != nil || len(out) != 0 {
			t.Errorf("groff %s: %v\n%s", path, err, out)
		}
	} else {
		t.Log("groff is not installed: the pages' roff is not checked")
	}
	if _, err := exec.LookPath("man"); err != nil {
		t.Log("man is not installed: the pages are not rendered")
		return
	}
	cmd := exec.Command("man", "-l", path)
	cmd.Env = append(os.Environ(), "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat")
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "NAME") || !strings.Contains(string(out), name+" - ") {
		t.Errorf("man -l %s: %v\n%s", path, err, out)
	}
}

// TestWriteReplaces: a page an earlier run wrote for a command that is
// gone does not survive the next run; other files in the directory do.
func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "man1"), 0o755); err != nil {
		t.Fatal(err)
	}
	stale, other := filepath.Join(dir, "man1", "rnic-gone.1"), filepath.Join(dir, "man1", "other.1")
	for _, f := range []string{stale, other} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := write(dir, []page{{name: "rnic", section: 1, text: "page"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale page kept: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another file removed: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "man1", "rnic.1")); err != nil || string(b) != "page" {
		t.Errorf("rnic.1: %q, %v", b, err)
	}
}
