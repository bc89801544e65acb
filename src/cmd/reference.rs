//! The book's command pages (`docs/commands/*.md`): each page's reference section is rendered
//! from the command table (syntax, summary, complexity, flags, history, subcommands), between
//! markers, and checked against it, so that the pages and what COMMAND DOCS answers cannot
//! drift. The prose around the section (replies, errors, examples) is written by hand.

use super::spec::{Arg, ArgType, Docs, Group, FIRST_RELEASE};
use super::CommandSpec;
use crate::config::generated_text::{repo_file, with_section};
use std::collections::BTreeSet;

const BEGIN: &str = "<!-- command reference: generated from the command table (src/cmd/); to \
                     regenerate, run `cargo test --lib cmd::reference -- --ignored` -->\n";
const END: &str = "<!-- end of command reference -->\n";

/// A page of the book and the families whose commands it documents, in the table's order.
struct Page {
    file: &'static str,
    families: &'static [&'static [CommandSpec]],
}

const PAGES: &[Page] = &[
    Page {
        file: "docs/commands/bloom.md",
        families: &[super::bloom::SPECS],
    },
    Page {
        file: "docs/commands/counting.md",
        families: &[super::counting::SPECS],
    },
    Page {
        file: "docs/commands/cuckoo.md",
        families: &[super::cuckoo::SPECS],
    },
    Page {
        file: "docs/commands/windowed.md",
        families: &[super::windowed::SPECS],
    },
    Page {
        file: "docs/commands/frontier.md",
        families: &[super::frontier::SPECS],
    },
    Page {
        file: "docs/commands/json.md",
        families: &[super::json::SPECS],
    },
    Page {
        file: "docs/commands/sketches.md",
        families: &[super::cms::SPECS, super::topk::SPECS, super::tdigest::SPECS],
    },
    Page {
        file: "docs/commands/scripting.md",
        families: &[super::scripting::SPECS],
    },
    Page {
        file: "docs/commands/keys.md",
        families: &[super::keys::SPECS, super::migration::SPECS],
    },
    Page {
        file: "docs/commands/strings.md",
        families: &[
            super::strings::SPECS,
            super::counters::SPECS,
            super::bits::SPECS,
            super::bitfield::SPECS,
        ],
    },
    Page {
        file: "docs/commands/collections.md",
        families: &[
            super::lists::SPECS,
            super::lists::MOVE_SPECS,
            super::sets::SPECS,
            super::set_algebra::SPECS,
            super::zsets::SPECS,
            super::hashes::SPECS,
        ],
    },
    Page {
        file: "docs/commands/connection.md",
        families: &[super::connection::SPECS],
    },
    Page {
        file: "docs/commands/transactions.md",
        families: &[super::transaction::SPECS],
    },
    Page {
        file: "docs/commands/pubsub.md",
        families: &[super::pubsub::SPECS],
    },
    Page {
        file: "docs/commands/server.md",
        families: &[
            super::command::SPECS,
            super::admin::SPECS,
            super::module::SPECS,
            super::diagnostics::SPECS,
            super::replication::SPECS,
        ],
    },
];

/// One argument as Redis's documentation writes a syntax line: `[EXPANSION expansion]`,
/// `item [item ...]`, `<NX | XX>`.
fn argument(arg: &Arg) -> String {
    let bare = match arg.kind {
        ArgType::PureToken => arg.token.unwrap_or(arg.name).to_string(),
        ArgType::OneOf(choices) => {
            let choices: Vec<String> = choices.iter().map(argument).collect();
            let choices = choices.join(" | ");
            // A required choice is wrapped so that its bars do not read as the command's.
            if arg.optional || arg.multiple {
                choices
            } else {
                format!("<{choices}>")
            }
        }
        ArgType::Block(parts) => with_token(arg, &arguments(parts)),
        _ => with_token(arg, arg.name),
    };
    let repeated = match (arg.multiple, arg.multiple_token) {
        (false, _) => bare,
        (true, false) => {
            let again = match arg.kind {
                ArgType::PureToken | ArgType::OneOf(_) | ArgType::Block(_) => bare.clone(),
                _ => arg.name.to_string(),
            };
            format!("{bare} [{again} ...]")
        }
        (true, true) => format!("{bare} [{bare} ...]"),
    };
    if arg.optional {
        format!("[{repeated}]")
    } else {
        repeated
    }
}

fn with_token(arg: &Arg, value: &str) -> String {
    match arg.token {
        Some(token) => format!("{token} {value}"),
        None => value.to_string(),
    }
}

fn arguments(args: &[Arg]) -> String {
    args.iter().map(argument).collect::<Vec<_>>().join(" ")
}

fn syntax(name: &str, docs: &Docs) -> String {
    let args = arguments(docs.args);
    if args.is_empty() {
        name.to_string()
    } else {
        format!("{name} {args}")
    }
}

/// Where a command's `since` comes from: sieved's own commands name sieved's first release;
/// a module command's is RedisBloom's version, any other Redis's.
fn since(group: Group, docs: &Docs) -> Option<String> {
    match docs.since {
        "" => None,
        FIRST_RELEASE => Some(format!("sieved {FIRST_RELEASE}")),
        version if group.module().is_some() => Some(format!("RedisBloom {version}")),
        version => Some(format!("Redis {version}")),
    }
}

/// What the table says of a command or subcommand besides its flags: summary, facts, history.
fn describe(out: &mut String, name: &str, group: Group, docs: &Docs, container: bool) {
    // A container's syntax is its subcommands', shown under each.
    if !container {
        out.push_str(&format!("```text\n{}\n```\n\n", syntax(name, docs)));
    }
    if !docs.summary.is_empty() {
        out.push_str(&format!("{}\n\n", sentence(docs.summary)));
    }
    let mut facts = Vec::new();
    if let Some(since) = since(group, docs) {
        facts.push(format!("Since {since}."));
    }
    if let Some(complexity) = docs.complexity {
        facts.push(format!("Complexity: {}", sentence(complexity)));
    }
    if let (Some(since), Some(replaced_by)) = (docs.deprecated_since, docs.replaced_by) {
        facts.push(format!(
            "Deprecated since Redis {since}: {}",
            sentence(replaced_by)
        ));
    }
    if !facts.is_empty() {
        out.push_str(&format!("{}\n\n", facts.join(" ")));
    }
    for (version, change) in docs.history {
        out.push_str(&format!("- {version}: {}\n", sentence(change)));
    }
    if !docs.history.is_empty() {
        out.push('\n');
    }
}

/// The text with a full stop, as the table's summaries mostly lack one.
fn sentence(text: &str) -> String {
    let text = text.trim();
    if text.ends_with(['.', '!', '?', ':']) || text.ends_with("```") {
        text.to_string()
    } else {
        format!("{text}.")
    }
}

fn command_markdown(spec: &CommandSpec) -> String {
    let name = spec.name.to_ascii_uppercase();
    let mut out = format!("### {name}\n\n");
    describe(
        &mut out,
        &name,
        spec.group,
        &spec.docs,
        !spec.subcommands.is_empty(),
    );
    let flags: Vec<&str> = spec.flags.names().collect();
    let acl: Vec<&str> = spec.acl_categories().names().collect();
    let mut line = Vec::new();
    if !flags.is_empty() {
        line.push(format!("Flags: {}.", flags.join(", ")));
    }
    if !acl.is_empty() {
        line.push(format!("ACL categories: {}.", acl.join(", ")));
    }
    if !line.is_empty() {
        out.push_str(&format!("{}\n\n", line.join(" ")));
    }
    for (sub, docs) in spec.subcommands {
        // The table names a subcommand as COMMAND does, `config|get`.
        let sub = sub.rsplit('|').next().unwrap_or(sub);
        let full = format!("{name} {}", sub.to_ascii_uppercase());
        out.push_str(&format!("#### {full}\n\n"));
        describe(&mut out, &full, spec.group, docs, false);
    }
    out
}

/// A page's generated section: every command of its families, in the table's order.
fn page_markdown(page: &Page) -> String {
    page.families
        .iter()
        .flat_map(|family| family.iter())
        .map(command_markdown)
        .collect::<Vec<_>>()
        .join("")
}

#[test]
fn pages_show_the_command_table() {
    for page in PAGES {
        let text = std::fs::read_to_string(repo_file(page.file)).expect(page.file);
        let updated = with_section(&text, BEGIN, END, &format!("\n{}", page_markdown(page)))
            .unwrap_or_else(|| panic!("{}: the command reference's markers", page.file));
        assert!(
            updated == text,
            "{}'s command reference differs from the command table; regenerate it with \
             `cargo test --lib cmd::reference -- --ignored`",
            page.file
        );
    }
}

#[test]
fn every_command_has_one_page() {
    let mut documented = BTreeSet::new();
    for spec in PAGES
        .iter()
        .flat_map(|page| page.families.iter().copied().flatten())
    {
        assert!(
            documented.insert(spec.name),
            "{} is on two pages",
            spec.name
        );
    }
    let all: BTreeSet<&str> = super::COMMANDS.iter().map(|spec| spec.name).collect();
    assert_eq!(documented, all, "a family of commands has no page in PAGES");
}

#[test]
fn syntax_reads_as_redis_writes_it() {
    use super::spec::{block, integer, key, one_of, pure_token, string};
    const DOCS: Docs = Docs::new("").args(&[
        key("key"),
        block("expansion", &[integer("expansion")])
            .token("EXPANSION")
            .optional(),
        one_of(
            "condition",
            &[pure_token("nx", "NX"), pure_token("xx", "XX")],
        ),
        one_of(
            "condition",
            &[pure_token("gt", "GT"), pure_token("lt", "LT")],
        )
        .optional(),
        string("item").multiple(),
    ]);
    assert_eq!(
        syntax("BF.X", &DOCS),
        "BF.X key [EXPANSION expansion] <NX | XX> [GT | LT] item [item ...]"
    );
}

#[test]
#[ignore = "writes docs/commands/*.md: run it to regenerate the command reference"]
fn regenerate_the_command_pages() {
    for page in PAGES {
        let path = repo_file(page.file);
        let text = std::fs::read_to_string(&path).expect(page.file);
        let updated = with_section(&text, BEGIN, END, &format!("\n{}", page_markdown(page)))
            .unwrap_or_else(|| panic!("{}: the command reference's markers", page.file));
        std::fs::write(path, updated).expect(page.file);
    }
}
