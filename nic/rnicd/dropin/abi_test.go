package dropin

import (
	"debug/elf"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The ABI: each drop-in library exports exactly the dynamic symbols of
// the system's library of the same name, each at the same version node
// and as the default version or not (libibverbs' IBVERBS_1.0 compat
// entries are not the default), and has its SONAME, so that a program
// linked against rdma-core finds every symbol it binds to, at the
// version it binds to. Version nodes are symbols too (IBVERBS_1.1, ...),
// so a missing or misnamed node fails as a missing symbol.
//
// Deliberate differences, the only ones allowed: libibverbs.so.1 also
// exports the node RNIC_PRIVATE_1 and its rnic_private_* functions,
// through which our librdmacm reaches rnicd on a verbs context's session
// (no program of rdma-core's binds to them).
func TestABI(t *testing.T) {
	needLibrary(t)
	for _, lib := range []string{"libibverbs.so.1", "librdmacm.so.1"} {
		t.Run(lib, func(t *testing.T) {
			sys := systemLibrary(t, lib)
			want, wantSoname := exported(t, sys)
			got, gotSoname := exported(t, filepath.Join(build.dir, "lib", lib))
			if gotSoname != wantSoname {
				t.Errorf("SONAME %q, the system's %s has %q", gotSoname, sys, wantSoname)
			}
			for _, s := range want {
				if !slices.Contains(got, s) {
					t.Errorf("missing %s (the system's %s exports it)", s, sys)
				}
			}
			for _, s := range got {
				if !slices.Contains(want, s) && !strings.HasSuffix(s, "@RNIC_PRIVATE_1") {
					t.Errorf("exports %s, which the system's %s does not", s, sys)
				}
			}
			if len(want) < 50 {
				t.Fatalf("the system's %s exports only %d symbols: not rdma-core's?", sys, len(want))
			}
		})
	}
}

// systemLibrary returns rdma-core's installed library, or skips.
func systemLibrary(t *testing.T, name string) string {
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"} {
		p := filepath.Join(dir, name)
		if f, err := elf.Open(p); err == nil {
			f.Close()
			return p
		}
	}
	t.Skipf("no system %s to compare with: apt-get install libibverbs1 librdmacm1", name)
	return ""
}

// exported returns the library's defined global and weak dynamic
// symbols as name@node, with "(compat)" for a non-default version, and
// its SONAME.
func exported(t *testing.T, path string) ([]string, string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, s := range syms {
		bind := elf.ST_BIND(s.Info)
		if s.Section == elf.SHN_UNDEF || (bind != elf.STB_GLOBAL && bind != elf.STB_WEAK) {
			continue
		}
		name := fmt.Sprintf("%s@%s", s.Name, s.Version)
		if s.HasVersion && s.VersionIndex&0x8000 != 0 { // VERSYM_HIDDEN: not the default
			name += " (compat)"
		}
		out = append(out, name)
	}
	sonames, err := f.DynString(elf.DT_SONAME)
	if err != nil || len(sonames) != 1 {
		t.Fatalf("%s: SONAME %v (%v)", path, sonames, err)
	}
	return out, sonames[0]
}
