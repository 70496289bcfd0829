package toolnexus

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// oauthServer starts tests/mcp_servers/sdk_oauth_server.py (the official
// Python MCP SDK's OAuth-enabled server, which consents at once) and returns
// its MCP URL.
func oauthServer(t *testing.T) string {
	t.Helper()
	script, err := filepath.Abs("../../tests/mcp_servers/sdk_oauth_server.py")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the OAuth server printed no URL: %v", err)
	}
	url := strings.TrimSpace(line)
	base := strings.TrimSuffix(url, "/mcp")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if resp, err := http.Get(base + "/_stats"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the OAuth server did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return url
}

// headless fetches the authorization URL without following its redirect:
// the redirect is the answer.
func headless(ctx context.Context, ev AuthorizeEvent) (string, error) {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ev.URL, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	loc := resp.Header.Get("Location")
	if loc == "" {
		return "", errors.New("no redirect")
	}
	return loc, nil
}

func oauthToolkit(t *testing.T, url string, authorize AuthorizeFunc) *Toolkit {
	t.Helper()
	tk, err := Build(context.Background(), map[string]any{
		"builtins":  false,
		"mcpConfig": map[string]any{"mcpServers": map[string]any{"s": map[string]any{"url": url, "timeout": 20000}}},
	}, WithAuthorize(authorize))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tk.Close() })
	return tk
}

func TestAuthorizeCompletesAnMcpServersOAuthOnce(t *testing.T) {
	url := oauthServer(t)
	var calls atomic.Int32
	var seen atomic.Pointer[AuthorizeEvent]
	tk := oauthToolkit(t, url, func(ctx context.Context, ev AuthorizeEvent) (string, error) {
		calls.Add(1)
		seen.Store(&ev)
		return headless(ctx, ev)
	})
	for i := 0; i < 2; i++ {
		r, err := tk.Execute(context.Background(), "s_whoami", map[string]any{})
		if err != nil || r.IsError || !strings.Contains(r.Output, "ok ") {
			t.Fatalf("call %d: %+v %v", i, r, err)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("authorize called %d times, want 1", calls.Load())
	}
	ev := seen.Load()
	if ev.Server != "s" || ev.Resource != url || !strings.Contains(ev.URL, "code_challenge_method=S256") {
		t.Fatalf("event %+v", ev)
	}
}

func TestAnAuthorizeErrorFailsTheServerWithItsMessage(t *testing.T) {
	url := oauthServer(t)
	tk := oauthToolkit(t, url, func(context.Context, AuthorizeEvent) (string, error) {
		return "", errors.New("the user closed the browser")
	})
	status, err := tk.Render("status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "the user closed the browser") {
		t.Fatalf("status %s", status)
	}
}
