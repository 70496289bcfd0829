package toolnexus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// vectorExpect returns the recorded expectation of one vector case.
func vectorExpect(t *testing.T, file, id string) json.RawMessage {
	t.Helper()
	cases, err := loadCases(filepath.Join(repoRoot(t), "tests", "conformance", "vectors", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range cases {
		var c struct {
			ID     string          `json:"id"`
			Expect json.RawMessage `json:"expect"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		if c.ID == id {
			return c.Expect
		}
	}
	t.Fatalf("no case %s in %s", id, file)
	return nil
}

func mustBuild(t *testing.T, config any) *Toolkit {
	t.Helper()
	tk, err := Build(context.Background(), config)
	if err != nil {
		t.Fatalf("Build(context.Background(), %v): %v", config, err)
	}
	t.Cleanup(func() { tk.Close() })
	return tk
}

func wantCode(t *testing.T, err error, code string, status int) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *Error %s, got %v", code, err)
	}
	if e.Code != code || e.Status != status {
		t.Fatalf("want %s (%d), got %s (%d): %s", code, status, e.Code, e.Status, e.Message)
	}
	if e.Message == "" {
		t.Fatalf("%s error without a message", code)
	}
	return e
}

func TestVersionMatchesHeader(t *testing.T) {
	if Version() != HeaderVersion {
		t.Fatalf("library %s, header %s", Version(), HeaderVersion)
	}
	if err := checkVersion(); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultToolkitListsTheBuiltins(t *testing.T) {
	tk := mustBuild(t, "{}")
	got, err := tk.Render("toolNames")
	if err != nil {
		t.Fatal(err)
	}
	want := vectorExpect(t, "render.json", "render/default-builtins-only/toolNames")
	var g, w []string
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("toolNames %v, want %v", g, w)
	}
}

func TestBuildAcceptsValuesAndText(t *testing.T) {
	config := map[string]any{"builtins": false, "skills": []map[string]any{
		{"name": "greet", "description": "Greets.", "content": "Say hello."},
	}}
	for _, c := range []any{config, `{"builtins":false,"skills":[{"name":"greet","description":"Greets.","content":"Say hello."}]}`} {
		tk := mustBuild(t, c)
		names, err := tk.Render("toolNames")
		if err != nil {
			t.Fatal(err)
		}
		if string(names) != `["skill"]` {
			t.Fatalf("toolNames %s", names)
		}
		res, err := tk.Execute(context.Background(), "skill", map[string]string{"name": "greet"})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || !strings.Contains(res.Output, "Say hello.") {
			t.Fatalf("skill result %+v", res)
		}
	}
}

func TestBuildErrorsAreTyped(t *testing.T) {
	_, err := Build(context.Background(), `{"skills": [`)
	wantCode(t, err, "invalid_json", StatusInvalidJSON)
	_, err = Build(context.Background(), `{"noSuchOption": 1}`)
	e := wantCode(t, err, "invalid_config", StatusInvalidConfig)
	if !strings.Contains(e.Message, "noSuchOption") {
		t.Fatalf("message does not name the key: %s", e.Message)
	}
	if !errors.Is(err, &Error{Code: "invalid_config"}) {
		t.Fatal("errors.Is by code")
	}
	_, err = Build(context.Background(), "{\"skillsDir\": \"\xff\"}")
	wantCode(t, err, "invalid_utf8", StatusInvalidUTF8)
	_, err = Build(context.Background(), "{\"a\":\"x\x00y\"}")
	wantCode(t, err, "invalid_argument", StatusInvalidArgument)
}

func TestRenderFormatsAndErrors(t *testing.T) {
	tk := mustBuild(t, `{}`)
	_, err := tk.Render("cobol")
	wantCode(t, err, "unknown_format", StatusUnknownFormat)

	out, err := tk.RenderTools("anthropic", []string{"write", "bash"})
	if err != nil {
		t.Fatal(err)
	}
	var tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if err := json.Unmarshal(out, &tools); err != nil {
		t.Fatal(err)
	}
	if len(tools) != 2 || tools[0].Name != "write" || tools[1].Name != "bash" || len(tools[0].InputSchema) == 0 {
		t.Fatalf("subset %s", out)
	}
	_, err = tk.RenderTools("openai", []string{"nope"})
	e := wantCode(t, err, "invalid_argument", StatusInvalidArgument)
	if !strings.Contains(e.Message, "nope") {
		t.Fatalf("message does not name the tool: %s", e.Message)
	}
	gem, err := tk.RenderTools("gemini", nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(gem) != string(vectorExpectCompact(t, "render.json", "render/explicit-order/empty-gemini")) {
		t.Fatalf("empty gemini %s", gem)
	}
}

func vectorExpectCompact(t *testing.T, file, id string) []byte {
	raw := vectorExpect(t, file, id)
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return b
}

func TestExecuteUnknownToolIsAResult(t *testing.T) {
	tk := mustBuild(t, `{"builtins":false}`)
	res, err := tk.Execute(context.Background(), "nope", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || res.Output != "unknown tool: nope" {
		t.Fatalf("got %+v", res)
	}
	raw, err := tk.ExecuteJSON(context.Background(), "nope", `{}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(raw) {
		t.Fatalf("ExecuteJSON not JSON: %s", raw)
	}
	_, err = tk.Execute(context.Background(), "nope", `{"a":`)
	wantCode(t, err, "invalid_json", StatusInvalidJSON)
}

func TestCloseIsIdempotentAndFencesCalls(t *testing.T) {
	tk, err := Build(context.Background(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tk.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = tk.Render("toolNames")
	wantCode(t, err, "invalid_argument", StatusInvalidArgument)
	_, err = tk.Execute(context.Background(), "bash", `{"command":"true"}`)
	wantCode(t, err, "invalid_argument", StatusInvalidArgument)
	if err := tk.Register("x", "", nil, func(context.Context, json.RawMessage) (string, error) { return "", nil }); err == nil {
		t.Fatal("Register on a closed toolkit succeeded")
	}
}

// A toolkit shared by many goroutines gives every one the same answers.
func TestConcurrentRenderAndExecute(t *testing.T) {
	tk := mustBuild(t, `{"skills":[{"name":"greet","description":"Greets.","content":"Say hello."}]}`)
	wantRender, err := tk.Render("openai")
	if err != nil {
		t.Fatal(err)
	}
	wantSkill, err := tk.ExecuteJSON(context.Background(), "skill", `{"name":"greet"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				r, err := tk.Render("openai")
				if err != nil || string(r) != string(wantRender) {
					errs <- fmt.Errorf("render: %v", err)
					return
				}
				s, err := tk.ExecuteJSON(context.Background(), "skill", `{"name":"greet"}`, nil)
				if err != nil || string(s) != string(wantSkill) {
					errs <- fmt.Errorf("execute: %v %s", err, s)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// The cleanup frees a toolkit nobody closed; the Go tool registered on it is
// released with it.
func TestForgottenToolkitIsFreedByTheCleanup(t *testing.T) {
	before := LiveHandles()
	func() {
		tk, err := Build(context.Background(), `{"builtins":false}`)
		if err != nil {
			t.Fatal(err)
		}
		if err := tk.Register("noop", "", nil, func(context.Context, json.RawMessage) (string, error) { return "ok", nil }); err != nil {
			t.Fatal(err)
		}
	}()
	for i := 0; i < 50 && LiveHandles() > before; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if LiveHandles() != before {
		t.Fatalf("live handles %d, want %d after the toolkit became unreachable", LiveHandles(), before)
	}
}
