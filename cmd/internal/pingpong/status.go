// Completion errors as rc_pingpong reports them, with libibverbs'
// ibv_wc_status_str wording, so a failure reads the same as with the real
// tool.

package pingpong

import (
	"fmt"

	"github.com/rnic/rnic/nic/verbs"
)

// wcStatusText is ibv_wc_status_str's text for each status, indexed by the
// status value.
var wcStatusText = [...]string{
	verbs.WCSuccess:        "success",
	verbs.WCLocLenErr:      "local length error",
	verbs.WCLocQPOpErr:     "local QP operation error",
	verbs.WCLocEECOpErr:    "local EE context operation error",
	verbs.WCLocProtErr:     "local protection error",
	verbs.WCWRFlushErr:     "Work Request Flushed Error",
	verbs.WCMWBindErr:      "memory management operation error",
	verbs.WCBadRespErr:     "bad response error",
	verbs.WCLocAccessErr:   "local access error",
	verbs.WCRemInvReqErr:   "remote invalid request error",
	verbs.WCRemAccessErr:   "remote access error",
	verbs.WCRemOpErr:       "remote operation error",
	verbs.WCRetryExcErr:    "transport retry counter exceeded",
	verbs.WCRNRRetryExcErr: "RNR retry counter exceeded",
	verbs.WCLocRDDViolErr:  "local RDD violation error",
	verbs.WCRemInvRDReqErr: "remote invalid RD request",
	verbs.WCRemAbortErr:    "aborted error",
	verbs.WCInvEECNErr:     "invalid EE context number",
	verbs.WCInvEECStateErr: "invalid EE context state",
	verbs.WCFatalErr:       "fatal error",
	verbs.WCRespTimeoutErr: "response timeout error",
	verbs.WCGeneralErr:     "general error",
}

// StatusText returns ibv_wc_status_str(s).
func StatusText(s verbs.WCStatus) string {
	if int(s) < len(wcStatusText) {
		return wcStatusText[s]
	}
	return "unknown"
}

// CompletionError is a completion with an error status, which ends a run
// as it ends rc_pingpong.
type CompletionError struct {
	Status verbs.WCStatus
	WRID   uint64
}

// Error reads like rc_pingpong's message: "Failed status %s (%d) for wr_id %d".
func (e *CompletionError) Error() string {
	return fmt.Sprintf("Failed status %s (%d) for wr_id %d", StatusText(e.Status), e.Status, int(e.WRID))
}
