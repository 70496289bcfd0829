package toolnexus

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// cannedResponse is one serverResponse / providerResponse of a vector case.
type cannedResponse struct {
	Status   int               `json:"status"`
	Body     json.RawMessage   `json:"body"`
	BodyText *string           `json:"bodyText"`
	Headers  map[string]string `json:"headers"`
	DelayMs  int               `json:"delayMs"`
}

// recordedRequest is what the mock received, in the vectors' terms.
type recordedRequest struct {
	Method  string
	Path    string  // raw path, as sent
	Query   *string // raw query; nil when the request line had no '?'
	Headers map[string][]string
	Body    []byte
}

// mockServer answers canned responses in order, one per request, then 404,
// and records every request. It listens on 127.0.0.1 only.
type mockServer struct {
	ln        net.Listener
	srv       *http.Server
	mu        sync.Mutex
	responses []cannedResponse
	next      int
	// op run: answers for paths under /tool/ (HTTP tools), when routed.
	routed        bool
	toolResponses []cannedResponse
	toolNext      int
	requests      []recordedRequest
	handlers      sync.WaitGroup
}

func startMockServer() (*mockServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &mockServer{ln: ln}
	m.srv = &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = m.srv.Serve(ln) }()
	return m, nil
}

func (m *mockServer) base() string { return "http://" + m.ln.Addr().String() }

func (m *mockServer) setResponses(rs []cannedResponse) {
	m.mu.Lock()
	m.responses = rs
	m.mu.Unlock()
}

// setToolResponses routes requests under /tool/ to their own queue.
func (m *mockServer) setToolResponses(rs []cannedResponse) {
	m.mu.Lock()
	m.routed = true
	m.toolResponses = rs
	m.mu.Unlock()
}

func (m *mockServer) recorded() []recordedRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]recordedRequest(nil), m.requests...)
}

// close stops the server and waits for handlers still sleeping on delayMs, so
// nothing of one case outlives it into the next.
func (m *mockServer) close() {
	_ = m.srv.Close()
	m.handlers.Wait()
}

func (m *mockServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.handlers.Add(1)
	defer m.handlers.Done()
	body, _ := io.ReadAll(r.Body)
	rec := recordedRequest{Method: r.Method, Headers: map[string][]string{}, Body: body}
	uri := r.RequestURI
	if i := strings.IndexByte(uri, '?'); i >= 0 {
		q := uri[i+1:]
		rec.Path, rec.Query = uri[:i], &q
	} else {
		rec.Path = uri
	}
	for k, v := range r.Header {
		rec.Headers[strings.ToLower(k)] = v
	}
	m.mu.Lock()
	m.requests = append(m.requests, rec)
	var resp *cannedResponse
	if m.routed && strings.HasPrefix(rec.Path, "/tool/") {
		if m.toolNext < len(m.toolResponses) {
			resp = &m.toolResponses[m.toolNext]
			m.toolNext++
		}
	} else if m.next < len(m.responses) {
		resp = &m.responses[m.next]
		m.next++
	}
	m.mu.Unlock()

	if resp == nil {
		w.Header()["Content-Type"] = nil
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if resp.DelayMs > 0 {
		select {
		case <-time.After(time.Duration(resp.DelayMs) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
	}
	var payload []byte
	// nil suppresses net/http's content sniffing: a bodyText answer carries
	// no content-type at all.
	w.Header()["Content-Type"] = nil
	if len(resp.Body) > 0 && resp.BodyText == nil {
		var buf bytes.Buffer
		if err := json.Compact(&buf, resp.Body); err == nil {
			payload = buf.Bytes()
		} else {
			payload = resp.Body
		}
		w.Header().Set("Content-Type", "application/json")
	} else if resp.BodyText != nil {
		payload = []byte(*resp.BodyText)
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(payload)
}
