package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The media types of the OCI image specification (image-spec v1.1).
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
	// refNameKey tags a manifest in an index: skopeo and podman read it;
	// containerdNameKey is what ctr images import names the image by.
	refNameKey        = "org.opencontainers.image.ref.name"
	containerdNameKey = "io.containerd.image.name"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type runConfig struct {
	Env []string `json:"Env,omitempty"`
	Cmd []string `json:"Cmd,omitempty"`
}

type imageConfig struct {
	Created      string    `json:"created"`
	Architecture string    `json:"architecture"`
	OS           string    `json:"os"`
	Config       runConfig `json:"config"`
	RootFS       struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// image is what to write.
type image struct {
	name, arch string
	created    time.Time
	files      []file
	config     runConfig
}

// write makes the OCI layout dir: oci-layout, index.json, blobs/sha256/.
func (img image) write(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		return err
	}
	layerTar, err := img.layer()
	if err != nil {
		return err
	}
	layerGz, err := gzipped(layerTar)
	if err != nil {
		return err
	}
	layer, err := putBlob(dir, mediaLayer, layerGz)
	if err != nil {
		return err
	}
	cfg := imageConfig{Created: img.created.Format(time.RFC3339), Architecture: img.arch, OS: "linux", Config: img.config}
	cfg.RootFS.Type = "layers"
	cfg.RootFS.DiffIDs = []string{digestOf(layerTar)}
	config, err := putJSON(dir, mediaConfig, cfg)
	if err != nil {
		return err
	}
	man, err := putJSON(dir, mediaManifest, manifest{SchemaVersion: 2, MediaType: mediaManifest, Config: config, Layers: []descriptor{layer}})
	if err != nil {
		return err
	}
	man.Annotations = map[string]string{refNameKey: img.name, containerdNameKey: img.name}
	if err := writeJSON(filepath.Join(dir, "index.json"), index{SchemaVersion: 2, MediaType: mediaIndex, Manifests: []descriptor{man}}); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, "oci-layout"), map[string]string{"imageLayoutVersion": "1.0.0"})
}

// layer is the uncompressed tar of the files, with every directory above
// them, in path order.
func (img image) layer() ([]byte, error) {
	dirs := map[string]bool{}
	for _, f := range img.files {
		for d := path.Dir(f.path); d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	// /tmp, as a program expects one (mode 1777).
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	header := func(name string, typ byte, mode, size int64) *tar.Header {
		return &tar.Header{Name: name, Typeflag: typ, Mode: mode, Size: size, ModTime: img.created, Format: tar.FormatPAX}
	}
	entries := []string{"tmp/"}
	for d := range dirs {
		entries = append(entries, d[1:]+"/")
	}
	slices.Sort(entries)
	for _, e := range entries {
		mode := int64(0o755)
		if e == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(header(e, tar.TypeDir, mode, 0)); err != nil {
			return nil, err
		}
	}
	files := slices.Clone(img.files)
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.path, b.path) })
	for _, f := range files {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(header(f.path[1:], tar.TypeReg, f.mode, int64(len(data)))); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gzipped compresses data with no name and no time in the header, so the
// same layer gives the same digest.
func gzipped(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// putBlob stores data under its digest and returns its descriptor.
func putBlob(dir, mediaType string, data []byte) (descriptor, error) {
	d := descriptor{MediaType: mediaType, Digest: digestOf(data), Size: int64(len(data))}
	name := filepath.Join(dir, "blobs", "sha256", d.Digest[len("sha256:"):])
	if err := os.WriteFile(name, data, 0o644); err != nil {
		return descriptor{}, fmt.Errorf("blob: %w", err)
	}
	return d, nil
}

func putJSON(dir, mediaType string, v any) (descriptor, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return descriptor{}, err
	}
	return putBlob(dir, mediaType, data)
}

func writeJSON(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(name, data, 0o644)
}
