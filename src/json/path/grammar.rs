//! RedisJSON's JSONPath grammar, parsed as its `pest` parser parses it, so that the same
//! texts are accepted and a text that is not gets the same message: `pest` reports the
//! farthest position any rule failed at and the rules that failed there (a rule whose
//! children made a single attempt yields to that child), sorted in the grammar's order.
//!
//! The grammar (RedisJSON 2.8's `grammar.pest`), where `_{}` rules leave no token, `@{}` rules
//! are atomic (no spaces skipped inside, nothing tracked below them) and, elsewhere, spaces may
//! separate any two parts of a sequence:
//!
//! ```text
//! literal = @{('a'..'z'|'A'..'Z'|'0'..'9'|"-"|"_"|"`"|"~"|"+"|"#"|"%"|"$"|"^"|"/"|":")+}
//! string = _{("'" ~ string_value ~ "'") | ("\"" ~ string_value ~ "\"")
//!           | ("\"" ~ string_value_escape_1 ~ "\"") | ("'" ~ string_value_escape_2 ~ "'")}
//! string_value = @{((!("\""|"\\"|"'") ~ ANY)+)*}
//! string_value_escape_1 = @{((!("\""|"\\") ~ ANY)+ | "\\" ~ ("\"" | "\\"))*}
//! string_value_escape_2 = @{((!("'"|"\\") ~ ANY)+ | "\\" ~ ("'" | "\\"))*}
//! string_list = {string ~ ("," ~ string)*}
//! pos_number = @{'1'..'9' ~ '0'..'9'*}
//! number = @{"-"? ~ '1'..'9' ~ '0'..'9'* | "-"? ~ '0'..'9'}
//! decimal = @{number ~ ("." ~ '0'..'9'+)?}
//! numbers_list = {number ~ ("," ~ number)*}
//! numbers_range = {(full_range | right_range | all_range | left_range)}
//! right_range = {":" ~ number ~ ((":" ~ pos_number) | ":")?}
//! all_range = {":" ~ ((":" ~ pos_number) | ":")?}
//! left_range = {number ~ ":" ~ ((":" ~ pos_number) | ":")?}
//! full_range = {number ~ ":" ~ number ~ ((":" ~ pos_number) | ":")?}
//! from_current = {"@" ~ root?}
//! from_root = {"$" ~ root?}
//! op = _{ge | gt | le | lt | eq | ne | re}          (">=" ">" "<=" "<" "==" "!=" "=~")
//! term = _{from_current | from_root | decimal | string | boolean_true | boolean_false | null}
//! single_filter = {term ~ op ~ term | term}
//! inner_filter = _{single_filter | "(" ~ filter ~ ")"}
//! filter = {inner_filter ~ ((and | or) ~ inner_filter)*}   (and = {"&&"}, or = {"||"})
//! all = {"*"}
//! full_scan = {".."}
//! bracket = _{numbers_range | numbers_list | string_list | all | "?" ~ filter}
//! element = _{"." ~ literal | full_scan ~ (literal | all | "[" ~ bracket ~ "]")
//!            | "." ~ all | ("."? ~ "[" ~ bracket ~ "]")}
//! root = {(element | literal | all) ~ (element)*}
//! query = _{SOI ~ "$" ~ root? ~ EOI}
//! ```

use std::fmt;

/// The rules that leave tokens or show in messages, in the grammar's order (the order `pest`
/// sorts a message's list by; the silent rules between them change nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Rule {
    Eoi,
    Literal,
    StringEscape,
    StringValue,
    StringValueEscape1,
    StringValueEscape2,
    StringList,
    PosNumber,
    Number,
    Decimal,
    NumbersList,
    NumbersRange,
    RightRange,
    AllRange,
    LeftRange,
    FullRange,
    FromCurrent,
    FromRoot,
    Ge,
    Gt,
    Le,
    Lt,
    Eq,
    Ne,
    Re,
    BooleanTrue,
    BooleanFalse,
    Null,
    SingleFilter,
    And,
    Or,
    Filter,
    All,
    FullScan,
    Root,
}

impl fmt::Display for Rule {
    /// RedisJSON's names for rules in its messages; the others by their grammar name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rule::Literal => "<string>",
            Rule::All => "'*'",
            Rule::FullScan => "'..'",
            Rule::NumbersList => "'<number>[,<number>,...]'",
            Rule::StringList => "'<string>[,<string>,...]'",
            Rule::NumbersRange => "['start:end:steps']",
            Rule::Number => "'<number>'",
            Rule::Filter => "'[?(filter_expression)]'",
            Rule::Eoi => "EOI",
            Rule::StringEscape => "string_escape",
            Rule::StringValue => "string_value",
            Rule::StringValueEscape1 => "string_value_escape_1",
            Rule::StringValueEscape2 => "string_value_escape_2",
            Rule::PosNumber => "pos_number",
            Rule::Decimal => "decimal",
            Rule::RightRange => "right_range",
            Rule::AllRange => "all_range",
            Rule::LeftRange => "left_range",
            Rule::FullRange => "full_range",
            Rule::FromCurrent => "from_current",
            Rule::FromRoot => "from_root",
            Rule::Ge => "ge",
            Rule::Gt => "gt",
            Rule::Le => "le",
            Rule::Lt => "lt",
            Rule::Eq => "eq",
            Rule::Ne => "ne",
            Rule::Re => "re",
            Rule::BooleanTrue => "boolean_true",
            Rule::BooleanFalse => "boolean_false",
            Rule::Null => "null",
            Rule::SingleFilter => "single_filter",
            Rule::And => "and",
            Rule::Or => "or",
            Rule::Root => "root",
        })
    }
}

/// One token: a rule that matched, the bytes it spans, and how many tokens nest inside it
/// (they follow it directly).
#[derive(Debug, Clone, Copy)]
pub(super) struct Token {
    pub rule: Rule,
    pub start: usize,
    pub end: usize,
    pub descendants: usize,
}

/// The rules parsed, in document order, each followed by its descendants.
pub(super) struct Tokens<'i> {
    pub input: &'i str,
    pub tokens: Vec<Token>,
}

impl<'i> Tokens<'i> {
    pub(super) fn text(&self, token: usize) -> &'i str {
        let t = self.tokens[token];
        &self.input[t.start..t.end]
    }

    pub(super) fn rule(&self, token: usize) -> Rule {
        self.tokens[token].rule
    }

    /// The indexes of the tokens directly inside `token` (or at the top for `None`).
    pub(super) fn children(&self, token: Option<usize>) -> Vec<usize> {
        let (mut at, end) = match token {
            Some(t) => (t + 1, t + 1 + self.tokens[t].descendants),
            None => (0, self.tokens.len()),
        };
        let mut children = Vec::new();
        while at < end {
            children.push(at);
            at += 1 + self.tokens[at].descendants;
        }
        children
    }
}

/// Work a parse may do: calls per byte of path, plus a floor. The grammar backtracks (a
/// filter's term is parsed again when no operator follows), so nested filters could cost
/// exponential time without it.
const CALLS_PER_BYTE: usize = 256;
const CALLS_FLOOR: usize = 100_000;
/// How deeply rules may nest (brackets and parentheses inside filters), to bound the stack.
const MAX_RULE_DEPTH: usize = 256;

/// A path that does not parse: RedisJSON's message, `Error occurred at position N, Error at
/// position N: ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub position: usize,
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Error occurred at position {0}, Error at position {0}: {1}",
            self.position, self.message
        )
    }
}

/// Parses a JSONPath text (`query` in the grammar).
pub(super) fn parse(input: &str) -> Result<Tokens<'_>, SyntaxError> {
    let mut p = Parser {
        input,
        pos: 0,
        atomic: false,
        attempt_pos: 0,
        attempts: Vec::new(),
        tokens: Vec::new(),
        calls_left: CALLS_FLOOR.saturating_add(input.len().saturating_mul(CALLS_PER_BYTE)),
        depth: 0,
        exhausted: false,
    };
    let matched = p.sequence(|p| {
        p.pos == 0
            && p.then_skip()
            && p.literal_str("$")
            && p.then_skip()
            && p.optional(Parser::root)
            && p.then_skip()
            && p.rule(Rule::Eoi, |p| p.pos == p.input.len())
    });
    if p.exhausted {
        return Err(SyntaxError {
            position: p.attempt_pos,
            message: "call limit reached".to_string(),
        });
    }
    if matched {
        return Ok(Tokens {
            input,
            tokens: p.tokens,
        });
    }
    p.attempts.sort();
    p.attempts.dedup();
    let message = if p.attempts.is_empty() {
        "parsing error".to_string()
    } else {
        let names: Vec<String> = p.attempts.iter().map(Rule::to_string).collect();
        format!("expected one of the following: {}", names.join(", "))
    };
    Err(SyntaxError {
        position: p.attempt_pos,
        message,
    })
}

struct Parser<'i> {
    input: &'i str,
    pos: usize,
    atomic: bool,
    /// The farthest position a tracked rule failed at, and the rules tracked there.
    attempt_pos: usize,
    attempts: Vec<Rule>,
    tokens: Vec<Token>,
    calls_left: usize,
    depth: usize,
    /// The work or depth limit was reached: everything fails from then on.
    exhausted: bool,
}

impl Parser<'_> {
    fn spend(&mut self) -> bool {
        if self.calls_left == 0 || self.depth > MAX_RULE_DEPTH {
            self.exhausted = true;
        }
        self.calls_left = self.calls_left.saturating_sub(1);
        !self.exhausted
    }

    fn attempts_at(&self, pos: usize) -> usize {
        if self.attempt_pos == pos {
            self.attempts.len()
        } else {
            0
        }
    }

    /// A named rule: leaves a token unless inside an atomic rule, and on failure records the
    /// attempt as `pest` does.
    fn rule(&mut self, rule: Rule, body: impl FnOnce(&mut Self) -> bool) -> bool {
        if !self.spend() {
            return false;
        }
        let start = self.pos;
        let first_token = self.tokens.len();
        let attempts_index = if start == self.attempt_pos {
            self.attempts.len()
        } else {
            0
        };
        let queued = !self.atomic;
        if queued {
            self.tokens.push(Token {
                rule,
                start,
                end: start,
                descendants: 0,
            });
        }
        let previous_attempts = self.attempts_at(start);
        self.depth += 1;
        let matched = body(self);
        self.depth -= 1;
        if matched {
            if queued {
                let descendants = self.tokens.len() - first_token - 1;
                let token = &mut self.tokens[first_token];
                token.end = self.pos;
                token.descendants = descendants;
            }
        } else {
            self.track(rule, start, attempts_index, previous_attempts);
            if queued {
                self.tokens.truncate(first_token);
            }
        }
        matched
    }

    fn track(&mut self, rule: Rule, pos: usize, attempts_index: usize, previous: usize) {
        if self.atomic {
            return;
        }
        // A rule whose children made exactly one attempt here leaves that attempt to speak.
        let current = self.attempts_at(pos);
        if current > previous && current - previous == 1 {
            return;
        }
        if pos == self.attempt_pos {
            self.attempts.truncate(attempts_index);
        }
        if pos > self.attempt_pos {
            self.attempts.clear();
            self.attempt_pos = pos;
        }
        if pos == self.attempt_pos {
            self.attempts.push(rule);
        }
    }

    /// All or nothing: on failure the position and tokens go back to where they were.
    fn sequence(&mut self, body: impl FnOnce(&mut Self) -> bool) -> bool {
        if !self.spend() {
            return false;
        }
        let start = self.pos;
        let tokens = self.tokens.len();
        let matched = body(self);
        if !matched {
            self.pos = start;
            self.tokens.truncate(tokens);
        }
        matched
    }

    fn optional(&mut self, body: impl FnOnce(&mut Self) -> bool) -> bool {
        if self.spend() {
            body(self);
        }
        true
    }

    fn repeat(&mut self, mut body: impl FnMut(&mut Self) -> bool) -> bool {
        while self.spend() && body(self) {}
        true
    }

    /// `x*` outside atomic rules: spaces may separate the repetitions.
    fn star(&mut self, body: impl Fn(&mut Self) -> bool) -> bool {
        self.sequence(|p| {
            p.optional(|p| {
                body(p)
                    && p.repeat(|p| {
                        p.sequence(|p| {
                            p.skip();
                            body(p)
                        })
                    })
            })
        })
    }

    fn atomic(&mut self, body: impl FnOnce(&mut Self) -> bool) -> bool {
        if !self.spend() {
            return false;
        }
        let outer = self.atomic;
        self.atomic = true;
        let matched = body(self);
        self.atomic = outer;
        matched
    }

    /// The implicit `WHITESPACE*` between the parts of a sequence (spaces only).
    fn skip(&mut self) {
        if !self.atomic {
            while self.input.as_bytes().get(self.pos) == Some(&b' ') {
                self.pos += 1;
            }
        }
    }

    fn then_skip(&mut self) -> bool {
        self.skip();
        true
    }

    fn literal_str(&mut self, s: &str) -> bool {
        if self.input[self.pos..].starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn peek_char(&self) -> Option<char> {
        self.input[self.pos..].chars().next()
    }

    fn char_if(&mut self, accept: impl Fn(char) -> bool) -> bool {
        match self.peek_char() {
            Some(c) if accept(c) => {
                self.pos += c.len_utf8();
                true
            }
            _ => false,
        }
    }

    fn digit(&mut self) -> bool {
        self.char_if(|c| c.is_ascii_digit())
    }

    fn nonzero_digit(&mut self) -> bool {
        self.char_if(|c| ('1'..='9').contains(&c))
    }

    fn literal(&mut self) -> bool {
        fn literal_char(c: char) -> bool {
            c.is_ascii_alphanumeric() || "-_`~+#%$^/:".contains(c)
        }
        self.rule(Rule::Literal, |p| {
            p.atomic(|p| {
                p.sequence(|p| p.char_if(literal_char) && p.repeat(|p| p.char_if(literal_char)))
            })
        })
    }

    /// A quoted string: the quote, its contents by `inner`, the quote (spaces allowed around
    /// the contents, as the grammar's sequence allows them).
    fn quoted(&mut self, quote: &str, inner: fn(&mut Self) -> bool) -> bool {
        self.sequence(|p| {
            p.literal_str(quote)
                && p.then_skip()
                && inner(p)
                && p.then_skip()
                && p.literal_str(quote)
        })
    }

    fn string(&mut self) -> bool {
        self.quoted("'", Parser::string_value)
            || self.quoted("\"", Parser::string_value)
            || self.quoted("\"", Parser::string_value_escape_1)
            || self.quoted("'", Parser::string_value_escape_2)
    }

    fn string_value(&mut self) -> bool {
        self.rule(Rule::StringValue, |p| {
            p.atomic(|p| p.repeat(|p| p.char_if(|c| !matches!(c, '"' | '\\' | '\''))))
        })
    }

    fn escaped_run(&mut self, rule: Rule, quote: char) -> bool {
        self.rule(rule, |p| {
            p.atomic(|p| {
                p.repeat(|p| {
                    p.char_if(|c| c != quote && c != '\\')
                        || p.sequence(|p| {
                            p.rule(Rule::StringEscape, |p| p.atomic(|p| p.literal_str("\\")))
                                && p.char_if(|c| c == quote || c == '\\')
                        })
                })
            })
        })
    }

    fn string_value_escape_1(&mut self) -> bool {
        self.escaped_run(Rule::StringValueEscape1, '"')
    }

    fn string_value_escape_2(&mut self) -> bool {
        self.escaped_run(Rule::StringValueEscape2, '\'')
    }

    fn string_list(&mut self) -> bool {
        self.rule(Rule::StringList, |p| {
            p.sequence(|p| {
                p.string()
                    && p.then_skip()
                    && p.star(|p| p.sequence(|p| p.literal_str(",") && p.then_skip() && p.string()))
            })
        })
    }

    fn pos_number(&mut self) -> bool {
        self.rule(Rule::PosNumber, |p| {
            p.atomic(|p| p.sequence(|p| p.nonzero_digit() && p.repeat(Parser::digit)))
        })
    }

    fn number(&mut self) -> bool {
        self.rule(Rule::Number, |p| {
            p.atomic(|p| {
                p.sequence(|p| {
                    p.optional(|p| p.literal_str("-"))
                        && (p.sequence(|p| p.nonzero_digit() && p.repeat(Parser::digit))
                            || p.digit())
                })
            })
        })
    }

    fn decimal(&mut self) -> bool {
        self.rule(Rule::Decimal, |p| {
            p.atomic(|p| {
                p.sequence(|p| {
                    p.number()
                        && p.optional(|p| {
                            p.sequence(|p| {
                                p.literal_str(".") && p.digit() && p.repeat(Parser::digit)
                            })
                        })
                })
            })
        })
    }

    fn numbers_list(&mut self) -> bool {
        self.rule(Rule::NumbersList, |p| {
            p.sequence(|p| {
                p.number()
                    && p.then_skip()
                    && p.star(|p| p.sequence(|p| p.literal_str(",") && p.then_skip() && p.number()))
            })
        })
    }

    /// `((":" ~ pos_number) | ":")?`
    fn range_step(&mut self) -> bool {
        self.optional(|p| {
            p.sequence(|p| p.literal_str(":") && p.then_skip() && p.pos_number())
                || p.literal_str(":")
        })
    }

    fn numbers_range(&mut self) -> bool {
        self.rule(Rule::NumbersRange, |p| {
            p.rule(Rule::FullRange, |p| {
                p.sequence(|p| {
                    p.number()
                        && p.then_skip()
                        && p.literal_str(":")
                        && p.then_skip()
                        && p.number()
                        && p.then_skip()
                        && p.range_step()
                })
            }) || p.rule(Rule::RightRange, |p| {
                p.sequence(|p| {
                    p.literal_str(":")
                        && p.then_skip()
                        && p.number()
                        && p.then_skip()
                        && p.range_step()
                })
            }) || p.rule(Rule::AllRange, |p| {
                p.sequence(|p| p.literal_str(":") && p.then_skip() && p.range_step())
            }) || p.rule(Rule::LeftRange, |p| {
                p.sequence(|p| {
                    p.number()
                        && p.then_skip()
                        && p.literal_str(":")
                        && p.then_skip()
                        && p.range_step()
                })
            })
        })
    }

    fn select_term(&mut self, rule: Rule, sigil: &str) -> bool {
        self.rule(rule, |p| {
            p.sequence(|p| p.literal_str(sigil) && p.then_skip() && p.optional(Parser::root))
        })
    }

    fn term(&mut self) -> bool {
        self.select_term(Rule::FromCurrent, "@")
            || self.select_term(Rule::FromRoot, "$")
            || self.decimal()
            || self.string()
            || self.keyword(Rule::BooleanTrue, "true")
            || self.keyword(Rule::BooleanFalse, "false")
            || self.keyword(Rule::Null, "null")
    }

    fn keyword(&mut self, rule: Rule, word: &str) -> bool {
        self.rule(rule, |p| p.atomic(|p| p.literal_str(word)))
    }

    fn op(&mut self) -> bool {
        [
            (Rule::Ge, ">="),
            (Rule::Gt, ">"),
            (Rule::Le, "<="),
            (Rule::Lt, "<"),
            (Rule::Eq, "=="),
            (Rule::Ne, "!="),
            (Rule::Re, "=~"),
        ]
        .into_iter()
        .any(|(rule, text)| self.keyword(rule, text))
    }

    fn single_filter(&mut self) -> bool {
        self.rule(Rule::SingleFilter, |p| {
            p.sequence(|p| p.term() && p.then_skip() && p.op() && p.then_skip() && p.term())
                || p.term()
        })
    }

    fn inner_filter(&mut self) -> bool {
        self.single_filter()
            || self.sequence(|p| {
                p.literal_str("(")
                    && p.then_skip()
                    && p.filter()
                    && p.then_skip()
                    && p.literal_str(")")
            })
    }

    fn filter(&mut self) -> bool {
        self.rule(Rule::Filter, |p| {
            p.sequence(|p| {
                p.inner_filter()
                    && p.then_skip()
                    && p.star(|p| {
                        p.sequence(|p| {
                            (p.rule(Rule::And, |p| p.literal_str("&&"))
                                || p.rule(Rule::Or, |p| p.literal_str("||")))
                                && p.then_skip()
                                && p.inner_filter()
                        })
                    })
            })
        })
    }

    fn all(&mut self) -> bool {
        self.rule(Rule::All, |p| p.literal_str("*"))
    }

    fn bracket(&mut self) -> bool {
        self.numbers_range()
            || self.numbers_list()
            || self.string_list()
            || self.all()
            || self.sequence(|p| p.literal_str("?") && p.then_skip() && p.filter())
    }

    /// `"[" ~ bracket ~ "]"`
    fn bracketed(&mut self) -> bool {
        self.sequence(|p| {
            p.literal_str("[")
                && p.then_skip()
                && p.bracket()
                && p.then_skip()
                && p.literal_str("]")
        })
    }

    fn element(&mut self) -> bool {
        self.sequence(|p| p.literal_str(".") && p.then_skip() && p.literal())
            || self.sequence(|p| {
                p.rule(Rule::FullScan, |p| p.literal_str(".."))
                    && p.then_skip()
                    && (p.literal() || p.all() || p.bracketed())
            })
            || self.sequence(|p| p.literal_str(".") && p.then_skip() && p.all())
            || self.sequence(|p| {
                p.optional(|p| p.literal_str("."))
                    && p.then_skip()
                    && p.literal_str("[")
                    && p.then_skip()
                    && p.bracket()
                    && p.then_skip()
                    && p.literal_str("]")
            })
    }

    fn root(&mut self) -> bool {
        self.rule(Rule::Root, |p| {
            p.sequence(|p| {
                (p.element() || p.literal() || p.all()) && p.then_skip() && p.star(Parser::element)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(path: &str) -> String {
        match parse(path) {
            Ok(_) => "ok".to_string(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn reports_what_redisjson_reports() {
        for (path, expected) in [
            ("$.a[1:2:0]", "Error occurred at position 8, Error at position 8: expected one of the following: pos_number"),
            ("$.a[?(@.x> >1)]", "Error occurred at position 11, Error at position 11: expected one of the following: decimal, from_current, from_root, boolean_true, boolean_false, null"),
            ("$.arr[abc]", "Error occurred at position 6, Error at position 6: expected one of the following: '<string>[,<string>,...]', '<number>', ['start:end:steps'], '*'"),
            ("$[", "Error occurred at position 2, Error at position 2: expected one of the following: '<string>[,<string>,...]', '<number>', ['start:end:steps'], '*'"),
            ("$.a..", "Error occurred at position 5, Error at position 5: expected one of the following: <string>, '*'"),
            ("$", "ok"),
            ("$ .a", "ok"),
            ("$..*", "ok"),
            ("$['a','b'][0,1][-1:][:2][1:3:2][*]", "ok"),
            ("$..[?(@.a>1 && (@.b=~\"x\" || $.c))]", "ok"),
            ("$a", "ok"),
        ] {
            assert_eq!(error(path), expected, "{path}");
        }
    }

    #[test]
    fn hostile_paths_are_bounded() {
        let deep = format!("$[?{}@{}]", "(".repeat(5000), ")".repeat(5000));
        assert!(error(&deep).contains("call limit reached"));
        let nested = "$".to_string() + &"[?(@".repeat(40) + &"==1)]".repeat(40);
        let _ = error(&nested);
        let long = "$".to_string() + &".a".repeat(100_000);
        assert_eq!(error(&long), "ok");
    }
}
