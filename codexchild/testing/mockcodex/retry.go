package mockcodex

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// retryRE: RETRY=<n> makes the model unreachable for n attempts: Codex's
// retry notices (mcp-server stream_error, app-server error with willRetry
// true), one every retryEvery, before the model answers as usual.
var retryRE = regexp.MustCompile(`RETRY=(\d+)`)

// retryEvery is the pause before each retry notice.
const retryEvery = 400 * time.Millisecond

// maxRetries caps RETRY=<n>.
const maxRetries = 50

// retryNotices sends the retry notices RETRY=<n> in text asks for; it
// returns errInterrupted when ctx ends meanwhile.
func (t *turnEnv) retryNotices(ctx context.Context) error {
	m := retryRE.FindStringSubmatch(t.text)
	if m == nil {
		return nil
	}
	n, _ := strconv.Atoi(m[1])
	n = min(n, maxRetries)
	for i := 1; i <= n; i++ {
		if err := sleepCtx(ctx, retryEvery); err != nil {
			return &errInterrupted{}
		}
		t.sink.retrying(fmt.Sprintf("Reconnecting... %d/%d (stream disconnected before completion: error sending request for url (http://127.0.0.1:9/v1/responses))", i, n))
	}
	return nil
}

// retrying is an mcp-server stream_error event (best guess at the shape:
// message, codex_error_info, additional_details).
func (k *mcpSink) retrying(message string) {
	k.ev(o("type", "stream_error", "message", message, "codex_error_info", "other", "additional_details", nil))
}

// retrying is an app-server error notification with willRetry true, as
// the recorded error notification with willRetry false is.
func (k *appSink) retrying(message string) {
	tid, uid := k.ids()
	k.s.notify("error", o("error", o("message", message, "codexErrorInfo", "other", "additionalDetails", nil, "misalignment", nil),
		"willRetry", true, "threadId", tid, "turnId", uid))
}
