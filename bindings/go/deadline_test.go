package toolnexus

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// A Go tool gets the call's timeoutMs as its context's deadline, and an
// answer past it is dropped for the timeout result (issue 14).
func TestGoToolHonoursTheCallDeadline(t *testing.T) {
	tk := mustBuild(t, `{"builtins":false}`)
	defer tk.Close()
	seen := make(chan bool, 4)
	err := tk.Register("patient", "Waits for its context.", nil, func(ctx context.Context, args json.RawMessage) (string, error) {
		_, has := ctx.Deadline()
		seen <- has
		var in struct{ Ignore bool }
		_ = json.Unmarshal(args, &in)
		if in.Ignore {
			time.Sleep(500 * time.Millisecond)
			return "late answer", nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(10 * time.Second):
			return "the deadline never came", nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ignore := range []bool{false, true} {
		r, err := tk.ExecuteWithContext(context.Background(), "patient", map[string]any{"ignore": ignore}, map[string]any{"timeoutMs": 100})
		if err != nil {
			t.Fatal(err)
		}
		if !r.IsError || r.Output != "patient: timed out after 100 ms (timeoutMs)" {
			t.Fatalf("ignore=%v: got %+v", ignore, r)
		}
		if has := <-seen; !has {
			t.Fatalf("ignore=%v: the context had no deadline", ignore)
		}
	}
	// Without a timeout the context has none, and the answer comes back.
	r, err := tk.Execute(context.Background(), "patient", map[string]any{"ignore": true})
	if err != nil {
		t.Fatal(err)
	}
	if r.IsError || r.Output != "late answer" {
		t.Fatalf("got %+v", r)
	}
	if has := <-seen; has {
		t.Fatal("a call without timeoutMs had a deadline")
	}
}
