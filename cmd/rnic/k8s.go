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

	"github.com/rnic/rnic/cmd/internal/cdispec"
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
	cdiSpec, cdiHook        string
	installLibs, cdi        bool
	tenantSockets           bool
	direct                  bool
	poll, watch             time.Duration
}

func (f *k8sFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.socket, "socket", ibv.DefaultSocketPath(), "the rnicd whose NICs to offer")
	fs.StringVar(&f.kubelet, "kubelet-socket", api.KubeletSocket, "the kubelet's Registration socket; the plugin's own goes beside it")
	fs.StringVar(&f.libDir, "lib-dir", "", "the node's directory of the drop-in libraries that containers mount (default: the one beside rnic)")
	fs.BoolVar(&f.installLibs, "install-libs", false, "copy the drop-in libraries beside rnic into --lib-dir first")
	fs.BoolVar(&f.cdi, "cdi", true, "answer Allocate with CDI device names")
	fs.StringVar(&f.cdiSpec, "cdi-spec", "", "write the node's CDI spec of the daemon's NICs here (e.g. /var/run/cdi/rnic.yaml), again when they change")
	fs.StringVar(&f.cdiHook, "cdi-hook", "", "the node's path of an rnic binary the spec runs as its sysfs hook (--install-libs copies this rnic there); empty: no hook")
	fs.BoolVar(&f.tenantSockets, "tenant-sockets", false, "the daemon runs with --tenant-per-nic: a container gets its NIC's own socket (DIR/tenants/NAME/rnicd.sock beside --socket) and no other, one NIC per container")
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
	case f.cdiHook != "" && (f.cdiSpec == "" || !filepath.IsAbs(f.cdiHook)):
		return usageErr(errors.New("--cdi-hook needs --cdi-spec and an absolute path"))
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
		if err := installLibs(from, f.libDir); err != nil {
			return err
		}
		if f.cdiHook != "" {
			return installFile(exe, f.cdiHook)
		}
		return nil
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
		Inventory:     f.inventory(logger.Printf),
		Provider:      nodeDevices{socket: f.socket, libDir: f.libDir, tenants: f.tenantSockets},
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

// inventory is rnicd's, keeping the node's CDI spec if --cdi-spec asks.
func (f *k8sFlags) inventory(logf func(string, ...any)) deviceplugin.Inventory {
	inv := rnicdInventory(f.socket, f.tenantSockets)
	if f.cdiSpec == "" {
		return inv
	}
	opts := cdispec.Options{Socket: f.socket, LibDir: f.libDir}
	if f.cdiHook != "" {
		opts.Hook = cdispec.HookCommand(f.cdiHook, f.socket)
	}
	k := &specKeeper{path: f.cdiSpec, opts: opts, logf: logf}
	if f.tenantSockets {
		k.socketOf = func(nic string) string { return tenantSocket(f.socket, nic) }
	}
	return k.wrap(inv)
}

// rnicdInventory lists the NICs of the rnicd on socket (with all, every
// tenant's, as root sees them there): a NIC is healthy while its port is
// ACTIVE.
func rnicdInventory(socket string, all bool) deviceplugin.Inventory {
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
		devices := r.st.Devices
		if all {
			devices = r.st.AllDevices
		}
		out := make([]deviceplugin.NIC, len(devices))
		for i, d := range devices {
			out[i] = deviceplugin.NIC{Name: d.Name, Healthy: d.State == verbs.PortActive}
		}
		return out, nil
	}
}

// installLibs copies the drop-in libraries from one directory to
// another, each through a temporary file renamed into place: a container
// running with the old file mapped keeps it.
func installLibs(from, to string) error {
	for _, name := range []string{dropinLib, "librdmacm.so.1"} {
		err := installFile(filepath.Join(from, name), filepath.Join(to, name))
		if errors.Is(err, os.ErrNotExist) && name != dropinLib {
			continue // built without librdmacm-dev
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// installFile copies from to to (executable), replacing it in one rename
// so a container starting meanwhile sees the old file or the new one.
func installFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(to), "."+filepath.Base(to)+".tmp")
	if err := os.WriteFile(tmp, data, 0o755); err != nil {
		return err
	}
	if err := os.Rename(tmp, to); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
