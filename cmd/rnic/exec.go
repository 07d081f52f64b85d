// rnic exec: runs an unmodified libibverbs program on rnic, through the
// drop-in libibverbs.so.1 (nic/rnicd/dropin) that speaks to rnicd.

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/nic/ibv"
)

const execHelp = `usage: rnic exec [-S SOCKET] [--no-view] [--] PROGRAM [ARGS...]

Runs PROGRAM, a program linked against libibverbs (ibv_devinfo,
ibv_rc_pingpong, perftest's ib_write_bw, UCX, MPI, ...), on the NICs of the
rnicd listening on SOCKET, with no change to the program: it puts the
directory of rnic's drop-in libibverbs.so.1 first on LD_LIBRARY_PATH, sets
` + ibv.SocketEnv + ` and replaces itself with PROGRAM, so PROGRAM's signals and
exit status are its own. The same by hand:

    LD_LIBRARY_PATH=lib ` + ibv.SocketEnv + `=/path/to/rnicd.sock ibv_devinfo

The library is looked for in $RNIC_LIBDIR, else in ../lib/rnic beside the
rnic binary (make install puts it there), else in ../lib (make build puts
it there; it needs gcc and libibverbs-dev).
SOCKET defaults to rnicd's own default:

    ` + ibv.SocketRule + `

PROGRAM runs in a view of the system where the NICs exist as they would
with a kernel driver (UCX, libfabric, Open MPI and pyverbs look there):
/dev/infiniband/uverbsN and rdma_cm, /sys/class/infiniband/NAME/ and
/sys/class/infiniband_verbs/, and a network interface (not lo, up) named
after each NIC carrying its addresses. It is a set of namespaces (a user
namespace mapping your own uid, a mount namespace, and a network
namespace when the NICs' addresses are on no interface of the host but
lo), shared by every rnic exec of this user on this rnicd and kept while
the rnicd lives; nothing outside it changes. --no-view, or ` + noViewEnv + `=1,
runs PROGRAM without it; where the kernel refuses user namespaces rnic
exec says so in one line and runs PROGRAM without it.

Exits 2 on bad usage, 1 when the library is not built, 127 when PROGRAM is
not found, 126 when it cannot be run; otherwise PROGRAM's status.

flags:
`

// libDirEnv overrides where rnic exec finds the drop-in library.
const libDirEnv = "RNIC_LIBDIR"

// noViewEnv, set non-empty, is --no-view.
const noViewEnv = "RNIC_NO_VIEW"

// dropinLib is the file name (and soname) of the drop-in library.
const dropinLib = "libibverbs.so.1"

func runExec(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("rnic exec", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(false) // everything from PROGRAM on is PROGRAM's
	socket := fs.StringP("socket", "S", "", "the rnicd's control socket (default: rnicd's default, above)")
	noView := fs.Bool("no-view", os.Getenv(noViewEnv) != "", "run PROGRAM without the view of the devices (also "+noViewEnv+"=1)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, execHelp)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "rnic exec: %v (rnic help exec)\n", err)
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "rnic exec: no program to run (rnic help exec)")
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "rnic exec: %v\n", err)
		return 1
	}
	plan, err := planExec(fs.Args(), *socket, self)
	if err != nil {
		fmt.Fprintf(stderr, "rnic exec: %v\n", err)
		return exitStatusOf(err)
	}
	if !*noView {
		plan = inView(plan, self, stderr)
	}
	err = syscall.Exec(plan.path, plan.argv, plan.env)
	// Only a failed exec returns.
	fmt.Fprintf(stderr, "rnic exec: %s: %v\n", plan.path, err)
	return 126
}

// execPlan is what rnic exec will exec.
type execPlan struct {
	path   string
	argv   []string
	env    []string
	socket string // absolute
}

// Errors of planExec, told apart for the exit status.
var (
	errNoLibrary  = errors.New("the drop-in libibverbs is not built")
	errNotFound   = errors.New("program not found")
	errCannotExec = errors.New("program cannot be run")
)

func exitStatusOf(err error) int {
	switch {
	case errors.Is(err, errNotFound):
		return 127
	case errors.Is(err, errCannotExec):
		return 126
	}
	return 1
}

// planExec finds the library and the program and builds the program's
// environment from this process's: the library's directory first on
// LD_LIBRARY_PATH, RNIC_SOCKET the given socket or the default rule's.
func planExec(args []string, socket string, self string) (*execPlan, error) {
	libDir, err := findLibDir(os.Getenv(libDirEnv), self)
	if err != nil {
		return nil, err
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", args[0], errNotFound)
		}
		return nil, fmt.Errorf("%s: %w: %w", args[0], errCannotExec, err)
	}
	if socket == "" {
		socket = ibv.DefaultSocketPath()
	}
	if abs, err := filepath.Abs(socket); err == nil {
		socket = abs // the program may change directory
	}
	ldPath := libDir
	if old := os.Getenv("LD_LIBRARY_PATH"); old != "" {
		ldPath += ":" + old
	}
	env := setEnv(os.Environ(), "LD_LIBRARY_PATH", ldPath)
	env = setEnv(env, ibv.SocketEnv, socket)
	return &execPlan{path: path, argv: args, env: env, socket: socket}, nil
}

// findLibDir returns the directory holding the drop-in library: override
// if set, else the first of libDirsBeside(self) that holds it.
func findLibDir(override, self string) (string, error) {
	if override != "" {
		dir, err := filepath.Abs(override)
		if err != nil {
			return "", err
		}
		if !hasLibrary(dir) {
			return "", fmt.Errorf("%w: no %s in %s: check $%s", errNoLibrary, dropinLib, dir, libDirEnv)
		}
		return dir, nil
	}
	dirs := libDirsBeside(self)
	for _, dir := range dirs {
		if hasLibrary(dir) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%w: no %s in %s: make build (needs gcc and libibverbs-dev: apt-get install gcc libibverbs-dev)",
		errNoLibrary, dropinLib, strings.Join(dirs, " or "))
}

// libDirsBeside are where the library is beside the rnic binary self
// (symlinks resolved, so a link to bin/rnic in ~/bin still finds it), in
// the order looked in: ../lib/rnic, where make install puts it in a
// directory of its own, first, since an installed rnic's ../lib is a
// system directory (/usr/local/lib) that may hold the real libibverbs;
// then ../lib, where make build puts it.
func libDirsBeside(self string) []string {
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	if abs, err := filepath.Abs(self); err == nil {
		self = abs
	}
	lib := filepath.Join(filepath.Dir(filepath.Dir(self)), "lib")
	return []string{filepath.Join(lib, "rnic"), lib}
}

// hasLibrary says whether dir holds the drop-in library.
func hasLibrary(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, dropinLib))
	return err == nil
}

// setEnv returns env with key set to value, every older entry removed.
func setEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, e := range env {
		if !strings.HasPrefix(e, key+"=") {
			out = append(out, e)
		}
	}
	return append(out, key+"="+value)
}
