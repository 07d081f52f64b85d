// The manifests in k8s/ as a cluster would take them: every field known
// to the API, images that make image builds (or that a Containerfile
// beside them describes), rnic's flags parsed by rnic's own flag set,
// every node path they name mounted from the node at that path, and pods
// asking for the resource the plugin registers. rnicd's arguments are
// checked by rnicd's flag set (cmd/rnicd).

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/rnic/rnic/cmd/internal/k8smanifest"
)

// manifestFields stand in for the downward API's fields.
var manifestFields = map[string]string{"status.podIP": "192.0.2.10", "status.hostIP": "192.0.2.10"}

// imageBinaries are where the image make image builds holds rnic's
// programs (cmd/internal/mkimage checks them in the image).
var imageBinaries = map[string]bool{"/usr/local/bin/rnic": true, "/usr/local/bin/rnicd": true}

func readManifestContainers(t *testing.T) []k8smanifest.Container {
	t.Helper()
	objs, err := k8smanifest.Read("k8s")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := k8smanifest.Containers(objs, manifestFields)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestK8sManifests(t *testing.T) {
	rnicImage := makefileImage(t)
	examples := containerfileImages(t)
	var sawPlugin, sawRnicd, sawPerftest bool
	for _, c := range readManifestContainers(t) {
		where := c.Object.File + ": " + c.Object.Name + "/" + c.Name
		switch {
		case c.Image == rnicImage:
			if !imageBinaries[c.Argv[0]] {
				t.Errorf("%s: runs %s, which the image does not hold", where, c.Argv[0])
			}
		case examples[c.Image]:
		default:
			t.Errorf("%s: image %s is neither make image's (%s) nor one a Containerfile in k8s/ describes", where, c.Image, rnicImage)
		}
		switch filepath.Base(c.Argv[0]) {
		case "rnic":
			checkPluginContainer(t, where, c)
			sawPlugin = true
		case "rnicd":
			sawRnicd = true
		case "ib_write_bw", "sh":
			checkPerftestContainer(t, where, c)
			sawPerftest = true
		default:
			t.Errorf("%s: runs %s, which this test does not know", where, c.Argv[0])
		}
	}
	if !sawPlugin || !sawRnicd || !sawPerftest {
		t.Errorf("manifests run the plugin %v, rnicd %v, perftest %v: want all", sawPlugin, sawRnicd, sawPerftest)
	}
}

// checkPluginContainer parses rnic's arguments with the command's own
// flags and checks the node paths they name are the node's.
func checkPluginContainer(t *testing.T, where string, c k8smanifest.Container) {
	t.Helper()
	fs := pflag.NewFlagSet("rnic k8s", pflag.ContinueOnError)
	var f k8sFlags
	f.add(fs)
	if err := fs.Parse(c.Argv[1:]); err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	if !slices.Equal(fs.Args(), []string{"k8s", "device-plugin"}) {
		t.Errorf("%s: runs rnic %v, want rnic k8s device-plugin", where, fs.Args())
	}
	if f.libDir == "" || !f.installLibs {
		t.Errorf("%s: an image's plugin must install the libraries (--install-libs --lib-dir)", where)
	}
	paths := []string{f.socket, filepath.Dir(f.kubelet), f.libDir}
	for _, p := range []string{f.cdiSpec, f.cdiHook} {
		if p != "" {
			paths = append(paths, filepath.Dir(p))
		}
	}
	for _, p := range paths {
		if got := c.MountFor(p); got != p {
			t.Errorf("%s: %s is not the node's %s (mounted from %q): the kubelet would mount the wrong path into pods", where, p, p, got)
		}
	}
}

// perftestInvocation finds ib_write_bw's arguments in a command line or
// a shell script.
var perftestInvocation = regexp.MustCompile(`ib_write_bw((?: -{1,2}[\w-]+(?: [\w.-]+)?)*)`)

// checkPerftestContainer checks the example pods ask for an rnic NIC and
// use ib_write_bw flags that perftest has (where it is installed).
func checkPerftestContainer(t *testing.T, where string, c k8smanifest.Container) {
	t.Helper()
	if q := c.Resources.Limits[corev1.ResourceName(cdiKind)]; q.Value() != 1 {
		t.Errorf("%s: limits %s: %v, want 1", where, cdiKind, c.Resources.Limits)
	}
	m := perftestInvocation.FindStringSubmatch(strings.Join(c.Argv, " "))
	if m == nil {
		t.Errorf("%s: no ib_write_bw in %q", where, c.Argv)
		return
	}
	path, err := exec.LookPath("ib_write_bw")
	if err != nil {
		t.Logf("%s: flags not checked: ib_write_bw not installed (apt-get install perftest)", where)
		return
	}
	help, _ := exec.Command(path, "--help").CombinedOutput()
	for _, flag := range regexp.MustCompile(`-{1,2}[\w-]+`).FindAllString(m[1], -1) {
		if !regexp.MustCompile(`(^|[\s,])` + regexp.QuoteMeta(flag) + `\b`).Match(help) {
			t.Errorf("%s: ib_write_bw has no flag %s", where, flag)
		}
	}
}

// makefileImage is the name make image gives the image.
func makefileImage(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^IMAGE\s*\?=\s*(\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("the Makefile sets no IMAGE")
	}
	return string(m[1])
}

// containerfileImages are the images Containerfiles in k8s/ build (the
// -t of their build line).
func containerfileImages(t *testing.T) map[string]bool {
	t.Helper()
	files, _ := filepath.Glob("k8s/Containerfile.*")
	out := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`build -t (\S+)`).FindAllSubmatch(data, -1) {
			out[string(m[1])] = true
		}
	}
	return out
}
