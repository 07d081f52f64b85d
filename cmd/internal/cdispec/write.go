// Checking and writing a spec: the CDI module's own reading of a spec file
// (version, names, every edit) is the check, so what is written is what a
// runtime will accept.

package cdispec

import (
	"fmt"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// Marshal returns the spec as YAML.
func Marshal(s *specs.Spec) ([]byte, error) {
	b, err := yaml.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("cdispec: %w", err)
	}
	return b, nil
}

// Validate checks s as a runtime reading it from a spec directory would.
func Validate(s *specs.Spec) error {
	b, err := Marshal(s)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "rnic-cdi-")
	if err != nil {
		return fmt.Errorf("cdispec: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "rnic.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("cdispec: %w", err)
	}
	if _, err := cdi.ReadSpec(path, 0); err != nil {
		return fmt.Errorf("cdispec: invalid spec: %w", err)
	}
	return nil
}

// Write writes s to path (world-readable, as runtimes of any user read
// spec directories), through a temporary file renamed into place so that
// a runtime watching the directory never reads half a spec.
func Write(s *specs.Spec, path string) error {
	b, err := Marshal(s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("cdispec: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".rnic-cdi-*")
	if err != nil {
		return fmt.Errorf("cdispec: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("cdispec: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("cdispec: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cdispec: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cdispec: %w", err)
	}
	return nil
}
