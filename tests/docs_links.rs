//! Every relative link in the repository's Markdown resolves: README.md, docs/*.md,
//! board-configs/README.md, cross/README.md, packaging/README.md and any other `*.md`
//! outside `target/` and `.git/`. A link's file (or directory) must exist, relative to the
//! file that links to it, and an `#anchor` must match a heading of the file it names by
//! GitHub's slug rules, so a moved section or a renamed heading fails here instead of
//! leaving a dead link in the docs.
//!
//! Links with a scheme (`https:`, `mailto:`) are not followed; links inside code spans and
//! fenced code blocks are not links. Headings are ATX headings (`# ...`), the only kind
//! the project writes.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

/// The repository's root (this crate's manifest directory).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// GitHub's anchor for a heading's text: lower case, each space a `-`, every character
/// other than a letter, a digit, `-` or `_` dropped. Markdown in the heading is taken out
/// first, as GitHub slugs the rendered text.
fn slug(heading: &str) -> String {
    plain_text(heading)
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// A heading's rendered text: code-span backticks, emphasis stars and link targets go,
/// the words stay (`[`src/rt.rs`](../src/rt.rs)` is `src/rt.rs`).
fn plain_text(md: &str) -> String {
    let mut out = String::new();
    let mut rest = md;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match link_at(after) {
            Some((text, _, len)) => {
                out.push_str(text);
                rest = &after[len..];
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.replace(['`', '*'], "")
}

/// The link that starts right after a `[`: its text, its target and the bytes it takes
/// (up to the closing `)`), or `None` when this `[` opens no inline link. The text may
/// run over lines (a paragraph's line breaks), not over brackets.
fn link_at(s: &str) -> Option<(&str, &str, usize)> {
    let close = s.find(']')?;
    let text = &s[..close];
    let target_start = close + 1 + s[close + 1..].strip_prefix('(').map(|_| 1)?;
    let end = target_start + s[target_start..].find(')')?;
    let target = s[target_start..end].split_whitespace().next().unwrap_or("");
    (!text.contains('[')).then_some((text, target, end + 1))
}

/// Lines outside fenced code blocks, with their line numbers (from 1).
fn prose_lines(md: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in md.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(f), Some(m)) if f == m => fence = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// The paragraphs outside fenced code blocks (runs of lines without a blank one), each
/// with the number of its first line and its code spans blanked out (line breaks kept),
/// so that a link shown as code is not a link and a link's text may span lines.
fn paragraphs(md: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut last = 0;
    for (n, line) in prose_lines(md) {
        if line.trim().is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((_, text)) if n == last + 1 => {
                text.push('\n');
                text.push_str(line);
            }
            _ => out.push((n, line.to_string())),
        }
        last = n;
    }
    for (_, text) in &mut out {
        *text = without_code_spans(text);
    }
    out
}

/// Text with the inside of its code spans blanked (line breaks kept); an unclosed
/// backtick is taken as text.
fn without_code_spans(text: &str) -> String {
    let pieces: Vec<&str> = text.split('`').collect();
    let closed = pieces.len() - (pieces.len() + 1) % 2;
    let mut out = String::new();
    for (i, piece) in pieces.iter().enumerate() {
        if i % 2 == 1 && i < closed {
            out.extend(piece.chars().filter(|&c| c == '\n'));
        } else {
            out.push_str(piece);
        }
    }
    out
}

/// The anchors of a Markdown text's headings; a repeated heading gets `-1`, `-2`, ...
fn anchors(md: &str) -> HashSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = HashSet::new();
    for (_, line) in prose_lines(md) {
        let hashes = line.len() - line.trim_start_matches('#').len();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim_end_matches('#'));
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The inline link targets of a Markdown text (images too), with their line numbers.
fn links(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (first, text) in paragraphs(md) {
        let mut at = 0;
        while let Some(open) = text[at..].find('[') {
            let start = at + open + 1;
            match link_at(&text[start..]) {
                Some((_, target, len)) => {
                    let line = first + text[..start].matches('\n').count();
                    out.push((line, target.to_string()));
                    at = start + len;
                }
                None => at = start,
            }
        }
    }
    out
}

/// `dir/../x` and `./x` folded, so a link is found whatever way it walks.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// What is wrong with the links of `text`, the Markdown of `file` (a path in the
/// repository, which need not exist: the sample test checks text of its own).
fn dead_links(file: &Path, text: &str) -> Vec<String> {
    let dir = file.parent().unwrap_or(Path::new(""));
    let mut errors = Vec::new();
    for (line, target) in links(text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target.as_str(), None),
        };
        let at = format!("{}:{line}: {target}", file.display());
        if path.is_empty() && anchor.is_none() {
            errors.push(format!("{at}: empty link"));
            continue;
        }
        let linked = if path.is_empty() {
            file.to_path_buf()
        } else {
            normalize(&dir.join(path))
        };
        let own_text = path.is_empty().then(|| text.to_string());
        if own_text.is_none() && !linked.exists() {
            errors.push(format!("{at}: no such file"));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        let Some(md) = own_text.or_else(|| std::fs::read_to_string(&linked).ok()) else {
            errors.push(format!(
                "{at}: an anchor into something that is not a text file"
            ));
            continue;
        };
        if !anchors(&md).contains(anchor) {
            errors.push(format!("{at}: no heading with this anchor"));
        }
    }
    errors
}

/// Every `*.md` below `dir`, but not under `target/` or `.git/`.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap_or_default();
        if path.is_dir() {
            if name != "target" && name != ".git" {
                markdown_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut files = Vec::new();
    markdown_files(&root(), &mut files);
    for must in [
        "README.md",
        "board-configs/README.md",
        "cross/README.md",
        "docs/security.md",
        "docs/measurements.md",
    ] {
        assert!(files.contains(&root().join(must)), "{must} not found");
    }
    let mut errors = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read markdown");
        checked += links(&text).len();
        errors.extend(dead_links(file, &text));
    }
    assert!(
        checked > 100,
        "only {checked} links found: is the parser broken?"
    );
    assert!(
        errors.is_empty(),
        "{} dead links:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

#[test]
fn every_doc_is_linked_from_the_readme() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README");
    let targets: Vec<String> = links(&readme).into_iter().map(|(_, t)| t).collect();
    let mut docs: Vec<_> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    docs.sort();
    assert!(!docs.is_empty());
    for doc in docs {
        let want = format!("docs/{doc}");
        assert!(
            targets
                .iter()
                .any(|t| t.split('#').next() == Some(want.as_str())),
            "README.md does not link {want}"
        );
    }
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines: the door is at most 250"
    );
}

#[test]
fn slugs_follow_githubs_rules() {
    let cases = [
        (
            "Quick start (fresh Debian machine, as root)",
            "quick-start-fresh-debian-machine-as-root",
        ),
        (
            "Status endpoint (`statusAddress`)",
            "status-endpoint-statusaddress",
        ),
        (
            "Admission: what the node runs at all",
            "admission-what-the-node-runs-at-all",
        ),
        (
            "The kubelet API (`port`, `kubectl logs`)",
            "the-kubelet-api-port-kubectl-logs",
        ),
        ("`/etc/hosts`", "etchosts"),
        ("The cluster's admins", "the-clusters-admins"),
        (
            "Memory after two fixes (2026-12-05)",
            "memory-after-two-fixes-2026-12-05",
        ),
        (
            "[`src/rt.rs`](../src/rt.rs) and **bold**",
            "srcrtrs-and-bold",
        ),
        ("kubelet_api and pod-cgroups", "kubelet_api-and-pod-cgroups"),
        ("Two  spaces", "two--spaces"),
    ];
    for (heading, want) in cases {
        assert_eq!(slug(heading), want, "{heading}");
    }
    let md = "# A\n## A\n```\n# not a heading\n```\n#not one either\n### A ###\n";
    let got = anchors(md);
    let want: HashSet<String> = ["a", "a-1", "a-2"].map(String::from).into();
    assert_eq!(got, want);
}

#[test]
fn a_dead_link_or_anchor_is_caught() {
    // A page placed in docs/ (it need not exist): links resolve from there.
    let page = root().join("docs/sample.md");
    let sample = "\
# Sample

Good: [design](design.md), [its map](design.md#module-map), [up](../README.md#commands),
[a source file](../src/config.rs), [a directory](../src/node/), [here](#sample),
[web](https://example.com/x#y), `[in code](missing.md)`.

Not a link: condition: [MemoryPressure]. before [a good one](pods.md#volumes).

Dead: [gone](missing.md), [bad anchor](design.md#no-such-heading),
[own anchor](#nowhere), [no source](../src/no_such_file.rs), [a link over
two lines](over-two-lines.md).

```
[fenced](also-missing.md)
```
";
    let errors = dead_links(&page, sample);
    assert_eq!(errors.len(), 5, "{errors:#?}");
    for (want, why) in [
        ("sample.md:9: missing.md", "no such file"),
        ("sample.md:10: over-two-lines.md", "no such file"),
        ("design.md#no-such-heading", "no heading"),
        ("#nowhere", "no heading"),
        ("../src/no_such_file.rs", "no such file"),
    ] {
        assert!(
            errors.iter().any(|e| e.contains(want) && e.contains(why)),
            "{want}: {errors:#?}"
        );
    }
    assert!(errors.iter().all(|e| e.contains("docs/sample.md:")));
}
