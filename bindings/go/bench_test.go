package toolnexus

import (
	"context"
	"encoding/json"
	"testing"
)

func benchToolkit(b *testing.B) *Toolkit {
	tk, err := Build(context.Background(), `{"builtins":false,"skills":[{"name":"greet","description":"Greets.","content":"Say hello."}]}`)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tk.Close() })
	if err := tk.Register("noop", "A trivial tool.", nil, func(context.Context, json.RawMessage) (string, error) {
		return "ok", nil
	}); err != nil {
		b.Fatal(err)
	}
	return tk
}

// One trivial Go tool call through the whole stack: Go -> C ABI -> Rust ->
// C shim -> Go trampoline and back.
func BenchmarkGoToolRoundTrip(b *testing.B) {
	tk := benchToolkit(b)
	args := json.RawMessage(`{"x":1}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tk.ExecuteJSON(context.Background(), "noop", args, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// The same from 8 goroutines at once (b.N calls in total): calls/s is
// b.N / elapsed.
func BenchmarkGoToolParallel8(b *testing.B) {
	tk := benchToolkit(b)
	args := json.RawMessage(`{"x":1}`)
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := tk.ExecuteJSON(context.Background(), "noop", args, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkSkillToolFromGo(b *testing.B) {
	tk := benchToolkit(b)
	args := json.RawMessage(`{"name":"greet"}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tk.ExecuteJSON(context.Background(), "skill", args, nil); err != nil {
			b.Fatal(err)
		}
	}
}
