package toolnexus

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Skill discovery as upstream 0.21 does it, through the ABI (ADR 0028, #93).

func writeSkill(t *testing.T, root, rel, text string) {
	t.Helper()
	p := filepath.Join(root, rel, "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

type skillsView struct {
	Skills []struct {
		Name        string  `json:"name"`
		Description *string `json:"description"`
		Content     string  `json:"content"`
	} `json:"skills"`
	Skipped []struct {
		Location string `json:"location"`
		Reason   string `json:"reason"`
		Detail   string `json:"detail"`
	} `json:"skipped"`
}

// Follows the Python port's test_consumer_issues_86_93.py::
// test_d6_the_fallback_rescues_frontmatter_yaml_refused,
// ::test_d6_skips_carry_the_native_parser_detail and
// ::test_d6_a15_depth_beats_code_point.
func TestSkillsRescueDetailAndDepthOrder(t *testing.T) {
	root := t.TempDir()
	writeSkill(t, root, "timesheet", "---\nname: timesheet\ndescription: Hours. Trigger on: do my timesheet.\n---\nbody\n")
	writeSkill(t, root, "broken", "---\n: [unclosed\n---\nbody\n")
	writeSkill(t, root, "xlsx", "---\nname: xlsx\ndescription: top\n---\nbody\n")
	writeSkill(t, root, "synced/b71e/xlsx", "---\nname: xlsx\ndescription: nested\n---\nbody\n")
	tk := mustBuild(t, map[string]any{"builtins": false, "skillsDir": root})
	raw, err := tk.Render("skillsInventory")
	if err != nil {
		t.Fatal(err)
	}
	var v skillsView
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range v.Skills {
		if s.Description != nil {
			got[s.Name] = *s.Description
		}
		if s.Content != "body\n" {
			t.Errorf("%s: content %q keeps no trailing newline", s.Name, s.Content)
		}
	}
	if got["timesheet"] != "Hours. Trigger on: do my timesheet." || got["xlsx"] != "top" {
		t.Fatalf("descriptions %v", got)
	}
	reasons := map[string]string{}
	for _, s := range v.Skipped {
		reasons[s.Reason] = s.Detail
		if s.Reason == "duplicate-name" && !strings.HasSuffix(s.Location, "synced/b71e/xlsx/SKILL.md") {
			t.Errorf("the nested copy should lose: %s", s.Location)
		}
	}
	if d, ok := reasons["malformed-frontmatter"]; !ok || d == "" {
		t.Fatalf("malformed skip without a detail: %+v", v.Skipped)
	}
	if _, ok := reasons["duplicate-name"]; !ok || len(v.Skipped) != 2 {
		t.Fatalf("skips %+v", v.Skipped)
	}
}
