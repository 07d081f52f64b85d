// Package k8smanifest reads the Kubernetes manifests in the repository
// (cmd/rnic/k8s) as the API server would, into the real API types, so
// that tests can check what they run: every field known (a misspelt one
// fails), every container's image, command and arguments as the kubelet
// would start them.
package k8smanifest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Object is one document of a manifest.
type Object struct {
	File, Kind, Name string
	// Pod is the pod spec of a Pod or a DaemonSet's template.
	Pod *corev1.PodSpec
}

// Container is a container of an Object as the kubelet starts it.
type Container struct {
	Object *Object
	corev1.Container
	// Argv is the command and arguments, $(VAR) expanded.
	Argv []string
}

// kinds are the kinds the manifests may hold, each decoded into its type.
var kinds = map[string]func() any{
	"Namespace":      func() any { return new(corev1.Namespace) },
	"ServiceAccount": func() any { return new(corev1.ServiceAccount) },
	"Service":        func() any { return new(corev1.Service) },
	"Pod":            func() any { return new(corev1.Pod) },
	"DaemonSet":      func() any { return new(appsv1.DaemonSet) },
}

// Read decodes every *.yaml of dir, strictly.
func Read(dir string) ([]*Object, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no manifest in %s", dir)
	}
	var out []*Object
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for i, doc := range splitDocuments(data) {
			o, err := decode(doc)
			if err != nil {
				return nil, fmt.Errorf("%s, document %d: %w", f, i+1, err)
			}
			o.File = filepath.Base(f)
			out = append(out, o)
		}
	}
	return out, nil
}

var separator = regexp.MustCompile(`(?m)^---\s*$`)

// splitDocuments splits a YAML stream at its --- lines, leaving out
// documents that hold only comments.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	for _, d := range separator.Split(string(data), -1) {
		for _, line := range strings.Split(d, "\n") {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				docs = append(docs, []byte(d))
				break
			}
		}
	}
	return docs
}

func decode(doc []byte) (*Object, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, err
	}
	newObj, ok := kinds[head.Kind]
	if !ok {
		return nil, fmt.Errorf("kind %q: not one the manifests may hold", head.Kind)
	}
	v := newObj()
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(doc), v); err != nil {
		return nil, fmt.Errorf("%s: %w", head.Kind, err)
	}
	o := &Object{Kind: head.Kind}
	switch x := v.(type) {
	case *corev1.Namespace:
		o.Name = x.Name
	case *corev1.ServiceAccount:
		o.Name = x.Name
	case *corev1.Service:
		o.Name = x.Name
	case *corev1.Pod:
		o.Name, o.Pod = x.Name, &x.Spec
	case *appsv1.DaemonSet:
		o.Name, o.Pod = x.Name, &x.Spec.Template.Spec
	}
	if o.Name == "" {
		return nil, fmt.Errorf("%s without a name", head.Kind)
	}
	wantVersion := map[string]string{"DaemonSet": "apps/v1"}[head.Kind]
	if wantVersion == "" {
		wantVersion = "v1"
	}
	if head.APIVersion != wantVersion {
		return nil, fmt.Errorf("%s %s: apiVersion %q, want %q", head.Kind, o.Name, head.APIVersion, wantVersion)
	}
	return o, nil
}

// Containers returns the containers of every object with a pod spec.
// fieldValues stand in for the downward API's fields (by fieldPath) in
// the expansion of $(VAR).
func Containers(objs []*Object, fieldValues map[string]string) ([]Container, error) {
	var out []Container
	for _, o := range objs {
		if o.Pod == nil {
			continue
		}
		for _, c := range append(append([]corev1.Container{}, o.Pod.InitContainers...), o.Pod.Containers...) {
			env := map[string]string{}
			for _, e := range c.Env {
				switch {
				case e.ValueFrom == nil:
					env[e.Name] = e.Value
				case e.ValueFrom.FieldRef != nil:
					v, ok := fieldValues[e.ValueFrom.FieldRef.FieldPath]
					if !ok {
						return nil, fmt.Errorf("%s %s: container %s: no value for field %s", o.Kind, o.Name, c.Name, e.ValueFrom.FieldRef.FieldPath)
					}
					env[e.Name] = v
				}
			}
			var argv []string
			for _, a := range append(append([]string{}, c.Command...), c.Args...) {
				argv = append(argv, Expand(a, env))
			}
			out = append(out, Container{Object: o, Container: c, Argv: argv})
		}
	}
	return out, nil
}

var reference = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// Expand replaces $(VAR) by env's value as the kubelet does: $$ is a
// literal $, an undefined reference is left as it is.
func Expand(s string, env map[string]string) string {
	return reference.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// MountFor returns the host path that path inside the container comes
// from (through a hostPath volume), or "" if none does.
func (c Container) MountFor(path string) string {
	for _, m := range c.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		for _, v := range c.Object.Pod.Volumes {
			if v.Name == m.Name && v.HostPath != nil {
				return filepath.Join(v.HostPath.Path, rel)
			}
		}
	}
	return ""
}
