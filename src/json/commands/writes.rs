//! The commands that set and remove values and do arithmetic: JSON.SET, MERGE, MSET, DEL and
//! the NUM* commands, as further methods of `Run`.

use super::*;

impl Run<'_> {
    pub(super) fn set(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let text = args.next_str()?;
        let mut mode = SetMode::Always;
        while let Some(arg) = args.next() {
            let arg = utf8(arg)?;
            if arg.eq_ignore_ascii_case("NX") && mode == SetMode::Always {
                mode = SetMode::OnlyIfMissing;
            } else if arg.eq_ignore_ascii_case("XX") && mode == SetMode::Always {
                mode = SetMode::OnlyIfPresent;
            } else if arg.eq_ignore_ascii_case("FORMAT") {
                input_format(args.next_str()?)?;
            } else {
                return Err(SYNTAX.to_string());
            }
        }
        let exists = self.read(key)?.is_some();
        let value = self.parse_document(text)?;
        if !exists {
            if mode == SetMode::OnlyIfPresent {
                return Ok(Answer::Nil);
            }
            if !path.is_root() {
                return Err(NEW_AT_ROOT.to_string());
            }
            check_nesting(0, &value)?;
            self.keys.create(key, value);
            self.notify(key, "json.set");
            return Ok(Answer::Ok);
        }
        if path.is_root() {
            if mode == SetMode::OnlyIfMissing {
                return Ok(Answer::Nil);
            }
            check_nesting(0, &value)?;
            *self.existing(key)? = value;
            self.notify(key, "json.set");
            return Ok(Answer::Ok);
        }
        let targets = {
            let doc = self.existing(key)?;
            targets(doc, path.text(), mode)?
        };
        if !targets.is_empty() && self.apply_sets(key, value, targets)? {
            self.notify(key, "json.set");
            Ok(Answer::Ok)
        } else {
            Ok(Answer::Nil)
        }
    }

    /// Writes `value` at each target; true if the last write that did not fail changed the
    /// document (RedisJSON's fold keeps only that one's answer).
    pub(super) fn apply_sets(
        &mut self,
        key: &[u8],
        value: Value,
        targets: Vec<Target>,
    ) -> Step<bool> {
        for target in &targets {
            let depth = match target {
                Target::Replace(p) => p.len(),
                Target::AddMember(p, _) => p.len() + 1,
            };
            check_nesting(depth, &value)?;
        }
        let doc = self.existing(key)?;
        let single = targets.len() == 1;
        let mut value = Some(value);
        let mut updated = false;
        let mut any = false;
        for target in targets {
            let v = if single {
                value.take().expect("one target")
            } else {
                value.as_ref().expect("kept for every target").clone()
            };
            match set_at(doc, target, v) {
                Ok(changed) => {
                    updated = changed;
                    any |= changed;
                }
                Err(_) if single => updated = false,
                Err(_) => {}
            }
        }
        if any {
            self.changed(key);
        }
        Ok(updated)
    }

    pub(super) fn merge(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let text = args.next_str()?;
        while let Some(arg) = args.next() {
            if utf8(arg)?.eq_ignore_ascii_case("FORMAT") {
                input_format(args.next_str()?)?;
            } else {
                return Err(SYNTAX.to_string());
            }
        }
        let exists = self.read(key)?.is_some();
        let patch = self.parse_document(text)?;
        if !exists {
            if !path.is_root() {
                return Err(NEW_AT_ROOT.to_string());
            }
            check_nesting(0, &patch)?;
            self.keys.create(key, patch);
            self.notify(key, "json.merge");
            return Ok(Answer::Ok);
        }
        if path.is_root() {
            check_nesting(0, &patch)?;
            edit::merge(self.existing(key)?, &patch);
            self.notify(key, "json.merge");
            return Ok(Answer::Ok);
        }
        let targets = targets(self.existing(key)?, path.text(), SetMode::Merge)?;
        if targets.is_empty() {
            return Ok(Answer::Nil);
        }
        for target in &targets {
            let depth = match target {
                Target::Replace(p) => p.len(),
                Target::AddMember(p, _) => p.len() + 1,
            };
            check_nesting(depth, &patch)?;
        }
        let mut any = false;
        let mut failure = None;
        {
            let doc = self.existing(key)?;
            for target in targets {
                let result = match target {
                    Target::Replace(p) if p.is_empty() => {
                        edit::merge(doc, &patch);
                        Ok(true)
                    }
                    Target::Replace(p) => {
                        let mut updated = false;
                        edit::update(doc, &p, |current| {
                            updated = true;
                            edit::merge(current, &patch);
                            Ok(After::Keep)
                        })
                        .map(|()| updated)
                    }
                    Target::AddMember(p, member) => add_member(doc, &p, &member, patch.clone()),
                };
                match result {
                    Ok(updated) => any |= updated,
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
        }
        if any {
            self.changed(key);
        }
        if let Some(e) = failure {
            return Err(e);
        }
        if any {
            self.notify(key, "json.merge");
            Ok(Answer::Ok)
        } else {
            Ok(Answer::Nil)
        }
    }

    pub(super) fn mset(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        if args.remaining() < 3 {
            return Err(args.arity());
        }
        // Every triple is checked against the keys as they are before any is written.
        let mut planned: Vec<Planned<'_>> = Vec::new();
        while let Some(key) = args.next() {
            let doc = self.read(key)?;
            let path = Path::new(args.next_str()?);
            let targets = if path.is_root() {
                None
            } else if let Some(doc) = doc {
                Some(targets(doc, path.text(), SetMode::Always)?)
            } else {
                return Err(NEW_AT_ROOT.to_string());
            };
            let text = args.next_str()?;
            self.parse_document(text)?;
            planned.push((key, targets, text));
        }
        for (key, targets, text) in planned {
            let value = self.parse_document(text)?;
            let updated = match targets {
                Some(targets) => !targets.is_empty() && self.apply_sets(key, value, targets)?,
                None => {
                    check_nesting(0, &value)?;
                    match self.write(key)? {
                        Some(doc) => *doc = value,
                        None => self.keys.create(key, value),
                    }
                    true
                }
            };
            if updated {
                self.notify(key, "json.mset");
            }
        }
        Ok(Answer::Ok)
    }

    pub(super) fn del(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = match args.next() {
            None => Path::new("."),
            Some(arg) => Path::new(utf8(arg)?),
        };
        if self.write(key)?.is_none() {
            return Ok(Answer::Integer(0));
        }
        let deleted = if path.is_root() {
            self.keys.delete(key);
            1
        } else {
            let doc = self.existing(key)?;
            let mut paths = paths_where(doc, path.text(), |_| true)?;
            prepare_for_update(&mut paths);
            let mut deleted = 0;
            for p in paths {
                let mut removed = false;
                edit::update(doc, &p, |_| {
                    removed = true;
                    Ok(After::Remove)
                })?;
                deleted += i64::from(removed);
            }
            deleted
        };
        if deleted > 0 {
            self.notify(key, "json.del");
        }
        Ok(Answer::Integer(deleted))
    }

    // ---- numbers, booleans, strings ----

    pub(super) fn number_op(
        &mut self,
        args: &mut Args<'_>,
        op: Arithmetic,
        event: &'static str,
    ) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let operand = args.next_str()?;
        self.check_type(key)?;
        if self.resp3 || !path.is_legacy() {
            let paths = paths_or_none(self.existing(key)?, path.text(), is_number)?;
            let mut results = Vec::with_capacity(paths.len());
            for p in paths {
                results.push(match p {
                    Some(p) => Some(self.apply_number(key, p, operand, op, event)?),
                    None => None,
                });
            }
            if results.iter().any(Option::is_some) {
                self.notify(key, event);
            }
            Ok(if self.resp3 {
                Answer::Array(
                    results
                        .into_iter()
                        .map(|n| match n {
                            None => Answer::Nil,
                            Some(Number::Int(i)) => Answer::Integer(i),
                            Some(n) => Answer::Double(n.to_f64()),
                        })
                        .collect(),
                )
            } else {
                let values: Vec<Value> = results
                    .into_iter()
                    .map(|n| n.map_or(Value::Null, Value::Number))
                    .collect();
                let mut out = Vec::new();
                Writer::new(Layout::default(), &mut out).list(values.iter());
                Answer::Bulk(out)
            })
        } else {
            let paths = paths_where(self.existing(key)?, path.text(), is_number)?;
            if paths.is_empty() {
                return Err(no_path_or("does not contains a number"));
            }
            let mut last = None;
            for p in paths {
                last = Some(self.apply_number(key, p, operand, op, event)?);
            }
            self.notify(key, event);
            let mut out = Vec::new();
            crate::json::write::write_number(last.expect("at least one path"), &mut out);
            Ok(Answer::Bulk(out))
        }
    }

    /// One number's arithmetic at `path`; the operand is read (with `serde_json`'s errors)
    /// for each match, as RedisJSON reads it.
    pub(super) fn apply_number(
        &mut self,
        key: &[u8],
        path: Vec<String>,
        operand: &str,
        op: Arithmetic,
        _event: &'static str,
    ) -> Step<Number> {
        let Value::Number(operand) = self.parse_operand(operand)? else {
            return Err("bad input number".to_string());
        };
        let doc = self.existing(key)?;
        let mut result = None;
        edit::edit_at(doc, &path, |v| {
            let Value::Number(n) = v else {
                return Err(NO_PATH.to_string());
            };
            let computed = edit::arithmetic(op, *n, operand)?;
            *v = Value::Number(computed);
            result = Some(computed);
            Ok(After::Keep)
        })?;
        let result = result.ok_or_else(|| NO_PATH.to_string())?;
        self.changed(key);
        self.numbers.push(NumberWrite {
            key: key.to_vec(),
            path,
            value: result,
        });
        Ok(result)
    }
}
