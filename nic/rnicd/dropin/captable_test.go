package dropin

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCapabilityTable: the capability tables of nic/README.md are what the
// devices report. The rnic column is ibv_devinfo -v of a daemon's NIC
// through the drop-in; the rxe and siw columns are the lab guest's outputs
// in testdata/devinfo. Every cell of a row derived from ibv_devinfo is
// checked, and every flag a device shows must have a row.
func TestCapabilityTable(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "ibv_devinfo")
	rows, verbRows := readCapabilityTables(t)
	d := sharedDaemon(t)
	p := d.runOne(t, "ibv_devinfo", "-v", "-d", "rnic0")
	if !p.ok() {
		t.Fatal(p.report())
	}
	devs := []devinfo{parseDevinfo(p.out.String())}
	for _, f := range []string{"rxe-6.1.txt", "siw-6.1.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "devinfo", f))
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, parseDevinfo(string(b)))
	}
	columns := []string{"rnic", "rxe", "siw"}
	flagRows := map[string]bool{}
	for _, r := range rows {
		for i, dev := range devs {
			want, err := dev.cell(r.label)
			if err != nil {
				t.Errorf("row %q: %s: %v", r.label, columns[i], err)
				continue
			}
			if r.cells[i] != want {
				t.Errorf("row %q, column %s: the table says %q, the device %q", r.label, columns[i], r.cells[i], want)
			}
		}
		if name, ok := strings.CutPrefix(r.label, "flag "); ok {
			flagRows[strings.Trim(name, "`")] = true
		}
	}
	for i, dev := range devs {
		for _, f := range dev.flags {
			if !flagRows[f] {
				t.Errorf("%s shows device_cap_flags %s, which the table has no row for", columns[i], f)
			}
		}
	}
	for _, r := range verbRows {
		for i, dev := range devs {
			want, err := dev.verb(r.label)
			if err != nil {
				t.Errorf("verbs row %q: %v", r.label, err)
				break
			}
			if r.cells[i] != want {
				t.Errorf("verbs row %q, column %s: the table says %q, the device %q", r.label, columns[i], r.cells[i], want)
			}
		}
	}
}

// capRow is a row of a table: its label (first cell, as written) and the
// rnic, rxe and siw cells.
type capRow struct {
	label string
	cells []string
}

// readCapabilityTables returns the rows of the section's two tables: the
// ibv_devinfo fields and flags, and the verbs rows marked ✓ (derived),
// with the mark taken off the label.
func readCapabilityTables(t *testing.T) (fields, verbs []capRow) {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "nic", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Capabilities: rnic, rxe and siw\n")
	if !ok {
		t.Fatal("nic/README.md has no section \"Capabilities: rnic, rxe and siw\"")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	table := 0
	sc := bufio.NewScanner(strings.NewReader(sec))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case len(cells) != 4:
			t.Fatalf("capability table row with %d cells: %s", len(cells), line)
		case cells[0] == "`ibv_devinfo -v`":
			table = 1
		case cells[0] == "verbs":
			table = 2
		case strings.HasPrefix(cells[0], "---"):
		case table == 1:
			fields = append(fields, capRow{cells[0], cells[1:]})
		case table == 2 && strings.HasSuffix(cells[0], " ✓"):
			verbs = append(verbs, capRow{strings.TrimSuffix(cells[0], " ✓"), cells[1:]})
		}
	}
	if len(fields) < 20 || len(verbs) < 5 {
		t.Fatalf("capability tables: %d field rows, %d derived verbs rows", len(fields), len(verbs))
	}
	return fields, verbs
}

// devinfo is one device's ibv_devinfo -v output: its "name: value" fields
// (the first of each name) and the names listed under device_cap_flags.
type devinfo struct {
	fields map[string]string
	flags  []string
	odp    bool // some *_odp_caps lists a capability
}

var (
	fieldLine = regexp.MustCompile(`^\t+([a-z_0-9]+):\s*(.*?)\s*$`)
	nameLine  = regexp.MustCompile(`^\t+([A-Z_0-9 ]+)$`)
)

func parseDevinfo(out string) devinfo {
	d := devinfo{fields: map[string]string{}}
	under := ""
	for line := range strings.SplitSeq(out, "\n") {
		if m := fieldLine.FindStringSubmatch(line); m != nil {
			under = m[1]
			if _, seen := d.fields[m[1]]; !seen {
				d.fields[m[1]] = m[2]
			}
			continue
		}
		if m := nameLine.FindStringSubmatch(line); m != nil {
			switch {
			case under == "device_cap_flags":
				d.flags = append(d.flags, m[1])
			case strings.HasSuffix(under, "_odp_caps") && m[1] != "NO SUPPORT":
				d.odp = true
			}
		}
	}
	return d
}

// cell is what the fields table shows for label: a field's value, or yes
// or no for a flag.
func (d devinfo) cell(label string) (string, error) {
	if name, ok := strings.CutPrefix(label, "flag "); ok {
		return yesNo(d.hasFlag(strings.Trim(name, "`"))), nil
	}
	name := strings.Trim(label, "`")
	v, ok := d.fields[name]
	if !ok {
		return "", fmt.Errorf("ibv_devinfo -v shows no %s", name)
	}
	return v, nil
}

func (d devinfo) hasFlag(f string) bool {
	for _, g := range d.flags {
		if g == f {
			return true
		}
	}
	return false
}

func (d devinfo) num(name string) (uint64, error) {
	v, ok := d.fields[name]
	if !ok {
		return 0, fmt.Errorf("ibv_devinfo -v shows no %s", name)
	}
	return strconv.ParseUint(strings.Fields(v)[0], 0, 64)
}

// The extended flags Linux 6.2 added (enum ib_uverbs_device_cap_flags).
const (
	flushGlobal     = 1 << 38
	flushPersistent = 1 << 39
	atomicWrite     = 1 << 40
)

// verb is what the verbs table shows for a derived row.
func (d devinfo) verb(label string) (string, error) {
	ex, err := d.num("device_cap_flags_ex")
	if err != nil {
		return "", err
	}
	count := func(name string) (bool, error) {
		n, err := d.num(name)
		return n > 0, err
	}
	switch label {
	case "atomics":
		switch a := d.fields["atomic_cap"]; {
		case strings.HasPrefix(a, "ATOMIC_GLOB"):
			return "yes (GLOB)", nil
		case strings.HasPrefix(a, "ATOMIC_HCA"):
			return "yes (HCA)", nil
		case strings.HasPrefix(a, "ATOMIC_NONE"):
			return "no", nil
		}
		return "", fmt.Errorf("atomic_cap %q", d.fields["atomic_cap"])
	case "memory windows":
		has, err := count("max_mw")
		switch {
		case err != nil || !has:
			return "no", err
		case d.hasFlag("MEM_WINDOW_TYPE_2B"):
			return "types 1 and 2B", nil
		}
		return "type 1", nil
	case "multicast":
		has, err := count("max_mcast_grp")
		return yesNo(has), err
	case "ATOMIC WRITE":
		return yesNo(ex&atomicWrite != 0), nil
	case "FLUSH":
		return yesNo(ex&(flushGlobal|flushPersistent) != 0), nil
	case "SRQ":
		has, err := count("max_srq")
		return yesNo(has), err
	case "SRQ resize":
		return yesNo(d.hasFlag("SRQ_RESIZE")), nil
	case "XRC":
		return yesNo(d.hasFlag("XRC")), nil
	case "ODP":
		return yesNo(d.odp), nil
	}
	return "", fmt.Errorf("no rule derives the row from ibv_devinfo -v (drop its ✓ or add one)")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
