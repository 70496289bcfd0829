package toolnexus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// A Go tool's output crosses back through the trampoline's buffer when it
// fits and through the library's setter when it does not, and an answer of
// Execute through the pooled buffer or the library's string: every length
// around both sizes, success or error, comes back whole, and so do the args.
func TestOutputsAndAnswersOfEveryLengthAroundTheBuffers(t *testing.T) {
	tk := mustBuild(t, `{"builtins":false}`)
	defer tk.Close()
	err := tk.Register("sized", "Answers n bytes.", nil, func(_ context.Context, args json.RawMessage) (string, error) {
		var in struct {
			N    int
			Fail bool
		}
		if err := json.Unmarshal(args, &in); err != nil {
			return "", err
		}
		out := exactly(in.N)
		if in.Fail {
			return "", errors.New(out)
		}
		return out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// {"output":"…","isError":false}: the output plus 31 bytes (30 for an
	// error); the trampoline's buffer holds 1023 bytes and the NUL.
	var sizes []int
	for _, around := range []int{0, 1023, answerRoom - 31, 2 * answerRoom} {
		for d := -3; d <= 3; d++ {
			if n := around + d; n >= 0 {
				sizes = append(sizes, n)
			}
		}
	}
	for _, n := range sizes {
		for _, fail := range []bool{false, true} {
			want := exactly(n)
			r, err := tk.Execute(context.Background(), "sized", map[string]any{"n": n, "fail": fail})
			if err != nil {
				t.Fatal(err)
			}
			if r.Output != want || r.IsError != fail {
				t.Fatalf("n=%d fail=%v: got %d bytes, isError %v", n, fail, len(r.Output), r.IsError)
			}
		}
	}
}

// exactly is a text of n bytes (no JSON escapes), two-byte letters and all.
func exactly(n int) string {
	head := fmt.Sprintf("%d:", n)
	if n < len(head) {
		return strings.Repeat("x", n)
	}
	rest := n - len(head)
	return head + strings.Repeat("é", rest/2) + strings.Repeat("x", rest%2)
}

// Many goroutines at once, each with its own length: no answer is another's.
func TestPooledAnswerBuffersAreNotShared(t *testing.T) {
	tk := mustBuild(t, `{"builtins":false}`)
	defer tk.Close()
	if err := tk.Register("rep", "Repeats its letter.", nil, func(_ context.Context, args json.RawMessage) (string, error) {
		var in struct {
			C string
			N int
		}
		err := json.Unmarshal(args, &in)
		return strings.Repeat(in.C, in.N), err
	}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			c := string(rune('a' + g))
			for i := 0; i < 200; i++ {
				n := (g*331 + i*97) % 3000
				r, err := tk.Execute(context.Background(), "rep", map[string]any{"c": c, "n": n})
				if err == nil && r.Output != strings.Repeat(c, n) {
					err = fmt.Errorf("goroutine %d call %d: got %q", g, i, r.Output)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
