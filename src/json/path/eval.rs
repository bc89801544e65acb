//! Evaluating a compiled JSONPath over a document, match for match as RedisJSON's `json_path`
//! does: the same order (a recursive descent visits a value, then each child in turn with its
//! descendants), the same filter semantics, and the concrete path of each match when asked.
//!
//! Work is bounded: a path like `$..*..*..*` visits the document once per level of each
//! descent, which multiplies; past `WORK_LIMIT` steps the evaluation stops with `Overload`.

use super::query::{Condition, Filter, Op, Query, Relation, Segment, Slice, Term};
use super::regex::Regex;
use crate::json::value::{Kind, Value};
use std::cmp::Ordering;

/// Steps an evaluation may take (nodes visited, matches recorded, bytes matched by `=~`).
pub const WORK_LIMIT: usize = 50_000_000;

/// An evaluation that exceeded `WORK_LIMIT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overload;

/// A match and its concrete path: member names and array indexes (as decimal text), from the
/// root down, as RedisJSON's path tracker records them.
pub type Located<'v> = (&'v Value, Vec<String>);

impl Query {
    /// The matches, in RedisJSON's order.
    pub fn select<'v>(&self, root: &'v Value) -> Result<Vec<&'v Value>, Overload> {
        self.select_within(root, WORK_LIMIT)
    }

    fn select_within<'v>(
        &self,
        root: &'v Value,
        mut work: usize,
    ) -> Result<Vec<&'v Value>, Overload> {
        let mut eval = Evaluation::new(root, false, &mut work);
        eval.walk(&self.segments, root)?;
        Ok(eval.found.into_iter().map(|(v, _)| v).collect())
    }

    /// The matches with their paths. Names in brackets are unescaped the way RedisJSON does
    /// when it tracks paths, which differs from `select` (see `Name::key`).
    pub fn select_paths<'v>(&self, root: &'v Value) -> Result<Vec<Located<'v>>, Overload> {
        let mut work = WORK_LIMIT;
        let mut eval = Evaluation::new(root, true, &mut work);
        eval.walk(&self.segments, root)?;
        Ok(eval.found)
    }
}

/// One step down, before it is needed as text.
#[derive(Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

struct Evaluation<'v, 'w> {
    /// What `$` means inside filters: the document, or the value a `@` sub-path started from.
    root: &'v Value,
    tracking: bool,
    path: Vec<String>,
    found: Vec<Located<'v>>,
    work: &'w mut usize,
}

impl<'v, 'w> Evaluation<'v, 'w> {
    fn new(root: &'v Value, tracking: bool, work: &'w mut usize) -> Self {
        Evaluation {
            root,
            tracking,
            path: Vec::new(),
            found: Vec::new(),
            work,
        }
    }

    fn spend(&mut self, steps: usize) -> Result<(), Overload> {
        *self.work = self.work.checked_sub(steps).ok_or(Overload)?;
        Ok(())
    }

    fn walk(&mut self, segments: &[Segment], node: &'v Value) -> Result<(), Overload> {
        self.spend(1)?;
        let Some((segment, rest)) = segments.split_first() else {
            self.spend(self.path.len())?;
            let path = if self.tracking {
                self.path.clone()
            } else {
                Vec::new()
            };
            self.found.push((node, path));
            return Ok(());
        };
        match segment {
            Segment::Scan => {
                self.walk(rest, node)?;
                self.scan(rest, node)
            }
            Segment::All => self.each_child(node, |eval, step, child| eval.down(step, rest, child)),
            Segment::Key(key) => match node.as_object().and_then(|o| o.get(key)) {
                Some(child) => self.down(Step::Key(key), rest, child),
                None => Ok(()),
            },
            Segment::Names(names) => {
                let Some(object) = node.as_object() else {
                    return Ok(());
                };
                for name in names {
                    if let Some(child) = object.get(&name.key(self.tracking)) {
                        self.down(Step::Key(&name.raw), rest, child)?;
                    }
                }
                Ok(())
            }
            Segment::Indexes(indexes) => {
                let Some(array) = node.as_array() else {
                    return Ok(());
                };
                for &i in indexes {
                    let at = absolute(i, array.len());
                    if let Some(child) = array.get(at) {
                        self.down(Step::Index(at), rest, child)?;
                    }
                }
                Ok(())
            }
            Segment::Slice(slice, step) => {
                let Some(array) = node.as_array() else {
                    return Ok(());
                };
                let n = array.len();
                let (start, end) = match *slice {
                    Slice::To(end) => (0, absolute(end, n)),
                    Slice::All => (0, n),
                    Slice::From(start) => (absolute(start, n), n),
                    Slice::Between(start, end) => (absolute(start, n), absolute(end, n)),
                };
                for at in (start..end).step_by(*step) {
                    if let Some(child) = array.get(at) {
                        self.down(Step::Index(at), rest, child)?;
                    }
                }
                Ok(())
            }
            // A filter selects among an array's items or an object's values, never a scalar.
            Segment::Filter(filter) => self.each_child(node, |eval, step, child| {
                if eval.filter(filter, child)? {
                    eval.down(step, rest, child)?;
                }
                Ok(())
            }),
        }
    }

    fn each_child(
        &mut self,
        node: &'v Value,
        mut visit: impl FnMut(&mut Self, Step<'v>, &'v Value) -> Result<(), Overload>,
    ) -> Result<(), Overload> {
        match node {
            Value::Object(o) => {
                for member in o.members() {
                    visit(self, Step::Key(&member.key), &member.value)?;
                }
            }
            Value::Array(a) => {
                for (i, item) in a.iter().enumerate() {
                    visit(self, Step::Index(i), item)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The rest of the path from `child`, one step below.
    fn down(&mut self, step: Step<'_>, rest: &[Segment], child: &'v Value) -> Result<(), Overload> {
        if self.tracking {
            self.path.push(match step {
                Step::Key(k) => k.to_string(),
                Step::Index(i) => i.to_string(),
            });
        }
        let result = self.walk(rest, child);
        if self.tracking {
            self.path.pop();
        }
        result
    }

    /// `..`: the rest of the path from every value below `node`, depth first.
    fn scan(&mut self, rest: &[Segment], node: &'v Value) -> Result<(), Overload> {
        self.each_child(node, |eval, step, child| {
            if eval.tracking {
                eval.path.push(match step {
                    Step::Key(k) => k.to_string(),
                    Step::Index(i) => i.to_string(),
                });
            }
            let result = eval.walk(rest, child).and_then(|()| eval.scan(rest, child));
            if eval.tracking {
                eval.path.pop();
            }
            result
        })
    }

    fn filter(&mut self, filter: &Filter, node: &'v Value) -> Result<bool, Overload> {
        let mut result = self.condition(&filter.first, node)?;
        for (relation, condition) in &filter.rest {
            match relation {
                // An `&&` after a false operand is skipped up to the next `||`.
                Relation::And => {
                    if result {
                        result = self.condition(condition, node)?;
                    }
                }
                Relation::Or => {
                    if result {
                        return Ok(true);
                    }
                    result = self.condition(condition, node)?;
                }
            }
        }
        Ok(result)
    }

    fn condition(&mut self, condition: &Condition, node: &'v Value) -> Result<bool, Overload> {
        match condition {
            Condition::Group(filter) => self.filter(filter, node),
            Condition::Single(term, None) => {
                Ok(!matches!(self.term(term, node)?, Operand::Invalid))
            }
            Condition::Single(left, Some((op, right))) => {
                let left = self.term(left, node)?;
                let right = self.term(right, node)?;
                Ok(match op {
                    Op::Gt => ordered(&left, &right, Ordering::is_gt),
                    Op::Ge => ordered(&left, &right, Ordering::is_ge),
                    Op::Lt => ordered(&left, &right, Ordering::is_lt),
                    Op::Le => ordered(&left, &right, Ordering::is_le),
                    Op::Eq => equal(&left, &right),
                    Op::Ne => !equal(&left, &right),
                    Op::Re => {
                        self.spend(regex_work(&left) + regex_work(&right))?;
                        matches_regex(&left, &right)
                    }
                })
            }
        }
    }

    fn term(&mut self, term: &Term, node: &'v Value) -> Result<Operand<'v>, Overload> {
        Ok(match term {
            Term::Integer(i) => Operand::Integer(*i),
            Term::Float(f) => Operand::Float(*f),
            Term::Str(s) => Operand::Text(s.clone(), false),
            Term::Unescaped(s) => Operand::Text(s.clone(), true),
            Term::Bool(b) => Operand::Bool(*b),
            Term::Null => Operand::Null,
            Term::Current(None) => Operand::Value(node),
            Term::Root(None) => Operand::Value(self.root),
            Term::Current(Some(path)) => self.sub_query(path, node, node)?,
            Term::Root(Some(path)) => self.sub_query(path, self.root, self.root)?,
        })
    }

    /// A path inside a filter: evaluated without paths, from `start`, with `root` as `$`.
    fn sub_query(
        &mut self,
        path: &[Segment],
        root: &'v Value,
        start: &'v Value,
    ) -> Result<Operand<'v>, Overload> {
        let mut inner = Evaluation::new(root, false, self.work);
        inner.walk(path, start)?;
        let mut found: Vec<&'v Value> = inner.found.into_iter().map(|(v, _)| v).collect();
        Ok(match found.len() {
            0 => Operand::Invalid,
            1 => Operand::Value(found.pop().expect("one match")),
            _ => Operand::List(found),
        })
    }
}

/// An index from the end counts back from the length; either end is clamped to the array.
fn absolute(i: i64, len: usize) -> usize {
    if i >= 0 {
        usize::try_from(i).map_or(len, |i| i.min(len))
    } else {
        let len = len as i64;
        (i + len).max(0) as usize
    }
}

/// What a filter term evaluates to.
enum Operand<'v> {
    Integer(i64),
    Float(f64),
    /// A string literal; `true` when escapes were undone (such literals never act as a
    /// regular expression).
    Text(String, bool),
    Value(&'v Value),
    Bool(bool),
    Null,
    /// Several matches of a sub-path: a comparison holds if it holds for any of them.
    List(Vec<&'v Value>),
    /// A sub-path with no match.
    Invalid,
}

/// A document value as a comparable operand; `None` for arrays and objects.
fn scalar(v: &Value) -> Option<Operand<'_>> {
    Some(match v {
        Value::Null => Operand::Null,
        Value::Bool(b) => Operand::Bool(*b),
        Value::Number(n) => match v.kind() {
            Kind::Long => Operand::Integer(match n {
                crate::json::value::Number::Int(i) => *i,
                _ => unreachable!("only Int is long"),
            }),
            _ => Operand::Float(n.to_f64()),
        },
        Value::String(s) => Operand::Text(s.to_string(), false),
        _ => return None,
    })
}

fn float_order(a: f64, b: f64) -> Ordering {
    if a > b {
        Ordering::Greater
    } else if a < b {
        Ordering::Less
    } else {
        Ordering::Equal
    }
}

/// RedisJSON's ordering of two operands; `None` when they do not compare.
fn compare(a: &Operand<'_>, b: &Operand<'_>) -> Option<Ordering> {
    match (a, b) {
        (Operand::Integer(x), Operand::Integer(y)) => Some(x.cmp(y)),
        (Operand::Float(x), Operand::Integer(y)) => Some(float_order(*x, *y as f64)),
        (Operand::Integer(x), Operand::Float(y)) => Some(float_order(*x as f64, *y)),
        (Operand::Float(x), Operand::Float(y)) => Some(float_order(*x, *y)),
        (Operand::Text(x, _), Operand::Text(y, _)) => Some(x.as_str().cmp(y.as_str())),
        (Operand::Bool(x), Operand::Bool(y)) => Some(x.cmp(y)),
        (Operand::Null, Operand::Null) => Some(Ordering::Equal),
        (Operand::Value(v), _) => compare(&scalar(v)?, b),
        (_, Operand::Value(v)) => compare(a, &scalar(v)?),
        _ => None,
    }
}

fn ordered(a: &Operand<'_>, b: &Operand<'_>, holds: fn(Ordering) -> bool) -> bool {
    match (a, b) {
        (Operand::List(items), _) => items.iter().any(|v| ordered(&Operand::Value(v), b, holds)),
        (_, Operand::List(items)) => items.iter().any(|v| ordered(a, &Operand::Value(v), holds)),
        _ => compare(a, b).is_some_and(holds),
    }
}

fn equal(a: &Operand<'_>, b: &Operand<'_>) -> bool {
    match (a, b) {
        (Operand::List(items), _) => items.iter().any(|v| equal(&Operand::Value(v), b)),
        (_, Operand::List(items)) => items.iter().any(|v| equal(a, &Operand::Value(v))),
        (Operand::Value(x), Operand::Value(y)) => x.loosely_equals(y),
        _ => compare(a, b) == Some(Ordering::Equal),
    }
}

fn regex_work(o: &Operand<'_>) -> usize {
    match o {
        Operand::Text(s, _) => s.len(),
        Operand::Value(Value::String(s)) => s.len(),
        Operand::List(items) => items.iter().map(|v| v.as_str().map_or(0, str::len)).sum(),
        _ => 0,
    }
}

/// `=~`: the left operand is a document string, the right a pattern, either a plain string
/// literal or a document string. A pattern that does not compile matches nothing.
fn matches_regex(a: &Operand<'_>, b: &Operand<'_>) -> bool {
    match (a, b) {
        (Operand::List(items), _) => items.iter().any(|v| matches_regex(&Operand::Value(v), b)),
        (_, Operand::List(items)) => items.iter().any(|v| matches_regex(a, &Operand::Value(v))),
        (Operand::Value(Value::String(text)), Operand::Text(pattern, false)) => {
            Regex::new(pattern).is_some_and(|re| re.is_match(text))
        }
        (Operand::Value(Value::String(text)), Operand::Value(Value::String(pattern))) => {
            Regex::new(pattern).is_some_and(|re| re.is_match(text))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::text::{parse, ParseLimits};

    fn doc(text: &str) -> Value {
        parse(text, ParseLimits::command(usize::MAX)).unwrap()
    }

    fn select(path: &str, text: &str) -> String {
        let d = doc(text);
        let found = Query::compile(path).unwrap().select(&d).unwrap();
        let mut out = Vec::new();
        crate::json::write::Writer::new(Default::default(), &mut out).list(found.into_iter());
        String::from_utf8(out).unwrap()
    }

    fn paths(path: &str, text: &str) -> Vec<String> {
        let d = doc(text);
        Query::compile(path)
            .unwrap()
            .select_paths(&d)
            .unwrap()
            .into_iter()
            .map(|(_, p)| p.join("."))
            .collect()
    }

    #[test]
    fn selects_in_redisjson_order() {
        let d = r#"{"a":{"a":1,"b":[{"a":2}]},"c":[3,4,5,6]}"#;
        assert_eq!(select("$..a", d), r#"[{"a":1,"b":[{"a":2}]},1,2]"#);
        assert_eq!(paths("$..a", d), ["a", "a.a", "a.b.0.a"]);
        assert_eq!(select("$.c[-1,0,9]", d), "[6,3]");
        assert_eq!(select("$.c[1:]", d), "[4,5,6]");
        assert_eq!(select("$.c[:-1:2]", d), "[3,5]");
        assert_eq!(select("$.c[?(@>4)]", d), "[5,6]");
        assert_eq!(select("$[?(@.a)]", d), r#"[{"a":1,"b":[{"a":2}]}]"#);
        assert_eq!(select("$.*[?(@.a)]", d), "[]");
        assert_eq!(select("$..[?(@.a==2)]", d), r#"[{"a":2}]"#);
        assert_eq!(
            select("$..[?(@.a=~\"^f\" || @.a>=1 && @.a<2)]", d),
            r#"[{"a":1,"b":[{"a":2}]}]"#
        );
    }

    #[test]
    fn filters_compare_as_redisjson_compares() {
        let d = r#"[1, 1.0, "1", true, null, [1], {"x":1}]"#;
        assert_eq!(select("$[?(@==1)]", d), "[1,1.0]");
        assert_eq!(select("$[?(@!=1)]", d), r#"["1",true,null,[1],{"x":1}]"#);
        assert_eq!(select("$[?(@>=\"1\")]", d), r#"["1"]"#);
        assert_eq!(select("$[?(@==null)]", d), "[null]");
        assert_eq!(select("$[?(@.x)]", d), r#"[{"x":1}]"#);
        assert_eq!(select("$[?(@[0]==$[0])]", d), "[[1]]");
        assert_eq!(
            select("$[?(false)]", d),
            r#"[1,1.0,"1",true,null,[1],{"x":1}]"#
        );
    }

    #[test]
    fn runaway_descents_stop() {
        let d = doc(&format!("{}1{}", "[1,1,".repeat(60), "]".repeat(60)));
        let q = Query::compile(&format!("${}", "..*".repeat(10))).unwrap();
        assert_eq!(q.select_within(&d, 1_000_000), Err(Overload));
        assert!(q.select_within(&doc("[[1]]"), 1_000_000).is_ok());
    }
}
