package toolnexus

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Cancelling Execute's ctx (issue 17) while the tool is busy: the call comes
// back with the cancelled ToolResult long before the tool would have
// finished, what the tool started is ended, and the toolkit stays usable.

// promptly is far below every "would have finished" time used here (30 s
// commands, a 20 s MCP timeout, a 10 s HTTP answer): a cancelled call that
// takes longer ran its tool to the end.
const promptly = 8 * time.Second

func wantCancelled(t *testing.T, what string, r *ToolResult, err error, took time.Duration, want string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !r.IsError || r.Metadata["error"] != "cancelled" || !strings.Contains(r.Output, want) {
		t.Fatalf("%s: got %+v, want the cancelled result containing %q", what, r, want)
	}
	if took > promptly {
		t.Fatalf("%s: the cancelled call took %v: it ran its tool to the end", what, took)
	}
}

// cancelWhen cancels ctx once ready() holds (polled every 10 ms, at most 10 s).
func cancelWhen(cancel context.CancelFunc, ready func() bool) {
	go func() {
		for i := 0; i < 1000 && !ready(); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
}

// readPids reads the pid files the command writes; nil until all exist.
func readPids(dir string, names []string) []int {
	var pids []int
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			return nil
		}
		pids = append(pids, pid)
	}
	return pids
}

// running: a /proc entry whose state is not zombie or dead.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndex(s, ") ")
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

func wantGone(t *testing.T, what string, pids []int) {
	t.Helper()
	for _, pid := range pids {
		// A grandchild re-parented to init may take a moment to be reaped.
		for i := 0; i < 200 && running(pid); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		if running(pid) {
			t.Errorf("%s: process %d is still running", what, pid)
		}
	}
}

func TestExecuteCancelEndsBashAndEverythingItStarted(t *testing.T) {
	tk := mustBuild(t, `{}`)
	cases := []struct {
		name, command string
		pids          []string
	}{
		{"sleep 30", `echo $$ > %[1]s/sh; sleep 30 & echo $! > %[1]s/job; wait`, []string{"sh", "job"}},
		{"background job and grandchild",
			`echo $$ > %[1]s/sh; sleep 30 & echo $! > %[1]s/job; ( sleep 30 & echo $! > %[1]s/gc; wait ) & echo $! > %[1]s/sub; sleep 30`,
			[]string{"sh", "job", "sub", "gc"}},
	}
	for _, c := range cases {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		names := c.pids
		cancelWhen(cancel, func() bool { return readPids(dir, names) != nil })
		start := time.Now()
		r, err := tk.Execute(ctx, "bash", map[string]any{"command": fmt.Sprintf(c.command, dir)})
		cancel()
		wantCancelled(t, c.name, r, err, time.Since(start), "command cancelled")
		pids := readPids(dir, c.pids)
		if pids == nil {
			t.Fatalf("%s: the command did not write its pids", c.name)
		}
		wantGone(t, c.name, pids)
	}
	r, err := tk.Execute(context.Background(), "bash", map[string]any{"command": "echo again"})
	if err != nil || r.IsError || r.Output != "again\n" {
		t.Fatalf("bash after the cancels: %+v, %v", r, err)
	}
}

// A ctx deadline ends the call as a cancel does.
func TestExecuteCtxDeadlineEndsBash(t *testing.T) {
	tk := mustBuild(t, `{}`)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, err := tk.Execute(ctx, "bash", map[string]any{"command": fmt.Sprintf("echo $$ > %s/sh; exec sleep 30", dir)})
	wantCancelled(t, "deadline", r, err, time.Since(start), "command cancelled")
	if pids := readPids(dir, []string{"sh"}); pids != nil {
		wantGone(t, "deadline", pids)
	}
	// An already-expired context stops the call before the tool starts.
	r, err = tk.Execute(ctx, "bash", map[string]any{"command": fmt.Sprintf("touch %s/ran", dir)})
	wantCancelled(t, "expired", r, err, 0, "bash: cancelled")
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("a call with an expired context ran its command")
	}
}

func TestExecuteCancelEndsASlowHTTPRequest(t *testing.T) {
	var arrived, endedEarly atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		if r.URL.Path != "/slow" {
			fmt.Fprint(w, "fast")
			return
		}
		select {
		case <-r.Context().Done(): // the client closed the connection
			endedEarly.Add(1)
		case <-time.After(10 * time.Second):
			fmt.Fprint(w, "late")
		}
	}))
	defer srv.Close()
	tk := mustBuild(t, map[string]any{"builtins": false, "httpTools": []any{
		map[string]any{"name": "slow", "url": srv.URL + "/slow"},
		map[string]any{"name": "fast", "url": srv.URL + "/fast"},
	}})
	ctx, cancel := context.WithCancel(context.Background())
	cancelWhen(cancel, func() bool { return arrived.Load() > 0 })
	start := time.Now()
	r, err := tk.Execute(ctx, "slow", map[string]any{})
	wantCancelled(t, "slow HTTP", r, err, time.Since(start), "slow: cancelled")
	for i := 0; i < 300 && endedEarly.Load() == 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if endedEarly.Load() != 1 {
		t.Fatal("the server never saw the request ended")
	}
	r, err = tk.Execute(context.Background(), "fast", map[string]any{})
	if err != nil || r.IsError || r.Output != "fast" {
		t.Fatalf("HTTP tool after the cancel: %+v, %v", r, err)
	}
}

func TestExecuteCancelReturnsFromSlowGoTools(t *testing.T) {
	base := LiveHandles()
	tk, err := Build(context.Background(), `{"builtins":false}`)
	if err != nil {
		t.Fatal(err)
	}
	var sleepyStarted, sleepyDone, watcherStarted atomic.Bool
	watcherSaw := make(chan error, 1)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Never looks at its context.
	must(tk.Register("sleepy", "", nil, func(context.Context, json.RawMessage) (string, error) {
		sleepyStarted.Store(true)
		time.Sleep(time.Second)
		sleepyDone.Store(true)
		return "late answer", nil
	}))
	// Waits for its context.
	must(tk.Register("watcher", "", nil, func(ctx context.Context, _ json.RawMessage) (string, error) {
		watcherStarted.Store(true)
		select {
		case <-ctx.Done():
			watcherSaw <- ctx.Err()
			return "", ctx.Err()
		case <-time.After(10 * time.Second):
			watcherSaw <- nil
			return "never cancelled", nil
		}
	}))
	must(tk.Register("echo", "", nil, func(_ context.Context, args json.RawMessage) (string, error) {
		return string(args), nil
	}))

	ctx, cancel := context.WithCancel(context.Background())
	cancelWhen(cancel, sleepyStarted.Load)
	start := time.Now()
	r, err := tk.Execute(ctx, "sleepy", map[string]any{})
	wantCancelled(t, "sleepy", r, err, time.Since(start), "sleepy: cancelled")
	if sleepyDone.Load() {
		t.Fatal("sleepy: the caller waited for the late answer")
	}

	ctx, cancel = context.WithCancel(context.Background())
	cancelWhen(cancel, watcherStarted.Load)
	start = time.Now()
	r, err = tk.Execute(ctx, "watcher", map[string]any{})
	wantCancelled(t, "watcher", r, err, time.Since(start), "watcher: cancelled")
	select {
	case e := <-watcherSaw:
		if e != context.Canceled {
			t.Fatalf("watcher: its context ended with %v, want context.Canceled", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watcher: its context was never cancelled")
	}

	// Still usable, with a cancellable context that is never cancelled too.
	ctx, cancel = context.WithCancel(context.Background())
	r, err = tk.Execute(ctx, "echo", map[string]any{"n": 1})
	cancel()
	if err != nil || r.IsError || r.Output != `{"n":1}` {
		t.Fatalf("echo after the cancels: %+v, %v", r, err)
	}
	// Closing while sleepy still runs: its handle goes once it has returned.
	if err := tk.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300 && LiveHandles() != base; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := LiveHandles(); n != base {
		t.Fatalf("%d Go tool handles still live after Close", n-base)
	}
	if !sleepyDone.Load() {
		t.Fatal("sleepy's handle was released before it returned")
	}
}

func TestExecuteCancelReturnsFromAHungMCPCall(t *testing.T) {
	script := filepath.Join(repoRoot(t), "tests", "mcp_servers", "hang_call.py")
	tk := mustBuild(t, map[string]any{"builtins": false, "mcpConfig": map[string]any{"mcpServers": map[string]any{
		"hang": map[string]any{"command": []string{"python3", script}, "timeout": 20000}}}})
	for i := 0; i < 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		r, err := tk.Execute(ctx, "hang_ping", map[string]any{})
		cancel()
		wantCancelled(t, "MCP call", r, err, time.Since(start), `mcp server "hang" failed at tools/call: cancelled`)
		status, err := tk.Render("status")
		if err != nil || !strings.Contains(string(status), `"hang":"connected"`) {
			t.Fatalf("MCP session after the cancel: %s, %v", status, err)
		}
	}
}
