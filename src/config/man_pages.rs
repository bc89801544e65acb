//! The man pages' settings, generated from the table as the book's table is: sieved.conf(5)
//! whole, and the OPTIONS of sieved(1) between its markers. A test fails when a page in
//! deploy/debian differs from what the table gives; the ignored test writes them again.

use super::generated_text::{repo_file, with_section};
use super::table::{Access, PARAMS};

const CONF_PAGE: &str = "deploy/debian/sieved.conf.5";
const COMMAND_PAGE: &str = "deploy/debian/sieved.1";

const BEGIN: &str = ".\\\" options: generated from src/config/table.rs; to regenerate, run \
                     `cargo test --lib config::man_pages -- --ignored`\n";
const END: &str = ".\\\" end of options\n";

/// Text as roff prints it: backslashes and dashes escaped, and no line starting with a dot
/// or a quote, which roff would read as a request.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

fn default_text(default: &str) -> String {
    match default {
        "" => "none".to_string(),
        default => format!("\\fB{}\\fR", roff(default)),
    }
}

fn runtime(access: &Access) -> &'static str {
    match access {
        Access::Fixed { .. } => "fixed at start-up",
        Access::Runtime { .. } | Access::Password => "CONFIG SET changes it at run time",
    }
}

/// sieved.conf(5): the file's syntax, then every directive.
fn conf_page() -> String {
    let mut out = String::from(
        ".TH SIEVED.CONF 5 \"\" \"sieved\" \"File Formats\"\n\
         .SH NAME\n\
         sieved.conf \\- the configuration file of sieved\n\
         .SH SYNOPSIS\n\
         .I /etc/sieved/sieved.conf\n\
         .SH DESCRIPTION\n\
         The file is read at start\\-up, given as the first argument\n\
         .RB ( \"sieved /etc/sieved/sieved.conf\" ,\n\
         as\n\
         .B redis\\-server\n\
         takes redis.conf) or with\n\
         .BR \\-\\-config .\n\
         Each line is a directive and its value, separated by spaces, as in redis.conf; a value\n\
         with spaces is quoted; lines starting with # are comments. Environment variables\n\
         (SIEVED_NAME) and flags (\\-\\-name) win over the file. CONFIG GET reads every directive\n\
         under its name, CONFIG SET changes those marked so, and CONFIG REWRITE writes the\n\
         running values of those back into the file in place, keeping everything else.\n\
         .PP\n\
         Memory values take Redis's units, case\\-insensitive: 1k is 1000 bytes, 1kb 1024, 1m\n\
         10^6, 1mb 2^20, 1g 10^9, 1gb 2^30. Times are in the unit the directive names.\n\
         .SH DIRECTIVES\n",
    );
    for param in PARAMS {
        out.push_str(&format!(
            ".TP\n\\fB{}\\fR \\fI{}\\fR\n{}\n.br\nDefault: {}; {}; flag \\fB\\-\\-{}\\fR, \
             environment \\fB{}\\fR.\n",
            roff(param.name),
            roff(param.kind),
            roff(param.help),
            default_text(param.default),
            runtime(&param.access),
            roff(param.flag),
            roff(param.env()),
        ));
    }
    out.push_str(
        ".SH FILES\n\
         .TP\n\
         .I /etc/sieved/sieved.conf\n\
         The configuration of sieved.service.\n\
         .TP\n\
         .I /etc/sieved/NAME.conf\n\
         The configuration of the templated unit sieved@NAME.service.\n\
         .SH SEE ALSO\n\
         .BR sieved (1),\n\
         .BR redis\\-cli (1)\n",
    );
    out
}

/// The OPTIONS entries of sieved(1): one per flag.
fn command_options() -> String {
    let mut out = String::new();
    for param in PARAMS {
        out.push_str(&format!(
            ".TP\n.BI \\-\\-{} \" {}\"\n{} Default: {}.\n",
            roff(param.flag),
            roff(param.kind),
            roff(param.help),
            default_text(param.default),
        ));
    }
    out
}

#[test]
fn man_pages_show_the_settings_of_the_table() {
    let conf = std::fs::read_to_string(repo_file(CONF_PAGE)).expect(CONF_PAGE);
    let command = std::fs::read_to_string(repo_file(COMMAND_PAGE)).expect(COMMAND_PAGE);
    let options =
        with_section(&command, BEGIN, END, &command_options()).expect("sieved.1's option markers");
    assert!(
        conf == conf_page() && options == command,
        "the man pages differ from src/config/table.rs; regenerate them with \
         `cargo test --lib config::man_pages -- --ignored`"
    );
}

#[test]
#[ignore = "writes the man pages in deploy/debian; run by hand after changing the table"]
fn regenerate_the_man_pages() {
    std::fs::write(repo_file(CONF_PAGE), conf_page()).expect(CONF_PAGE);
    let command = std::fs::read_to_string(repo_file(COMMAND_PAGE)).expect(COMMAND_PAGE);
    let updated =
        with_section(&command, BEGIN, END, &command_options()).expect("sieved.1's option markers");
    std::fs::write(repo_file(COMMAND_PAGE), updated).expect(COMMAND_PAGE);
}
