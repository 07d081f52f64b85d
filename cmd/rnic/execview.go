// rnic exec's view (nic/view): the program runs in the namespaces of the
// view of its rnicd, entered with nsenter; when there can be no view it
// runs as before, after one line saying why.

package main

import (
	"fmt"
	"io"
	"os"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/view"
)

// inView returns plan changed to run its program in the view of its
// rnicd, or plan itself when there is no view to be had.
func inView(plan *execPlan, self string, stderr io.Writer) *execPlan {
	h, err := view.Ensure(plan.socket, []string{self, view.HolderCommand})
	var argv []string
	if err == nil {
		var wd string
		if wd, err = os.Getwd(); err == nil {
			argv, err = view.JoinArgv(h, wd, plan.argv)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "rnic exec: running without the device view: %v\n", err)
		return plan
	}
	env := setEnv(plan.env, ibv.ViewEnv, "1")
	if os.Getuid() != 0 {
		env = setEnv(env, ibv.PinnedEnv, plan.socket) // the holder pinned it (view/pin.go)
	}
	if len(argv) == len(plan.argv) {
		argv = plan.argv // already inside the view
		return &execPlan{path: plan.path, argv: argv, env: env, socket: plan.socket}
	}
	return &execPlan{path: argv[0], argv: argv, env: env, socket: plan.socket}
}
