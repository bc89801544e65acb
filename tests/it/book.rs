//! The book (docs/, built with mdBook) and the README hold together: every page is in
//! SUMMARY.md, every relative link reaches a file, and a heading where it names one, and the
//! README links to every page. mdBook renders a broken link without a word, so this is what
//! fails on one; it reads the markdown only, and costs milliseconds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every markdown file under docs/, as paths relative to the repository.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("docs/") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                out.push(
                    path.strip_prefix(root())
                        .expect("under the root")
                        .to_path_buf(),
                );
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("docs"), &mut out);
    out.sort();
    out
}

/// The text outside fenced code blocks and inline code, where links are links.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_code = false;
        for ch in line.chars() {
            if ch == '`' {
                in_code = !in_code;
            } else if !in_code {
                out.push(ch);
            }
        }
        out.push('\n');
    }
    out
}

/// The targets of the inline links `[text](target)` of a text.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut out = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => {
                out.push(after[..end].to_string());
                rest = &after[end..];
            }
            None => break,
        }
    }
    out
}

/// A heading's id as mdBook (and, for these headings, GitHub) makes it: lower case, letters,
/// digits, `-` and `_` kept, spaces as `-`, anything else dropped; a repeated id gets `-1`,
/// `-2`, ...
fn heading_ids(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut ids = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let id: String = title
            .chars()
            .filter_map(|ch| {
                if ch.is_alphanumeric() || ch == '_' || ch == '-' {
                    Some(ch.to_lowercase().next().unwrap_or(ch))
                } else if ch.is_whitespace() {
                    Some('-')
                } else {
                    None
                }
            })
            .collect();
        let count = seen.entry(id.clone()).or_insert(0);
        ids.insert(if *count == 0 {
            id.clone()
        } else {
            format!("{id}-{count}")
        });
        *count += 1;
    }
    ids
}

/// `base/../x` as `x`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The broken links of one file: those whose file is missing, or whose anchor names no heading.
fn broken_links(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(file)).expect("a markdown file");
    let mut broken = Vec::new();
    for target in links(&text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target.as_str(), None),
        };
        let linked = if path.is_empty() {
            file.to_path_buf()
        } else {
            normalize(&file.parent().unwrap_or(Path::new("")).join(path))
        };
        let full = root().join(&linked);
        if !full.exists() {
            broken.push(format!(
                "{}: {target}: no file {}",
                file.display(),
                linked.display()
            ));
            continue;
        }
        if let Some(anchor) = anchor {
            let linked_text = std::fs::read_to_string(&full).unwrap_or_default();
            if !heading_ids(&linked_text).contains(anchor) {
                broken.push(format!(
                    "{}: {target}: no heading #{anchor} in {}",
                    file.display(),
                    linked.display()
                ));
            }
        }
    }
    broken
}

/// The pages SUMMARY.md lists, relative to the repository.
fn summary_pages() -> BTreeSet<PathBuf> {
    let summary = std::fs::read_to_string(root().join("docs/SUMMARY.md")).expect("SUMMARY.md");
    links(&summary)
        .into_iter()
        .map(|target| normalize(&Path::new("docs").join(target)))
        .collect()
}

#[test]
fn every_link_of_the_book_and_the_readme_reaches_its_target() {
    let mut broken = Vec::new();
    for file in pages().iter().chain([PathBuf::from("README.md")].iter()) {
        broken.extend(broken_links(file));
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_page_is_in_the_summary() {
    let listed = summary_pages();
    let missing: Vec<_> = pages()
        .into_iter()
        .filter(|page| page != Path::new("docs/SUMMARY.md") && !listed.contains(page))
        .collect();
    assert!(
        missing.is_empty(),
        "pages not in docs/SUMMARY.md: {missing:?}"
    );
}

#[test]
fn the_readme_links_to_every_page() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let linked: BTreeSet<PathBuf> = links(&readme)
        .into_iter()
        .map(|target| normalize(Path::new(target.split('#').next().unwrap_or(""))))
        .collect();
    let missing: Vec<_> = summary_pages()
        .into_iter()
        .filter(|page| !linked.contains(page))
        .collect();
    assert!(
        missing.is_empty(),
        "pages the README does not link to: {missing:?}"
    );
}

#[test]
fn the_checker_finds_what_it_should() {
    let text = "# Replies and errors\n## Merging filters (sieved's own)\n## Replies and errors\n\
                ```\n# not a heading\n[not](a-link.md)\n```\nSee [a](x.md#y) and `[b](z.md)`.\n";
    let ids = heading_ids(text);
    assert!(ids.contains("replies-and-errors") && ids.contains("replies-and-errors-1"));
    assert!(ids.contains("merging-filters-sieveds-own"));
    assert!(!ids.contains("not-a-heading"));
    assert_eq!(links(text), vec!["x.md#y".to_string()]);
    assert_eq!(
        normalize(Path::new("docs/commands/../sizing.md")),
        Path::new("docs/sizing.md")
    );
}
