// rnic k8s device-plugin: the node's rnicd NICs as a Kubernetes extended
// resource, through the kubelet's device-plugin API.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/rnic/rnic/cmd/internal/deviceplugin"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/verbs"
)

const k8sHelp = `usage: rnic k8s device-plugin [flags]

A kubelet device plugin (API v1beta1) for the NICs of the node's rnicd:
registers the resource ` + cdiKind + ` with the kubelet, lists the daemon's
NICs (healthy while the daemon answers and the NIC's port is ACTIVE, all
unhealthy while it does not) and, for a container given some of them,
answers with their CDI device names (` + cdiKind + `=rnic0, ...) and, for a
kubelet or runtime without CDI, the same directly: the socket's directory
mounted at ` + containerSocketDir + `, the drop-in libraries read-only at
` + containerLibDir + `, LD_LIBRARY_PATH and ` + ibv.SocketEnv + ` set. A pod asks
for them with resources.limits: {` + cdiKind + `: 1}.

It registers again whenever the kubelet restarts, and runs until SIGINT
or SIGTERM (exit 0). The paths given are the node's: run it on the node,
or in a container that mounts them at the same paths (the DaemonSet in
cmd/rnic/k8s does). --install-libs copies the drop-in libraries found
beside this rnic (as rnic exec finds them) into --lib-dir first, so that
the image that carries rnic also delivers them to the node.

flags:
`

// k8sEndpoint is the plugin's socket in the kubelet's directory.
const k8sEndpoint = "rnic.dev-nic.sock"

// k8sFlags are rnic k8s device-plugin's settings.
type k8sFlags struct {
	socket, kubelet, libDir string
	installLibs, cdi        bool
	direct                  bool
	poll, watch             time.Duration
}

func (f *k8sFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.socket, "socket", ibv.DefaultSocketPath(), "the rnicd whose NICs to offer")
	fs.StringVar(&f.kubelet, "kubelet-socket", api.KubeletSocket, "the kubelet's Registration socket; the plugin's own goes beside it")
	fs.StringVar(&f.libDir, "lib-dir", "", "the node's directory of the drop-in libraries that containers mount (default: the one beside rnic)")
	fs.BoolVar(&f.installLibs, "install-libs", false, "copy the drop-in libraries beside rnic into --lib-dir first")
	fs.BoolVar(&f.cdi, "cdi", true, "answer Allocate with CDI device names")
	fs.BoolVar(&f.direct, "direct", true, "answer Allocate with the mounts and environment too (kubelets or runtimes without CDI)")
	fs.DurationVar(&f.poll, "poll", 2*time.Second, "how often to ask rnicd for its NICs and their ports")
	fs.DurationVar(&f.watch, "watch", time.Second, "how often to check the sockets for a kubelet restart")
}

func runK8s(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("rnic k8s", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f k8sFlags
	f.add(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), k8sHelp)
		fs.PrintDefaults()
	}
	usageErr := func(err error) int {
		fmt.Fprintf(stderr, "rnic %s (rnic help k8s)\n", withPrefix("k8s: ", err))
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		return usageErr(err)
	}
	switch {
	case fs.NArg() == 0:
		return usageErr(errors.New("missing subcommand: device-plugin"))
	case fs.Arg(0) != "device-plugin":
		return usageErr(fmt.Errorf("unknown subcommand %q: device-plugin", fs.Arg(0)))
	case fs.NArg() > 1:
		return usageErr(fmt.Errorf("unexpected argument %q", fs.Arg(1)))
	case f.poll <= 0 || f.watch <= 0:
		return usageErr(errors.New("--poll and --watch must be positive"))
	case !f.cdi && !f.direct:
		return usageErr(errors.New("--cdi=false and --direct=false leave Allocate nothing to say"))
	}
	if err := f.prepareLibs(); err != nil {
		fmt.Fprintf(stderr, "rnic k8s: %v\n", err)
		return 1
	}
	return f.run(stderr)
}

// prepareLibs settles --lib-dir, installing the libraries there if asked.
func (f *k8sFlags) prepareLibs() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if f.installLibs {
		if f.libDir == "" {
			return errors.New("--install-libs needs --lib-dir")
		}
		from, err := findLibDir(os.Getenv(libDirEnv), exe)
		if err != nil {
			return err
		}
		return installLibs(from, f.libDir)
	}
	if f.libDir == "" {
		f.libDir, err = findLibDir(os.Getenv(libDirEnv), exe)
		return err
	}
	if !hasLibrary(f.libDir) {
		return fmt.Errorf("--lib-dir %s: no %s there (--install-libs puts it there)", f.libDir, dropinLib)
	}
	return nil
}

func (f *k8sFlags) run(stderr io.Writer) int {
	ctx, stop := signalContext()
	defer stop()
	logger := log.New(stderr, "rnic k8s: ", log.LstdFlags)
	logger.Printf("device plugin for %s on %s, libraries %s", f.socket, f.kubelet, f.libDir)
	err := deviceplugin.Run(ctx, deviceplugin.Config{
		Resource:      cdiKind,
		KubeletSocket: f.kubelet,
		Endpoint:      k8sEndpoint,
		Inventory:     rnicdInventory(f.socket),
		Provider:      nodeDevices{socket: f.socket, libDir: f.libDir},
		CDI:           f.cdi,
		Direct:        f.direct,
		Poll:          f.poll,
		Watch:         f.watch,
		Logf:          logger.Printf,
	})
	if err != nil {
		logger.Print(err)
		return 1
	}
	if cause := context.Cause(ctx); cause != nil {
		logger.Printf("stopped: %v", cause)
	}
	return 0
}

// rnicdInventory lists the NICs of the rnicd on socket: a NIC is healthy
// while its port is ACTIVE.
func rnicdInventory(socket string) deviceplugin.Inventory {
	return func(ctx context.Context) ([]deviceplugin.NIC, error) {
		type result struct {
			st  *client.Stat
			err error
		}
		ch := make(chan result, 1)
		// QueryStat bounds itself; ctx only stops the wait for it.
		go func() {
			st, err := client.QueryStat(socket)
			ch <- result{st, err}
		}()
		var r result
		select {
		case r = <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if r.err != nil {
			return nil, r.err
		}
		out := make([]deviceplugin.NIC, len(r.st.Devices))
		for i, d := range r.st.Devices {
			out[i] = deviceplugin.NIC{Name: d.Name, Healthy: d.State == verbs.PortActive}
		}
		return out, nil
	}
}

// installLibs copies the drop-in libraries from one directory to
// another, each through a temporary file renamed into place: a container
// running with the old file mapped keeps it.
func installLibs(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, name := range []string{dropinLib, "librdmacm.so.1"} {
		data, err := os.ReadFile(filepath.Join(from, name))
		if errors.Is(err, os.ErrNotExist) && name != dropinLib {
			continue // built without librdmacm-dev
		}
		if err != nil {
			return err
		}
		tmp := filepath.Join(to, "."+name+".tmp")
		if err := os.WriteFile(tmp, data, 0o755); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(to, name)); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	return nil
}
