package toolnexus

import (
	"context"
	"strings"
	"testing"
)

// Provider errors as upstream 0.21 reports them (ADR 0027, #91/#92), from Go.

// Follows the Python port's test_consumer_issues_86_93.py::
// test_d5_provider_error_is_typed and
// ::test_d5_account_identifiers_are_redacted_not_merely_capped.
func TestProviderErrorCarriesStatusRedactedBodyAndRetryAfter(t *testing.T) {
	body := `{"error":{"message":"no credit","user_id":"user_2abc","org_id":"org_9"}}`
	srv := mockProvider(t, cannedResponse{Status: 402, BodyText: &body, Headers: map[string]string{"retry-after": "7"}})
	client := map[string]any{"baseUrl": srv.base(), "model": "m", "apiKey": "k", "retries": 0}
	_, err := Translate(context.Background(), client, `{"messages":[{"role":"user","content":"Hi"}]}`, nil)
	e := wantCode(t, err, "provider_error", StatusProviderError)
	if e.HTTPStatus != 402 || e.RetryAfter == nil || *e.RetryAfter != "7" {
		t.Fatalf("typed fields: %+v", e)
	}
	for _, text := range []string{e.Message, e.Body} {
		if strings.Contains(text, "user_2abc") || strings.Contains(text, "org_9") || strings.Count(text, "«redacted»") != 2 {
			t.Fatalf("identifiers not redacted: %s", text)
		}
	}
}

// Follows ::test_d5_auth_bodies_never_surface.
func TestProviderAuthBodyNeverSurfaces(t *testing.T) {
	body := "Authorization: Bearer sk-live-xyz rejected"
	srv := mockProvider(t, cannedResponse{Status: 401, BodyText: &body})
	client := map[string]any{"baseUrl": srv.base(), "model": "m", "apiKey": "k", "retries": 0}
	_, err := Translate(context.Background(), client, `{"messages":[{"role":"user","content":"Hi"}]}`, nil)
	e := wantCode(t, err, "provider_error", StatusProviderError)
	if e.HTTPStatus != 401 || e.Body != "" || e.RetryAfter != nil || strings.Contains(e.Message, "sk-live") {
		t.Fatalf("401 body surfaced: %+v", e)
	}
}
