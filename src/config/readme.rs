//! The book's table of settings (docs/configuration.md) and deploy/sieved.conf, both checked
//! against the table so that neither drifts from what the server does.

use super::file;
use super::generated_text::{repo_file, with_section};
use super::table::{find, Access, Values, PARAMS};
use super::Config;

const BEGIN: &str = "<!-- settings table: generated from src/config/table.rs; to regenerate, run \
                     `cargo test --lib config::readme -- --ignored` -->\n";
const END: &str = "<!-- end of settings table -->\n";

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

#[test]
fn book_lists_the_settings_of_the_table() {
    let page = std::fs::read_to_string(repo_file(PAGE)).expect(PAGE);
    let updated =
        with_section(&page, BEGIN, END, &settings_markdown()).expect("the page's markers");
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
    let updated =
        with_section(&page, BEGIN, END, &settings_markdown()).expect("the page's markers");
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

/// Directives deploy/sieved.conf sets to other than the default, on purpose.
const DEPLOYED_DEPARTURES: &[(&str, &str)] = &[
    // The packaged service's data directory (StateDirectory=sieved).
    ("dir", "/var/lib/sieved"),
];

/// Every directive the file sets is a setting of the table, at its default (but for
/// `DEPLOYED_DEPARTURES`), however it is written (`512mb` for 536870912); every directive shown
/// commented out (`# name value`) is one too, with a value it accepts.
#[test]
fn deployed_file_sets_known_settings_to_their_defaults() {
    let path = repo_file("deploy/sieved.conf");
    let conf = std::fs::read_to_string(&path).expect("sieved.conf");
    let from_file = Config::from_args(["sieved", "--config", path.to_str().unwrap()])
        .expect("deploy/sieved.conf starts a server");
    let built_in = Config::from_args(["sieved"]).expect("the defaults start a server");
    let directives = file::parse(&conf).expect("deploy/sieved.conf parses");
    assert!(directives.len() > 40, "deploy/sieved.conf sets too little");
    for directive in &directives {
        let param = find(directive.name.as_bytes())
            .unwrap_or_else(|| panic!("deploy/sieved.conf: unknown `{}`", directive.name));
        let ours = from_file.get_matching(param.name.as_bytes());
        let departure = DEPLOYED_DEPARTURES.iter().find(|(n, _)| *n == param.name);
        match departure {
            Some((_, value)) => assert_eq!(ours, [(param.name, value.to_string())]),
            None => assert_eq!(
                ours,
                built_in.get_matching(param.name.as_bytes()),
                "deploy/sieved.conf sets `{}` to other than its default",
                param.name
            ),
        }
    }
    for line in conf.lines() {
        let Some(example) = line.strip_prefix("# ") else {
            continue;
        };
        let words = file::split_words(example).unwrap_or_default();
        let Some(param) = words.first().and_then(|name| find(name.as_bytes())) else {
            continue;
        };
        // A directive's shape (prose may start with a setting's name too).
        if words[0] != param.name || words.len() < 2 || (!param.list && words.len() != 2) {
            continue;
        }
        (param.load)(&mut Values::defaults(), &words[1..].join(" "))
            .unwrap_or_else(|e| panic!("deploy/sieved.conf: `{example}`: {e:?}"));
    }
}
