package toolnexus

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// The repository's tests/conformance must be an exact copy of the shared
// conformance directory (../shared/conformance beside the repository, or
// TN_SHARED_CONFORMANCE) wherever that exists: vectors, divergences.json and
// README. Files only the repository has (proposed-divergences.json) are
// allowed.
func TestConformanceCopyMatchesShared(t *testing.T) {
	root := repoRoot(t)
	shared := os.Getenv("TN_SHARED_CONFORMANCE")
	if shared == "" {
		shared = filepath.Join(root, "..", "shared", "conformance")
	}
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("no shared conformance directory at %s", shared)
	}
	local := filepath.Join(root, "tests", "conformance")
	checked := 0
	err := filepath.WalkDir(shared, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(shared, p)
		want, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(local, rel))
		switch {
		case err != nil:
			t.Errorf("tests/conformance/%s: missing (%v)", rel, err)
		case !bytes.Equal(got, want):
			t.Errorf("tests/conformance/%s differs from %s", rel, p)
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatalf("no files under %s", shared)
	}
}
