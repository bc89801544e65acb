//! A parsed JSONPath: the steps of RedisJSON's compiled query, built from the grammar's tokens.

use super::grammar::{self, Rule, SyntaxError, Tokens};

/// How a quoted name was written, which decides how its escapes are undone (RedisJSON undoes
/// them differently depending on where the name is used; see `Name::key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quoting {
    /// No escapes inside (`'a'` or `"a"`).
    Plain,
    /// Double quotes with escapes (`"a\"b"`).
    Double,
    /// Single quotes with escapes (`'a\'b'`).
    Single,
}

/// A quoted name, as written between its quotes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Name {
    pub raw: String,
    pub quoting: Quoting,
}

impl Name {
    /// The member name looked up. RedisJSON undoes `\\` and one kind of escaped quote; which
    /// kind depends on whether it tracks the paths of matches (commands that change or locate
    /// values do) and is the other quote than the one used, except for `Plain`.
    pub(crate) fn key(&self, tracking: bool) -> String {
        let unescaped = self.raw.replace("\\\\", "\\");
        match (self.quoting, tracking) {
            (Quoting::Plain, _) => self.raw.clone(),
            (Quoting::Double, true) | (Quoting::Single, false) => unescaped.replace("\\'", "'"),
            (Quoting::Double, false) | (Quoting::Single, true) => unescaped.replace("\\\"", "\""),
        }
    }

    /// The text a filter compares with: double quotes undo `\'`, single quotes `\"`.
    pub(crate) fn literal(&self) -> String {
        self.key(true)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slice {
    /// `[:end(:step)]`
    To(i64),
    /// `[:(:step)]`
    All,
    /// `[start:(:step)]`
    From(i64),
    /// `[start:end(:step)]`
    Between(i64, i64),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Segment {
    /// `.name` or a bare name.
    Key(String),
    /// `..`, which applies the rest of the path at every level below.
    Scan,
    /// `*`
    All,
    /// `['a','b']`
    Names(Vec<Name>),
    /// `[0,-1]`
    Indexes(Vec<i64>),
    Slice(Slice, usize),
    Filter(Filter),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Ge,
    Gt,
    Le,
    Lt,
    Eq,
    Ne,
    Re,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Term {
    /// `@` and the path after it, applied to the value under test.
    Current(Option<Vec<Segment>>),
    /// `$` and the path after it, applied to the root of the evaluation.
    Root(Option<Vec<Segment>>),
    Integer(i64),
    Float(f64),
    /// A string literal without escapes.
    Str(String),
    /// A string literal whose escapes were undone.
    Unescaped(String),
    Bool(bool),
    Null,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Condition {
    Single(Term, Option<(Op, Term)>),
    Group(Filter),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relation {
    And,
    Or,
}

/// A filter: its first condition, then each relation and condition, evaluated as RedisJSON
/// does (`&&` before `||`, left to right, skipping what cannot change the outcome).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Filter {
    pub first: Box<Condition>,
    pub rest: Vec<(Relation, Condition)>,
}

/// The last step of a static path, which `JSON.SET` may create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LastStep {
    Key(String),
    Index,
}

/// A compiled JSONPath.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub(crate) segments: Vec<Segment>,
}

impl Query {
    pub fn compile(path: &str) -> Result<Query, SyntaxError> {
        let tokens = grammar::parse(path)?;
        // The first top-level token is the root, or the end of input when there is none.
        let top = tokens.children(None);
        let segments = match top.first() {
            Some(&root) if tokens.rule(root) == Rule::Root => segments(&tokens, root),
            _ => Vec::new(),
        };
        Ok(Query { segments })
    }

    /// At most one match whatever the document: names and single indexes only.
    pub fn is_static(&self) -> bool {
        self.segments.iter().all(|s| match s {
            Segment::Key(_) => true,
            Segment::Names(names) => names.len() == 1,
            Segment::Indexes(indexes) => indexes.len() == 1,
            _ => false,
        })
    }

    pub fn len(&self) -> usize {
        self.segments.len()
    }

    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// Removes the last step of a static path and says what it was. A quoted name is taken
    /// as written, escapes included, as RedisJSON takes it.
    pub(crate) fn pop_last(&mut self) -> Option<LastStep> {
        match self.segments.pop()? {
            Segment::Key(k) => Some(LastStep::Key(k)),
            Segment::Names(names) => names.into_iter().next().map(|n| LastStep::Key(n.raw)),
            Segment::Indexes(_) => Some(LastStep::Index),
            _ => None,
        }
    }
}

/// A number token's value; digits past the `i64` range saturate (RedisJSON would panic).
fn integer(text: &str) -> i64 {
    text.parse::<i64>().unwrap_or(if text.starts_with('-') {
        i64::MIN
    } else {
        i64::MAX
    })
}

fn segments(tokens: &Tokens<'_>, root: usize) -> Vec<Segment> {
    tokens
        .children(Some(root))
        .into_iter()
        .map(|t| segment(tokens, t))
        .collect()
}

fn name(tokens: &Tokens<'_>, t: usize) -> Name {
    let quoting = match tokens.rule(t) {
        Rule::StringValueEscape1 => Quoting::Double,
        Rule::StringValueEscape2 => Quoting::Single,
        _ => Quoting::Plain,
    };
    Name {
        raw: tokens.text(t).to_string(),
        quoting,
    }
}

fn segment(tokens: &Tokens<'_>, t: usize) -> Segment {
    match tokens.rule(t) {
        Rule::Literal => Segment::Key(tokens.text(t).to_string()),
        Rule::FullScan => Segment::Scan,
        Rule::All => Segment::All,
        Rule::StringList => Segment::Names(
            tokens
                .children(Some(t))
                .into_iter()
                .map(|c| name(tokens, c))
                .collect(),
        ),
        Rule::NumbersList => Segment::Indexes(
            tokens
                .children(Some(t))
                .into_iter()
                .map(|c| integer(tokens.text(c)))
                .collect(),
        ),
        Rule::NumbersRange => {
            let range = tokens.children(Some(t))[0];
            let parts = tokens.children(Some(range));
            let numbers: Vec<i64> = parts
                .iter()
                .filter(|&&p| tokens.rule(p) == Rule::Number)
                .map(|&p| integer(tokens.text(p)))
                .collect();
            let step = parts
                .iter()
                .find(|&&p| tokens.rule(p) == Rule::PosNumber)
                .map_or(1, |&p| {
                    tokens.text(p).parse::<usize>().unwrap_or(usize::MAX)
                });
            let slice = match tokens.rule(range) {
                Rule::RightRange => Slice::To(numbers[0]),
                Rule::AllRange => Slice::All,
                Rule::LeftRange => Slice::From(numbers[0]),
                _ => Slice::Between(numbers[0], numbers[1]),
            };
            Segment::Slice(slice, step)
        }
        _ => Segment::Filter(filter(tokens, t)),
    }
}

fn filter(tokens: &Tokens<'_>, t: usize) -> Filter {
    let mut parts = tokens.children(Some(t)).into_iter();
    let first = condition(tokens, parts.next().expect("a filter has a condition"));
    let mut rest = Vec::new();
    while let (Some(relation), Some(next)) = (parts.next(), parts.next()) {
        let relation = match tokens.rule(relation) {
            Rule::And => Relation::And,
            _ => Relation::Or,
        };
        rest.push((relation, condition(tokens, next)));
    }
    Filter {
        first: Box::new(first),
        rest,
    }
}

fn condition(tokens: &Tokens<'_>, t: usize) -> Condition {
    if tokens.rule(t) == Rule::Filter {
        return Condition::Group(filter(tokens, t));
    }
    let parts = tokens.children(Some(t));
    let first = term(tokens, parts[0]);
    let compare = (parts.len() == 3).then(|| {
        let op = match tokens.rule(parts[1]) {
            Rule::Ge => Op::Ge,
            Rule::Gt => Op::Gt,
            Rule::Le => Op::Le,
            Rule::Lt => Op::Lt,
            Rule::Eq => Op::Eq,
            Rule::Ne => Op::Ne,
            _ => Op::Re,
        };
        (op, term(tokens, parts[2]))
    });
    Condition::Single(first, compare)
}

fn term(tokens: &Tokens<'_>, t: usize) -> Term {
    let sub_path = |t: usize| {
        tokens
            .children(Some(t))
            .first()
            .map(|&r| segments(tokens, r))
    };
    match tokens.rule(t) {
        Rule::FromCurrent => Term::Current(sub_path(t)),
        Rule::FromRoot => Term::Root(sub_path(t)),
        Rule::Decimal => {
            let text = tokens.text(t);
            match text.parse::<i64>() {
                Ok(i) => Term::Integer(i),
                // Only digits, a sign and a point: always a float.
                Err(_) => Term::Float(text.parse::<f64>().unwrap_or(0.0)),
            }
        }
        Rule::BooleanTrue => Term::Bool(true),
        Rule::BooleanFalse => Term::Bool(false),
        Rule::Null => Term::Null,
        Rule::StringValue => Term::Str(tokens.text(t).to_string()),
        _ => Term::Unescaped(name(tokens, t).literal()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_paths_are_names_and_single_indexes() {
        for (path, is_static, len) in [
            ("$", true, 0),
            ("$.a.b", true, 2),
            ("$['a'][0]", true, 2),
            ("$['a','b']", false, 1),
            ("$.a[0,1]", false, 2),
            ("$..a", false, 2),
            ("$.*", false, 1),
            ("$.a[?(@.b)]", false, 2),
        ] {
            let q = Query::compile(path).unwrap();
            assert_eq!((q.is_static(), q.len()), (is_static, len), "{path}");
        }
    }

    #[test]
    fn names_unescape_as_redisjson_does() {
        let q = Query::compile(r#"$["a\"b"]"#).unwrap();
        let Segment::Names(names) = &q.segments[0] else {
            panic!()
        };
        assert_eq!(names[0].raw, r#"a\"b"#);
        assert_eq!(names[0].key(false), r#"a"b"#);
        assert_eq!(names[0].key(true), r#"a\"b"#);
    }
}
