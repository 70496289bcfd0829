//! The sibling-file sample of a skill's `<skill_files>` block.

use std::path::Path;

/// Up to `limit` regular files under `dir` (recursively, `node_modules` and
/// `.git` pruned, every `SKILL.md` left out), sorted by path in code-point
/// order so two hosts always agree.
pub fn sample(dir: &Path, limit: usize) -> Vec<String> {
    let mut files: Vec<String> = super::walk::files(dir, &|name| name != "SKILL.md")
        .into_iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    files.sort_unstable();
    files.truncate(limit);
    files
}
