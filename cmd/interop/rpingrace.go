// The guests' rping (rdma-core 44, Debian 12) has a race of its own at
// exit: as a server, once its cm_thread has handled DISCONNECTED it reads
// the event channel again, and main may have destroyed the channel by
// then; the read fails with EBADF and the thread exits the process with
// 255 ("rdma_get_cm_event: Bad file descriptor") after a complete run.
// Later rdma-core stops the thread with an eventfd before tearing down.
// It shows under TCG when the guest is slow, whoever the client is; the
// rows report it as a note on a pass, never silently.

package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// rpingExitRace is what the guest's rping says when it loses the race.
const rpingExitRace = "rdma_get_cm_event: Bad file descriptor"

// rpingCount matches rping's -C count.
var rpingCount = regexp.MustCompile(`(?:^|\s)-C\s+(\d+)`)

// guestRpingExitRace reports whether a guest rping server that exited
// 255 lost that race and did nothing else wrong: every ping of its -C
// count done, the client's disconnect seen, and no line but those of a
// good run and the race's.
func guestRpingExitRace(cmd string, rc int, out string) bool {
	m := rpingCount.FindStringSubmatch(cmd)
	if rc != 255 || !strings.HasPrefix(cmd, "rping -s") || m == nil {
		return false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 1 {
		return false
	}
	last := fmt.Sprintf("server ping data: rdma-ping-%d: ", n-1)
	var sawLast, sawRace, sawDisconnect bool
	for _, l := range strings.Split(out, "\n") {
		switch {
		case l == "" || strings.HasPrefix(l, "server ping data: rdma-ping-"):
			sawLast = sawLast || strings.HasPrefix(l, last)
		case l == "server DISCONNECT EVENT...":
			sawDisconnect = true
		case l == "wait for RDMA_READ_ADV state 10": // DISCONNECTED: the loop's end
		case l == rpingExitRace:
			sawRace = true
		default:
			return false
		}
	}
	return sawLast && sawRace && sawDisconnect
}
