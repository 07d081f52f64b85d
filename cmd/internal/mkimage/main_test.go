package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// buildPrograms builds rnic and rnicd static, as make image does: the
// image holds no C library for them.
func buildPrograms(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{"rnic", "rnicd"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, p), "../../"+p)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", p, err, out)
		}
	}
	return dir
}

// standInLibs writes random bytes as the drop-in libraries: the image
// carries them, nothing here loads them.
func standInLibs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"libibverbs.so.1", "librdmacm.so.1"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(rand.Text()), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// ociDescriptor, ociIndex, ... are the image specification's JSON as this
// test reads it, apart from the writer's types.
type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

type ociIndex struct {
	SchemaVersion int             `json:"schemaVersion"`
	Manifests     []ociDescriptor `json:"manifests"`
}

type ociManifest struct {
	SchemaVersion int             `json:"schemaVersion"`
	MediaType     string          `json:"mediaType"`
	Config        ociDescriptor   `json:"config"`
	Layers        []ociDescriptor `json:"layers"`
}

type ociConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		Cmd []string `json:"Cmd"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// entry is a file or directory of the layer.
type entry struct {
	typ  byte
	mode int64
	data []byte
}

// blob reads the blob d names and checks its size and digest.
func blob(t *testing.T, dir string, d ociDescriptor) []byte {
	t.Helper()
	hexDigest, ok := strings.CutPrefix(d.Digest, "sha256:")
	if !ok {
		t.Fatalf("digest %q is not sha256", d.Digest)
	}
	data, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", hexDigest))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != hexDigest || int64(len(data)) != d.Size {
		t.Fatalf("blob %s: %d bytes with digest %x, descriptor says %d bytes", d.Digest, len(data), sum, d.Size)
	}
	return data
}

func decodeJSON(t *testing.T, data []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		t.Fatal(err)
	}
}

// readLayout follows an OCI layout from index.json to its one layer,
// checking every digest, and returns the config and the layer's entries.
func readLayout(t *testing.T, dir, name string) (ociConfig, map[string]entry, []string) {
	t.Helper()
	var layout map[string]string
	decodeJSON(t, mustRead(t, filepath.Join(dir, "oci-layout")), &layout)
	if layout["imageLayoutVersion"] != "1.0.0" {
		t.Fatalf("oci-layout: %v", layout)
	}
	var idx ociIndex
	decodeJSON(t, mustRead(t, filepath.Join(dir, "index.json")), &idx)
	if idx.SchemaVersion != 2 || len(idx.Manifests) != 1 {
		t.Fatalf("index.json: %+v", idx)
	}
	md := idx.Manifests[0]
	if md.MediaType != "application/vnd.oci.image.manifest.v1+json" || md.Annotations["org.opencontainers.image.ref.name"] != name {
		t.Fatalf("index.json's manifest: %+v", md)
	}
	var man ociManifest
	decodeJSON(t, blob(t, dir, md), &man)
	if man.SchemaVersion != 2 || man.Config.MediaType != "application/vnd.oci.image.config.v1+json" || len(man.Layers) != 1 ||
		man.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Fatalf("manifest: %+v", man)
	}
	var cfg ociConfig
	decodeJSON(t, blob(t, dir, man.Config), &cfg)
	zr, err := gzip.NewReader(bytes.NewReader(blob(t, dir, man.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	layerTar, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(layerTar)
	if cfg.RootFS.Type != "layers" || !slices.Equal(cfg.RootFS.DiffIDs, []string{"sha256:" + hex.EncodeToString(sum[:])}) {
		t.Fatalf("config's rootfs %+v, layer's diff ID sha256:%x", cfg.RootFS, sum)
	}
	entries, order := readTar(t, layerTar)
	return cfg, entries, order
}

func readTar(t *testing.T, data []byte) (map[string]entry, []string) {
	t.Helper()
	out := map[string]entry{}
	var order []string
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, order
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = entry{typ: h.Typeflag, mode: h.Mode, data: body}
		order = append(order, h.Name)
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestImage(t *testing.T) {
	bin, lib := buildPrograms(t), standInLibs(t)
	out := filepath.Join(t.TempDir(), "rnic-image")
	const name = "localhost/rnic:test"
	var stderr bytes.Buffer
	if st := run([]string{"-bin", bin, "-lib", lib, "-name", name, "-o", out}, &stderr); st != 0 {
		t.Fatalf("mkimage exited %d: %s", st, stderr.String())
	}
	cfg, entries, order := readLayout(t, out, name)
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH || !slices.Equal(cfg.Config.Cmd, []string{"/usr/local/bin/rnicd"}) {
		t.Errorf("config: %+v", cfg)
	}
	for path, src := range map[string]string{
		"usr/local/bin/rnic":                 filepath.Join(bin, "rnic"),
		"usr/local/bin/rnicd":                filepath.Join(bin, "rnicd"),
		"usr/local/lib/rnic/libibverbs.so.1": filepath.Join(lib, "libibverbs.so.1"),
		"usr/local/lib/rnic/librdmacm.so.1":  filepath.Join(lib, "librdmacm.so.1"),
	} {
		e, ok := entries[path]
		if !ok || e.typ != tar.TypeReg || e.mode != 0o755 || !bytes.Equal(e.data, mustRead(t, src)) {
			t.Errorf("layer's %s: present %v, type %c, mode %o, not the same bytes as %s", path, ok, e.typ, e.mode, src)
		}
	}
	if e := entries["tmp/"]; e.typ != tar.TypeDir || e.mode != 0o1777 {
		t.Errorf("layer's tmp/: type %c mode %o, want a directory 1777", e.typ, e.mode)
	}
	// Every directory comes before what it holds.
	for i, p := range order {
		if parent := filepath.Dir(strings.TrimSuffix(p, "/")); parent != "." && !slices.Contains(order[:i], parent+"/") {
			t.Errorf("layer's %s comes before its directory %s/", p, parent)
		}
	}
	// The programs in the layer run.
	x := filepath.Join(t.TempDir(), "rnic")
	if err := os.WriteFile(x, entries["usr/local/bin/rnic"].data, 0o755); err != nil {
		t.Fatal(err)
	}
	if v, err := exec.Command(x, "--version").Output(); err != nil || !strings.HasPrefix(string(v), "rnic ") {
		t.Errorf("the layer's rnic --version: %q, %v", v, err)
	}

	checkArchive(t, out)
	// The same inputs make the same bytes.
	again := filepath.Join(t.TempDir(), "rnic-image")
	if st := run([]string{"-bin", bin, "-lib", lib, "-name", name, "-o", again}, io.Discard); st != 0 {
		t.Fatalf("mkimage exited %d the second time", st)
	}
	if !bytes.Equal(mustRead(t, out+".tar"), mustRead(t, again+".tar")) {
		t.Error("two runs on the same inputs made different archives")
	}
	t.Run("podman", func(t *testing.T) { checkPodman(t, out+".tar", name) })
}

// checkArchive checks OUT.tar holds the layout's files, the same bytes.
func checkArchive(t *testing.T, out string) {
	t.Helper()
	entries, _ := readTar(t, mustRead(t, out+".tar"))
	n := 0
	err := filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		if e, ok := entries[rel]; !ok || !bytes.Equal(e.data, mustRead(t, p)) {
			t.Errorf("%s.tar: %s missing or different", out, rel)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 { // oci-layout, index.json, manifest, config, layer
		t.Errorf("the layout has %d files, want 5", n)
	}
}

// checkPodman loads the archive into a podman storage of the test's own
// and runs rnic --version in a container of it, where podman and runc are
// installed and this is root.
func checkPodman(t *testing.T, archive, name string) {
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("podman not installed: the archive is not loaded")
	}
	if os.Getuid() != 0 {
		t.Skip("not root: podman's storage of the test's own needs root")
	}
	dir := t.TempDir()
	base := []string{"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"), "--storage-driver", "vfs"}
	pod := func(args ...string) *exec.Cmd { return exec.Command(podman, append(slices.Clone(base), args...)...) }
	if out, err := pod("load", "-i", archive).CombinedOutput(); err != nil || !strings.Contains(string(out), "Loaded image: "+name) {
		t.Fatalf("podman load: %v\n%s", err, out)
	}
	defer pod("rmi", "-a", "-f").Run() // the storage's files go with dir
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skip("runc not installed: the image is loaded but not run")
	}
	// runc, with limits a container may set in this machine's sandbox.
	out, err := pod("--runtime", "runc", "run", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024",
		"--ulimit", "nproc=1024:1024", name, "/usr/local/bin/rnic", "--version").CombinedOutput()
	switch {
	case err != nil && strings.Contains(string(out), "OCI"):
		t.Skipf("the image is loaded but this machine's runtime starts no container: %s", out)
	case err != nil || !strings.HasPrefix(string(out), "rnic "):
		t.Errorf("rnic --version in the container: %v\n%s", err, out)
	}
}
