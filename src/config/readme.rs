//! The book's table of settings (docs/configuration.md) and deploy/sieved.conf, both checked
//! against the table so that neither drifts from what the server does.

use super::table::{Access, PARAMS};
use std::path::PathBuf;

const BEGIN: &str = "<!-- settings table: generated from src/config/table.rs; to regenerate, run \
                     `cargo test --lib config::readme -- --ignored` -->\n";
const END: &str = "<!-- end of settings table -->\n";

fn repo_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The page the table is on.
const PAGE: &str = "docs/configuration.md";

/// The table as markdown, one row a setting, in the table's order.
fn settings_markdown() -> String {
    let mut out = String::from(
        "| file directive, CONFIG name | flag | value | default | CONFIG SET | meaning |\n\
         |---|---|---|---|---|---|\n",
    );
    for param in PARAMS {
        let default = match param.default {
            "" => "(none)".to_string(),
            default => format!("`{default}`"),
        };
        let runtime = if matches!(param.access, Access::Fixed { .. }) {
            ""
        } else {
            "yes"
        };
        out.push_str(&format!(
            "| `{}` | `--{}` | {} | {default} | {runtime} | {} |\n",
            param.name,
            param.flag,
            param.kind.replace('|', "\\|"),
            markdown_text(param.help)
        ));
    }
    out
}

/// Text for a table cell: bars escaped, and `<host>` shown rather than read as an HTML tag.
fn markdown_text(text: &str) -> String {
    text.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The page with its table replaced by `table`; `None` when the markers are missing.
fn with_table(page: &str, table: &str) -> Option<String> {
    let start = page.find(BEGIN)? + BEGIN.len();
    let end = start + page[start..].find(END)?;
    Some(format!("{}{table}{}", &page[..start], &page[end..]))
}

#[test]
fn book_lists_the_settings_of_the_table() {
    let page = std::fs::read_to_string(repo_file(PAGE)).expect(PAGE);
    let updated = with_table(&page, &settings_markdown()).expect("the page's markers");
    assert!(
        updated == page,
        "{PAGE}'s table of settings differs from src/config/table.rs; regenerate it with \
         `cargo test --lib config::readme -- --ignored`"
    );
}

#[test]
#[ignore = "writes docs/configuration.md: run it to regenerate the table of settings"]
fn regenerate_the_book_table() {
    let path = repo_file(PAGE);
    let page = std::fs::read_to_string(&path).expect(PAGE);
    let updated = with_table(&page, &settings_markdown()).expect("the page's markers");
    std::fs::write(path, updated).expect(PAGE);
}

#[test]
fn deployed_file_shows_every_directive() {
    let conf = std::fs::read_to_string(repo_file("deploy/sieved.conf")).expect("sieved.conf");
    for param in PARAMS {
        let shown = conf.lines().any(|line| {
            let line = line.trim_start_matches('#').trim_start();
            line.split_whitespace().next() == Some(param.name)
        });
        assert!(
            shown,
            "deploy/sieved.conf does not show `{}` (commented out if it is not to be set)",
            param.name
        );
    }
}
