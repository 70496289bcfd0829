package toolnexus

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Go function can hand back content parts (SPEC §1B), and they come back
// out of Execute as they went in (upstream 0.21 test_multimodal.py: a native
// tool returning an image part).
func TestGoToolReturnsParts(t *testing.T) {
	tk := mustBuild(t, `{"builtins":false}`)
	shot := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n"))
	err := tk.RegisterResult("screenshot", "", nil, func(_ context.Context, _ json.RawMessage) (*ToolResult, error) {
		return &ToolResult{Output: "the screen", Parts: []Part{{Type: "image", MimeType: "image/png", Data: shot, Name: "s.png"}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tk.Execute(context.Background(), "screenshot", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Part{Type: "image", MimeType: "image/png", Data: shot, Name: "s.png"}
	if res.IsError || res.Output != "the screen" || len(res.Parts) != 1 || res.Parts[0] != want {
		t.Fatalf("result %+v", res)
	}
}

// A part that breaks §1B's shape rules is refused with the reason, not
// passed on.
func TestGoToolWithABadPartIsAnErrorNamingIt(t *testing.T) {
	tk := mustBuild(t, `{"builtins":false}`)
	err := tk.RegisterResult("bad", "", nil, func(_ context.Context, _ json.RawMessage) (*ToolResult, error) {
		return &ToolResult{Output: "x", Parts: []Part{{Type: "image", Data: "AA=="}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tk.Execute(context.Background(), "bad", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Output, "parts[0]: a image part needs a mimeType") {
		t.Fatalf("result %+v", res)
	}
}

// read of a PNG through the ABI: the summary line and the bytes as a part.
func TestReadOfAnImageGivesAPart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pic.png")
	raw := []byte("\x89PNG\r\n\x1a\nrest")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	tk := mustBuild(t, `{}`)
	res, err := tk.Execute(context.Background(), "read", map[string]any{"path": path})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != path+" (image/png, 12 bytes)" || len(res.Parts) != 1 ||
		res.Parts[0].Data != base64.StdEncoding.EncodeToString(raw) || res.Parts[0].Name != "pic.png" {
		t.Fatalf("result %+v", res)
	}
}
