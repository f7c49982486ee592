package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserStarts is how many times startBrowser starts a browser that exits before it answers.
const browserStarts = 3

// startBrowser starts the headless browser at path (NoSandbox, headless "new", plus opts) and
// returns a context on its first tab, ending after timeout; cancel closes the browser. Debian's
// chromium now and then exits at start on a busy machine ("chrome failed to start", seen once in
// a make test run): such a start is retried, up to browserStarts times. logf, when not nil,
// receives chromedp's error messages.
func startBrowser(t *testing.T, path string, timeout time.Duration, logf func(string, ...any), opts ...chromedp.ExecAllocatorOption) (ctx context.Context, cancel context.CancelFunc) {
	t.Helper()
	all := append(append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Flag("headless", "new")), opts...)
	for attempt := 1; ; attempt++ {
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), all...)
		var ctxOpts []chromedp.ContextOption
		if logf != nil {
			ctxOpts = append(ctxOpts, chromedp.WithErrorf(logf))
		}
		tabCtx, cancelTab := chromedp.NewContext(allocCtx, ctxOpts...)
		ctx, cancelTimeout := context.WithTimeout(tabCtx, timeout)
		cancel = func() { cancelTimeout(); cancelTab(); cancelAlloc() }
		err := chromedp.Run(ctx) // starts the browser on ctx, not on a step's context
		if err == nil {
			return ctx, cancel
		}
		cancel()
		if attempt == browserStarts || !strings.Contains(err.Error(), "failed to start") {
			t.Fatalf("starting chromium (attempt %d): %v", attempt, err)
		}
		t.Logf("chromium exited at start (attempt %d), starting it again: %v", attempt, err)
	}
}
