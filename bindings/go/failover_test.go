package toolnexus

import (
	"context"
	"encoding/json"
	"testing"
)

// A client with upstreams moves past a 503 to the next upstream, which gets
// its own model; the RunResult names the serving upstream (issue 29).
func TestAClientWithUpstreamsFailsOver(t *testing.T) {
	a, err := startMockServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.close)
	a.setResponses([]cannedResponse{textResponse(503, "busy")})
	b, err := startMockServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.close)
	b.setResponses([]cannedResponse{openaiText("from b")})
	c, err := NewClient(ClientOptions{Config: map[string]any{
		"upstreams": []any{
			map[string]any{"baseUrl": a.base(), "model": "model-a", "apiKey": "ka"},
			map[string]any{"baseUrl": b.base(), "model": "model-b", "apiKey": "kb"},
		},
		"retries": 0, "cooldownMs": 0,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Run(context.Background(), nil, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "from b" || res.Model != "model-b" {
		t.Fatalf("text %q model %q", res.Text, res.Model)
	}
	if res.Upstream == nil || res.Upstream.Index != 1 || res.Upstream.Model != "model-b" {
		t.Fatalf("upstream %+v", res.Upstream)
	}
	var sent map[string]any
	if err := json.Unmarshal(b.recorded()[0].Body, &sent); err != nil || sent["model"] != "model-b" {
		t.Fatalf("b got %s", b.recorded()[0].Body)
	}
	if n := len(a.recorded()); n != 1 {
		t.Fatalf("a got %d requests", n)
	}
}
