//! The commands of one JSON type each: TOGGLE on booleans, the STR* commands, the ARR*
//! commands, OBJKEYS and OBJLEN, and CLEAR, as further methods of `Run`.

use super::*;

impl Run<'_> {
    pub(super) fn toggle(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let doc = self.existing(key)?;
        let flip = |doc: &mut Value, p: &[String]| -> Step<bool> {
            let mut result = None;
            edit::edit_at(doc, p, |v| {
                if let Value::Bool(b) = v {
                    *b = !*b;
                    result = Some(*b);
                }
                Ok(After::Keep)
            })?;
            result.ok_or_else(|| NO_PATH.to_string())
        };
        if path.is_legacy() {
            let paths = paths_where(doc, path.text(), is_kind(Kind::Bool))?;
            if paths.is_empty() {
                return Err(no_path_or("not a bool"));
            }
            let mut last = false;
            for p in paths {
                last = flip(doc, &p)?;
            }
            self.notify(key, "json.toggle");
            Ok(Answer::bulk(last.to_string()))
        } else {
            let paths = paths_or_none(doc, path.text(), is_kind(Kind::Bool))?;
            let mut results = Vec::new();
            let mut any = false;
            for p in paths {
                results.push(match p {
                    Some(p) => {
                        any = true;
                        Answer::Integer(i64::from(flip(doc, &p)?))
                    }
                    None => Answer::Nil,
                });
            }
            if any {
                self.notify(key, "json.toggle");
            }
            Ok(Answer::Array(results))
        }
    }

    pub(super) fn str_append(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let first_arg = args.next_str()?;
        let (path, text) = match args.next() {
            Some(arg) => (Path::new(first_arg), utf8(arg)?),
            None => (Path::new("."), first_arg),
        };
        self.check_type(key)?;
        let append = |run: &mut Self, p: &[String]| -> Step<i64> {
            let Value::String(suffix) = run.parse_operand(text)? else {
                return Err(expected("string"));
            };
            let mut length = None;
            edit::edit_at(run.existing(key)?, p, |v| {
                if let Value::String(s) = v {
                    let joined = format!("{s}{suffix}");
                    length = Some(joined.len() as i64);
                    *s = joined.into_boxed_str();
                }
                Ok(After::Keep)
            })?;
            run.changed(key);
            length.ok_or_else(|| NO_PATH.to_string())
        };
        if path.is_legacy() {
            let paths = paths_where(self.existing(key)?, path.text(), is_kind(Kind::String))?;
            if paths.is_empty() {
                return Err(no_path_or("not a string"));
            }
            let mut last = 0;
            for p in paths {
                last = append(self, &p)?;
            }
            self.notify(key, "json.strappend");
            Ok(Answer::Integer(last))
        } else {
            let paths = paths_or_none(self.existing(key)?, path.text(), is_kind(Kind::String))?;
            let mut results = Vec::new();
            let mut any = false;
            for p in paths {
                results.push(match p {
                    Some(p) => {
                        any = true;
                        Answer::Integer(append(self, &p)?)
                    }
                    None => Answer::Nil,
                });
            }
            if any {
                self.notify(key, "json.strappend");
            }
            Ok(Answer::Array(results))
        }
    }

    pub(super) fn str_len(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str().unwrap_or("."));
        let doc = self.read(key)?;
        if path.is_legacy() {
            let Some(doc) = doc else {
                return Ok(Answer::Nil);
            };
            match first(doc, path.text())? {
                Value::String(s) => Ok(Answer::Integer(s.len() as i64)),
                _ => Err(expected("string")),
            }
        } else {
            let doc = doc.ok_or_else(|| NO_KEY.to_string())?;
            Ok(Answer::Array(
                values_or_none(doc, path.text(), is_kind(Kind::String))?
                    .into_iter()
                    .map(|v| match v.and_then(Value::as_str) {
                        Some(s) => Answer::Integer(s.len() as i64),
                        None => Answer::Nil,
                    })
                    .collect(),
            ))
        }
    }

    // ---- arrays ----

    /// The JSON values after the path (`ARRAPPEND`, `ARRINSERT`), parsed before the key is
    /// looked at; at least one is required.
    pub(super) fn items(&self, args: &mut Args<'_>) -> Step<Vec<Value>> {
        if args.remaining() == 0 {
            return Err(args.arity());
        }
        let mut items = Vec::with_capacity(args.remaining());
        while let Some(arg) = args.next() {
            items.push(self.parse_document(utf8(arg)?)?);
        }
        Ok(items)
    }

    pub(super) fn arr_append(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let items = self.items(args)?;
        let nesting = items.iter().map(Value::nesting).max().unwrap_or(0);
        let doc = self.existing(key)?;
        let append = |doc: &mut Value, p: &[String]| -> Step<i64> {
            if p.len() + 1 + nesting > MAX_NESTING {
                return Err(TOO_DEEP.to_string());
            }
            let mut length = None;
            edit::edit_at(doc, p, |v| {
                if let Value::Array(a) = v {
                    for item in &items {
                        a.push(item.clone());
                    }
                    length = Some(a.len() as i64);
                }
                Ok(After::Keep)
            })?;
            length.ok_or_else(|| NO_PATH.to_string())
        };
        if path.is_legacy() {
            let paths = paths_where(doc, path.text(), is_kind(Kind::Array))?;
            if paths.is_empty() {
                return Err(no_path_or("not an array"));
            }
            let mut last = 0;
            for p in paths {
                last = append(doc, &p)?;
            }
            self.notify(key, "json.arrappend");
            Ok(Answer::Integer(last))
        } else {
            let paths = paths_or_none(doc, path.text(), is_kind(Kind::Array))?;
            let mut results = Vec::new();
            let mut any = false;
            for p in paths {
                results.push(match p {
                    Some(p) => match append(doc, &p) {
                        Ok(n) => {
                            any = true;
                            Answer::Integer(n)
                        }
                        Err(e) => {
                            if any {
                                self.changed(key);
                            }
                            return Err(e);
                        }
                    },
                    None => Answer::Nil,
                });
            }
            if any {
                self.notify(key, "json.arrappend");
            }
            Ok(Answer::Array(results))
        }
    }

    pub(super) fn arr_index(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let text = args.next_str()?;
        let start = match args.next() {
            Some(arg) => parse_integer(arg).ok_or_else(|| NOT_INTEGER.to_string())?,
            None => 0,
        };
        let end = match args.next() {
            Some(arg) => parse_integer(arg).ok_or_else(|| NOT_INTEGER.to_string())?,
            None => 0,
        };
        if args.remaining() > 0 {
            return Err(args.arity());
        }
        let needle = self.parse_operand(text)?;
        let doc = self.read(key)?.ok_or_else(|| NO_PATH.to_string())?;
        if path.is_legacy() {
            match first_index(first(doc, path.text())?, &needle, start, end) {
                None => Err(expected("array")),
                Some(i) => Ok(Answer::Integer(i)),
            }
        } else {
            Ok(Answer::Array(
                values(doc, path.text())?
                    .into_iter()
                    .map(|v| {
                        first_index(v, &needle, start, end).map_or(Answer::Nil, Answer::Integer)
                    })
                    .collect(),
            ))
        }
    }

    pub(super) fn arr_insert(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let index = args.next_i64()?;
        let items = self.items(args)?;
        let nesting = items.iter().map(Value::nesting).max().unwrap_or(0);
        let insert = |doc: &mut Value, p: &[String]| -> Step<i64> {
            if p.len() + 1 + nesting > MAX_NESTING {
                return Err(TOO_DEEP.to_string());
            }
            let mut length = None;
            edit::edit_at(doc, p, |v| {
                let Value::Array(a) = v else {
                    return Ok(After::Keep);
                };
                let len = a.len() as i64;
                let at = if index < 0 { len + index } else { index };
                if !(0..=len).contains(&at) {
                    return Err("ERR index out of bounds".to_string());
                }
                a.reserve(items.len());
                for (offset, item) in items.iter().enumerate() {
                    a.insert(at as usize + offset, item.clone());
                }
                length = Some(a.len() as i64);
                Ok(After::Keep)
            })?;
            length.ok_or_else(|| NO_PATH.to_string())
        };
        self.each_array(key, &path, "json.arrinsert", |doc, p| {
            insert(doc, p).map(Answer::Integer)
        })
    }

    /// Runs `change` on every array the path matches, deepest and highest index first, for
    /// `ARRINSERT`, `ARRPOP` and `ARRTRIM`: a legacy path answers the last result (or fails
    /// when nothing is an array), JSONPath a result per match (nil where not an array).
    pub(super) fn each_array(
        &mut self,
        key: &[u8],
        path: &Path<'_>,
        event: &'static str,
        mut change: impl FnMut(&mut Value, &[String]) -> Step<Answer>,
    ) -> Step<Answer> {
        let doc = self.existing(key)?;
        if path.is_legacy() {
            let mut paths = paths_where(doc, path.text(), is_kind(Kind::Array))?;
            if paths.is_empty() {
                return Err(no_path_or("not an array"));
            }
            paths.sort_by(|a, b| mutation_order(a, b));
            let mut last = Answer::Nil;
            for p in paths {
                match change(doc, &p) {
                    Ok(answer) => last = answer,
                    Err(e) => {
                        self.changed(key);
                        return Err(e);
                    }
                }
            }
            self.notify(key, event);
            Ok(last)
        } else {
            let paths = paths_or_none(doc, path.text(), is_kind(Kind::Array))?;
            let mut results = vec![Answer::Nil; paths.len()];
            let mut indexed: Vec<(usize, Vec<String>)> = paths
                .into_iter()
                .enumerate()
                .filter_map(|(i, p)| p.map(|p| (i, p)))
                .collect();
            indexed.sort_by(|(_, a), (_, b)| mutation_order(a, b));
            let mut any = false;
            for (i, p) in indexed {
                match change(doc, &p) {
                    Ok(answer) => {
                        any = true;
                        results[i] = answer;
                    }
                    Err(e) => {
                        if any {
                            self.changed(key);
                        }
                        return Err(e);
                    }
                }
            }
            if any {
                self.notify(key, event);
            }
            Ok(Answer::Array(results))
        }
    }

    pub(super) fn arr_len(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str().unwrap_or("."));
        let Some(doc) = self.read(key)? else {
            return if path.is_legacy() {
                Ok(Answer::Nil)
            } else {
                Err(NO_KEY.to_string())
            };
        };
        let found = values_or_none(doc, path.text(), is_kind(Kind::Array))?;
        if path.is_legacy() {
            return match found.first() {
                None => Err(NO_PATH.to_string()),
                Some(None) => Err(no_path_or("not an array")),
                Some(Some(v)) => Ok(Answer::Integer(v.as_array().map_or(0, |a| a.len()) as i64)),
            };
        }
        Ok(Answer::Array(
            found
                .into_iter()
                .map(|v| match v.and_then(Value::as_array) {
                    Some(a) => Answer::Integer(a.len() as i64),
                    None => Answer::Nil,
                })
                .collect(),
        ))
    }

    pub(super) fn arr_pop(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let mut format = ReplyFormat::Strings;
        let mut path_arg = None;
        if let Some(arg) = args.next() {
            if utf8(arg)?.eq_ignore_ascii_case("FORMAT") {
                match args.next().map(std::str::from_utf8) {
                    Some(Ok(next)) => {
                        format = ReplyFormat::parse(next)?;
                        if format == ReplyFormat::String {
                            return Err(WRONG_REPLY_FORMAT.to_string());
                        }
                        if !self.resp3 {
                            return Err(FORMAT_ON_RESP2.to_string());
                        }
                        path_arg = args.next();
                    }
                    // A lone `FORMAT` (or one followed by what is not text) is the path.
                    Some(Err(_)) | None => path_arg = Some(arg),
                }
            } else {
                path_arg = Some(arg);
            }
        }
        let (path, index) = match path_arg {
            None => (Path::new("."), i64::MAX),
            Some(arg) => {
                let path = Path::new(utf8(arg)?);
                let index = args.next().and_then(parse_integer).unwrap_or(-1);
                (path, index)
            }
        };
        if path.is_legacy() && format != ReplyFormat::Strings {
            return Err("Legacy paths are supported only with FORMAT STRINGS".to_string());
        }
        let formatting = Formatting {
            format,
            layout: Layout::default(),
            resp3: self.resp3,
        };
        let legacy = path.is_legacy();
        let mut popped_any = false;
        let answer = self.each_array(key, &path, "json.arrpop", |doc, p| {
            let mut popped = None;
            edit::edit_at(doc, p, |v| {
                let Value::Array(a) = v else {
                    return Err(expected("array"));
                };
                if !a.is_empty() {
                    let len = a.len() as i64;
                    popped = a.remove(edit::start_index(index, len) as usize);
                }
                Ok(After::Keep)
            })?;
            Ok(match popped {
                None => Answer::Nil,
                Some(v) => {
                    popped_any = true;
                    if formatting.typed_reply() {
                        typed(&v, &formatting)
                    } else {
                        Answer::Bulk(to_text(&v))
                    }
                }
            })
        })?;
        // RedisJSON raises the event for JSONPath only when something was popped.
        if !legacy && !popped_any {
            self.events
                .retain(|(k, e)| !(k == key && *e == "json.arrpop"));
        }
        Ok(answer)
    }

    pub(super) fn arr_trim(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let start = args.next_i64()?;
        let stop = args.next_i64()?;
        self.each_array(key, &path, "json.arrtrim", |doc, p| {
            let mut length = None;
            edit::edit_at(doc, p, |v| {
                let Value::Array(a) = v else {
                    return Err(expected("array"));
                };
                a.keep_range(edit::trim_range(start, stop, a.len()));
                length = Some(a.len() as i64);
                Ok(After::Keep)
            })?;
            length
                .map(Answer::Integer)
                .ok_or_else(|| NO_PATH.to_string())
        })
    }

    // ---- objects, CLEAR ----

    pub(super) fn obj_keys(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str().unwrap_or("."));
        let doc = self.read(key)?;
        let names = |o: &crate::json::Object| Answer::Array(o.keys().map(Answer::bulk).collect());
        if path.is_legacy() {
            let Some(doc) = doc else {
                return Ok(Answer::Nil);
            };
            match first(doc, path.text()) {
                Ok(Value::Object(o)) => Ok(names(o)),
                Ok(_) => Err(no_path_or("not an object")),
                Err(_) => Ok(Answer::Nil),
            }
        } else {
            let doc = doc.ok_or_else(|| NO_KEY.to_string())?;
            Ok(Answer::Array(
                values_or_none(doc, path.text(), is_kind(Kind::Object))?
                    .into_iter()
                    .map(|v| v.and_then(Value::as_object).map_or(Answer::Nil, names))
                    .collect(),
            ))
        }
    }

    pub(super) fn obj_len(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str().unwrap_or("."));
        let doc = self.read(key)?;
        if path.is_legacy() {
            let Some(doc) = doc else {
                return Ok(Answer::Nil);
            };
            match first(doc, path.text()) {
                Ok(Value::Object(o)) => Ok(Answer::Integer(o.len() as i64)),
                Ok(_) => Err(expected("object")),
                Err(_) => Ok(Answer::Nil),
            }
        } else {
            let doc = doc.ok_or_else(|| no_path_or("not an object"))?;
            Ok(Answer::Array(
                values_or_none(doc, path.text(), is_kind(Kind::Object))?
                    .into_iter()
                    .map(|v| match v.and_then(Value::as_object) {
                        Some(o) => Answer::Integer(o.len() as i64),
                        None => Answer::Nil,
                    })
                    .collect(),
            ))
        }
    }

    pub(super) fn clear(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let mut paths = Vec::new();
        while let Some(arg) = args.next() {
            paths.push(Path::new(utf8(arg)?));
        }
        // Only the first path counts, as in RedisJSON.
        let path = paths.into_iter().next().unwrap_or_else(|| Path::new("."));
        let doc = self.existing(key)?;
        let clearable = |v: &Value| match v {
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            Value::Number(Number::Int(i)) => *i != 0,
            Value::Number(n) => n.to_f64() != 0.0,
            _ => false,
        };
        let mut cleared = 0;
        for p in paths_where(doc, path.text(), clearable)? {
            edit::edit_at(doc, &p, |v| {
                match v {
                    Value::Object(o) => o.clear(),
                    Value::Array(a) => a.clear(),
                    Value::Number(_) => *v = Value::Number(Number::Int(0)),
                    _ => return Ok(After::Keep),
                }
                cleared += 1;
                Ok(After::Keep)
            })?;
        }
        if cleared > 0 {
            self.notify(key, "json.clear");
        }
        Ok(Answer::Integer(cleared))
    }
}
