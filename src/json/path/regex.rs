//! The regular expressions of JSONPath's `=~`. RedisJSON compiles the pattern with Rust's
//! `regex` crate and tests for a match anywhere in the string; a pattern that does not compile
//! matches nothing. This is the common part of that syntax (literals and escapes, `.`, classes
//! with ranges, negation, Perl and ASCII classes, `^ $ \A \z \b \B`, groups, alternation, the
//! greedy and lazy repetitions, and the flags `i m s U` inline), run as a Pike VM: time linear
//! in the text times the pattern, whatever the pattern. Unicode property classes (`\p{..}`)
//! are not supported and, as an invalid pattern would, match nothing.

use std::iter::Peekable;
use std::str::Chars;

/// Patterns that would compile to more instructions than this are refused (`{n}` repetitions
/// multiply).
const MAX_PROGRAM: usize = 10_000;

#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    ignore_case: bool,
    multi_line: bool,
    dot_all: bool,
}

#[derive(Debug, Clone)]
enum ClassItem {
    Range(char, char),
    Digit(bool),
    Word(bool),
    Space(bool),
}

#[derive(Debug, Clone)]
struct Class {
    items: Vec<ClassItem>,
    negated: bool,
    ignore_case: bool,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl Class {
    fn matches(&self, c: char) -> bool {
        let hit = |c: char| {
            self.items.iter().any(|item| match *item {
                ClassItem::Range(lo, hi) => lo <= c && c <= hi,
                ClassItem::Digit(positive) => c.is_numeric() == positive,
                ClassItem::Word(positive) => is_word(c) == positive,
                ClassItem::Space(positive) => c.is_whitespace() == positive,
            })
        };
        let found = hit(c) || (self.ignore_case && (fold(c).into_iter().any(hit)));
        found != self.negated
    }
}

/// The other cases of `c`, for case-insensitive matching.
fn fold(c: char) -> Vec<char> {
    let mut other: Vec<char> = c.to_lowercase().chain(c.to_uppercase()).collect();
    other.retain(|&o| o != c);
    other
}

#[derive(Debug, Clone, Copy)]
enum Assertion {
    Start,
    End,
    LineStart,
    LineEnd,
    WordBoundary,
    NotWordBoundary,
}

#[derive(Debug, Clone)]
enum Node {
    Char(char, bool),
    Any(bool),
    Class(Class),
    Assert(Assertion),
    Concat(Vec<Node>),
    Alternate(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

struct Parser<'a> {
    chars: Peekable<Chars<'a>>,
    flags: Flags,
}

impl Parser<'_> {
    fn alternation(&mut self, depth: usize) -> Option<Node> {
        if depth > 100 {
            return None;
        }
        let mut branches = vec![self.concatenation(depth)?];
        while self.chars.peek() == Some(&'|') {
            self.chars.next();
            branches.push(self.concatenation(depth)?);
        }
        Some(if branches.len() == 1 {
            branches.pop().expect("one branch")
        } else {
            Node::Alternate(branches)
        })
    }

    fn concatenation(&mut self, depth: usize) -> Option<Node> {
        let mut items = Vec::new();
        while let Some(&c) = self.chars.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = match self.atom(depth)? {
                Some(atom) => atom,
                None => continue,
            };
            let atom = self.repetition(atom)?;
            items.push(atom);
        }
        Some(Node::Concat(items))
    }

    fn number(&mut self) -> Option<u32> {
        let mut digits = String::new();
        while let Some(&c) = self.chars.peek() {
            if !c.is_ascii_digit() {
                break;
            }
            digits.push(c);
            self.chars.next();
        }
        digits.parse().ok()
    }

    fn repetition(&mut self, atom: Node) -> Option<Node> {
        let mut atom = atom;
        loop {
            let (min, max) = match self.chars.peek() {
                Some('*') => (0, None),
                Some('+') => (1, None),
                Some('?') => (0, Some(1)),
                Some('{') => {
                    self.chars.next();
                    let min = self.number()?;
                    let max = match self.chars.next()? {
                        '}' => Some(min),
                        ',' if self.chars.peek() == Some(&'}') => {
                            self.chars.next();
                            None
                        }
                        ',' => {
                            let max = self.number()?;
                            (self.chars.next()? == '}').then_some(())?;
                            Some(max)
                        }
                        _ => return None,
                    };
                    if max.is_some_and(|max| max < min) {
                        return None;
                    }
                    if matches!(self.chars.peek(), Some('?')) {
                        self.chars.next();
                    }
                    if matches!(atom, Node::Assert(_)) {
                        return None;
                    }
                    atom = Node::Repeat {
                        node: Box::new(atom),
                        min,
                        max,
                    };
                    continue;
                }
                _ => return Some(atom),
            };
            self.chars.next();
            // Laziness changes which match is found, never whether one is.
            if matches!(self.chars.peek(), Some('?')) {
                self.chars.next();
            }
            if matches!(atom, Node::Repeat { .. }) {
                return None;
            }
            atom = Node::Repeat {
                node: Box::new(atom),
                min,
                max,
            };
        }
    }

    /// One atom, or `None` inside for a flag group that only changed flags.
    fn atom(&mut self, depth: usize) -> Option<Option<Node>> {
        let c = self.chars.next()?;
        let case = self.flags.ignore_case;
        Some(Some(match c {
            '.' => Node::Any(self.flags.dot_all),
            '^' => Node::Assert(if self.flags.multi_line {
                Assertion::LineStart
            } else {
                Assertion::Start
            }),
            '$' => Node::Assert(if self.flags.multi_line {
                Assertion::LineEnd
            } else {
                Assertion::End
            }),
            '[' => Node::Class(self.class()?),
            '(' => return self.group(depth),
            '\\' => self.escape(false)?.into_node(case),
            '*' | '+' | '?' | '{' | ')' => return None,
            c => Node::Char(c, case),
        }))
    }

    fn group(&mut self, depth: usize) -> Option<Option<Node>> {
        let saved = self.flags;
        if self.chars.peek() == Some(&'?') {
            self.chars.next();
            match self.chars.peek()? {
                'P' | '<' => {
                    if self.chars.next()? == 'P' && self.chars.next()? != '<' {
                        return None;
                    }
                    loop {
                        match self.chars.next()? {
                            '>' => break,
                            c if c.is_alphanumeric() || c == '_' => {}
                            _ => return None,
                        }
                    }
                }
                _ => {
                    let mut on = true;
                    loop {
                        match self.chars.next()? {
                            'i' => self.flags.ignore_case = on,
                            'm' => self.flags.multi_line = on,
                            's' => self.flags.dot_all = on,
                            'U' | 'x' if !on => {}
                            'U' => {}
                            '-' if on => on = false,
                            ':' => break,
                            ')' => return Some(None),
                            _ => return None,
                        }
                    }
                }
            }
        }
        let inner = self.alternation(depth + 1)?;
        (self.chars.next()? == ')').then_some(())?;
        self.flags = saved;
        Some(Some(inner))
    }

    fn class(&mut self) -> Option<Class> {
        let mut class = Class {
            items: Vec::new(),
            negated: false,
            ignore_case: self.flags.ignore_case,
        };
        if self.chars.peek() == Some(&'^') {
            self.chars.next();
            class.negated = true;
        }
        let mut first = true;
        loop {
            let c = self.chars.next()?;
            let start = match c {
                ']' if !first => return Some(class),
                '[' if self.chars.peek() == Some(&':') => {
                    self.chars.next();
                    let mut name = String::new();
                    loop {
                        match self.chars.next()? {
                            ':' => break,
                            c => name.push(c),
                        }
                    }
                    (self.chars.next()? == ']').then_some(())?;
                    class.items.extend(ascii_class(&name)?);
                    first = false;
                    continue;
                }
                '[' => return None,
                '\\' => match self.escape(true)? {
                    Escaped::Char(c) => c,
                    Escaped::Class(item) => {
                        class.items.push(item);
                        first = false;
                        continue;
                    }
                    Escaped::Assert(_) => return None,
                },
                c => c,
            };
            first = false;
            let mut lookahead = self.chars.clone();
            if lookahead.next() == Some('-') && !matches!(lookahead.peek(), Some(']') | None) {
                self.chars.next();
                let end = match self.chars.next()? {
                    '\\' => match self.escape(true)? {
                        Escaped::Char(c) => c,
                        _ => return None,
                    },
                    c => c,
                };
                if end < start {
                    return None;
                }
                class.items.push(ClassItem::Range(start, end));
            } else {
                class.items.push(ClassItem::Range(start, start));
            }
        }
    }

    fn escape(&mut self, in_class: bool) -> Option<Escaped> {
        let c = self.chars.next()?;
        Some(match c {
            'd' => Escaped::Class(ClassItem::Digit(true)),
            'D' => Escaped::Class(ClassItem::Digit(false)),
            'w' => Escaped::Class(ClassItem::Word(true)),
            'W' => Escaped::Class(ClassItem::Word(false)),
            's' => Escaped::Class(ClassItem::Space(true)),
            'S' => Escaped::Class(ClassItem::Space(false)),
            'n' => Escaped::Char('\n'),
            't' => Escaped::Char('\t'),
            'r' => Escaped::Char('\r'),
            'f' => Escaped::Char('\x0c'),
            'v' => Escaped::Char('\x0b'),
            'a' => Escaped::Char('\x07'),
            'x' => Escaped::Char(self.hex()?),
            'A' if !in_class => Escaped::Assert(Assertion::Start),
            'z' if !in_class => Escaped::Assert(Assertion::End),
            'b' if !in_class => Escaped::Assert(Assertion::WordBoundary),
            'B' if !in_class => Escaped::Assert(Assertion::NotWordBoundary),
            c if c.is_ascii_punctuation() || c == ' ' => Escaped::Char(c),
            _ => return None,
        })
    }

    /// `\xNN` or `\x{N...}`.
    fn hex(&mut self) -> Option<char> {
        let digits: String = if self.chars.peek() == Some(&'{') {
            self.chars.next();
            let mut digits = String::new();
            loop {
                match self.chars.next()? {
                    '}' => break,
                    c => digits.push(c),
                }
            }
            digits
        } else {
            [self.chars.next()?, self.chars.next()?].iter().collect()
        };
        char::from_u32(u32::from_str_radix(&digits, 16).ok()?)
    }
}

enum Escaped {
    Char(char),
    Class(ClassItem),
    Assert(Assertion),
}

impl Escaped {
    fn into_node(self, ignore_case: bool) -> Node {
        match self {
            Escaped::Char(c) => Node::Char(c, ignore_case),
            Escaped::Class(item) => Node::Class(Class {
                items: vec![item],
                negated: false,
                ignore_case: false,
            }),
            Escaped::Assert(a) => Node::Assert(a),
        }
    }
}

fn ascii_class(name: &str) -> Option<Vec<ClassItem>> {
    let ranges: &[(char, char)] = match name {
        "alnum" => &[('0', '9'), ('A', 'Z'), ('a', 'z')],
        "alpha" => &[('A', 'Z'), ('a', 'z')],
        "ascii" => &[('\0', '\x7f')],
        "blank" => &[('\t', '\t'), (' ', ' ')],
        "cntrl" => &[('\0', '\x1f'), ('\x7f', '\x7f')],
        "digit" => &[('0', '9')],
        "graph" => &[('!', '~')],
        "lower" => &[('a', 'z')],
        "print" => &[(' ', '~')],
        "punct" => &[('!', '/'), (':', '@'), ('[', '`'), ('{', '~')],
        "space" => &[('\t', '\r'), (' ', ' ')],
        "upper" => &[('A', 'Z')],
        "word" => &[('0', '9'), ('A', 'Z'), ('a', 'z'), ('_', '_')],
        "xdigit" => &[('0', '9'), ('A', 'F'), ('a', 'f')],
        _ => return None,
    };
    Some(
        ranges
            .iter()
            .map(|&(a, b)| ClassItem::Range(a, b))
            .collect(),
    )
}

#[derive(Debug, Clone)]
enum Inst {
    Char(char, bool),
    Any(bool),
    Class(Class),
    Assert(Assertion),
    Split(usize, usize),
    Jump(usize),
    Match,
}

/// A compiled pattern.
pub(super) struct Regex {
    program: Vec<Inst>,
}

impl Regex {
    /// `None` for a pattern this engine does not accept.
    pub(super) fn new(pattern: &str) -> Option<Regex> {
        let mut parser = Parser {
            chars: pattern.chars().peekable(),
            flags: Flags::default(),
        };
        let node = parser.alternation(0)?;
        if parser.chars.next().is_some() {
            return None;
        }
        let mut program = Vec::new();
        compile(&node, &mut program)?;
        program.push(Inst::Match);
        Some(Regex { program })
    }

    /// Whether the pattern matches anywhere in `text`.
    pub(super) fn is_match(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        let n = self.program.len();
        let mut current: Vec<usize> = Vec::new();
        let mut next: Vec<usize> = Vec::new();
        let mut seen = vec![usize::MAX; n];
        for at in 0..=chars.len() {
            // A new thread starts at every position: the search is unanchored.
            if self.add(&mut current, &mut seen, at, 0, &chars) {
                return true;
            }
            let Some(&c) = chars.get(at) else {
                break;
            };
            next.clear();
            for &pc in &current {
                let advances = match &self.program[pc] {
                    Inst::Char(expected, ignore_case) => {
                        c == *expected || (*ignore_case && fold(c).contains(expected))
                    }
                    Inst::Any(dot_all) => *dot_all || c != '\n',
                    Inst::Class(class) => class.matches(c),
                    _ => false,
                };
                if advances && self.add(&mut next, &mut seen, at + 1, pc + 1, &chars) {
                    return true;
                }
            }
            std::mem::swap(&mut current, &mut next);
        }
        false
    }

    /// Adds the thread at `pc` and those its jumps reach at position `at`; true on a match.
    fn add(
        &self,
        threads: &mut Vec<usize>,
        seen: &mut [usize],
        at: usize,
        pc: usize,
        chars: &[char],
    ) -> bool {
        let mut stack = vec![pc];
        while let Some(pc) = stack.pop() {
            if seen[pc] == at {
                continue;
            }
            seen[pc] = at;
            match &self.program[pc] {
                Inst::Match => return true,
                Inst::Jump(to) => stack.push(*to),
                Inst::Split(a, b) => {
                    stack.push(*b);
                    stack.push(*a);
                }
                Inst::Assert(assertion) => {
                    if holds(*assertion, chars, at) {
                        stack.push(pc + 1);
                    }
                }
                _ => threads.push(pc),
            }
        }
        false
    }
}

fn holds(assertion: Assertion, chars: &[char], at: usize) -> bool {
    let before = at.checked_sub(1).and_then(|i| chars.get(i)).copied();
    let after = chars.get(at).copied();
    match assertion {
        Assertion::Start => at == 0,
        Assertion::End => at == chars.len(),
        Assertion::LineStart => before.is_none_or(|c| c == '\n'),
        Assertion::LineEnd => after.is_none_or(|c| c == '\n'),
        Assertion::WordBoundary => before.is_some_and(is_word) != after.is_some_and(is_word),
        Assertion::NotWordBoundary => before.is_some_and(is_word) == after.is_some_and(is_word),
    }
}

fn compile(node: &Node, program: &mut Vec<Inst>) -> Option<()> {
    if program.len() > MAX_PROGRAM {
        return None;
    }
    match node {
        Node::Char(c, ignore_case) => program.push(Inst::Char(*c, *ignore_case)),
        Node::Any(dot_all) => program.push(Inst::Any(*dot_all)),
        Node::Class(class) => program.push(Inst::Class(class.clone())),
        Node::Assert(a) => program.push(Inst::Assert(*a)),
        Node::Concat(items) => {
            for item in items {
                compile(item, program)?;
            }
        }
        Node::Alternate(branches) => {
            let mut jumps = Vec::new();
            for (i, branch) in branches.iter().enumerate() {
                if i + 1 < branches.len() {
                    let split = program.len();
                    program.push(Inst::Split(split + 1, 0));
                    compile(branch, program)?;
                    jumps.push(program.len());
                    program.push(Inst::Jump(0));
                    let next = program.len();
                    program[split] = Inst::Split(split + 1, next);
                } else {
                    compile(branch, program)?;
                }
            }
            let end = program.len();
            for j in jumps {
                program[j] = Inst::Jump(end);
            }
        }
        Node::Repeat { node, min, max } => {
            for _ in 0..*min {
                compile(node, program)?;
                if program.len() > MAX_PROGRAM {
                    return None;
                }
            }
            match max {
                None => {
                    let split = program.len();
                    program.push(Inst::Split(split + 1, 0));
                    compile(node, program)?;
                    program.push(Inst::Jump(split));
                    let end = program.len();
                    program[split] = Inst::Split(split + 1, end);
                }
                Some(max) => {
                    let mut splits = Vec::new();
                    for _ in *min..*max {
                        splits.push(program.len());
                        program.push(Inst::Split(program.len() + 1, 0));
                        compile(node, program)?;
                        if program.len() > MAX_PROGRAM {
                            return None;
                        }
                    }
                    let end = program.len();
                    for s in splits {
                        program[s] = Inst::Split(s + 1, end);
                    }
                }
            }
        }
    }
    (program.len() <= MAX_PROGRAM).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, text: &str) -> Option<bool> {
        Regex::new(pattern).map(|r| r.is_match(text))
    }

    #[test]
    fn matches_as_the_regex_crate_does() {
        for (pattern, text, expected) in [
            ("^f.*", "foo", Some(true)),
            ("^f.*", "afoo", Some(false)),
            ("(?i)B", "abc", Some(true)),
            ("(?i)B", "ac", Some(false)),
            ("a|b", "xbx", Some(true)),
            ("^(ab)+$", "ababab", Some(true)),
            ("^(ab)+$", "ababa", Some(false)),
            ("^a{2,3}$", "aaaa", Some(false)),
            ("^a{2,}$", "aaaa", Some(true)),
            ("[a-c]x", "bx", Some(true)),
            ("[^a-c]x", "bx", Some(false)),
            (r"\d+\.\d", "v1.2", Some(true)),
            (r"\bfoo\b", "a foo b", Some(true)),
            (r"\bfoo\b", "afoob", Some(false)),
            ("[[:upper:]]", "abC", Some(true)),
            ("^$", "", Some(true)),
            ("a.c", "a\nc", Some(false)),
            ("(?s)a.c", "a\nc", Some(true)),
            ("(?m)^b", "a\nb", Some(true)),
            ("(", "", None),
            ("a**", "", None),
            (r"\p{L}", "", None),
            ("(?:x)?y", "y", Some(true)),
            ("(?P<n>a)b", "ab", Some(true)),
        ] {
            assert_eq!(m(pattern, text), expected, "{pattern} on {text:?}");
        }
    }

    #[test]
    fn large_repetitions_are_refused() {
        assert!(Regex::new("(a{1000}){1000}").is_none());
        let r = Regex::new("(a|aa)*b").unwrap();
        assert!(!r.is_match(&"a".repeat(10_000)));
    }
}
