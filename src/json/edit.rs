//! Changes at concrete paths, as RedisJSON's `ijson` key holder makes them: the walk down a
//! path's steps, what happens at its end, and the merge of RFC 7396.

use super::value::{Number, Value};

/// What becomes of the value at the end of a path after an edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum After {
    Keep,
    Remove,
}

/// Follows `path` (member names, array indexes as text) from `root` and applies `edit` to the
/// value at its end, if there is one. An object's last step goes through `ijson`'s entry API
/// (which reserves room for a member); a step that is not a number inside an array fails as
/// RedisJSON's does; a path that leaves the document changes nothing.
pub(crate) fn update(
    root: &mut Value,
    path: &[String],
    mut edit: impl FnMut(&mut Value) -> Result<After, String>,
) -> Result<(), String> {
    let mut target = root;
    let last = path.len().saturating_sub(1);
    for (i, step) in path.iter().enumerate() {
        let next = match target {
            Value::Object(object) => {
                if i == last {
                    if let Some(value) = object.entry_mut(step) {
                        if edit(value)? == After::Remove {
                            object.remove(step);
                        }
                    }
                    return Ok(());
                }
                object.get_mut(step)
            }
            Value::Array(array) => {
                let index = step.parse::<usize>().map_err(|e| format!("ERR {e}"))?;
                if i == last {
                    if let Some(value) = array.get_mut(index) {
                        if edit(value)? == After::Remove {
                            array.remove(index);
                        }
                    }
                    return Ok(());
                }
                array.get_mut(index)
            }
            _ => None,
        };
        match next {
            Some(next) => target = next,
            None => break,
        }
    }
    Ok(())
}

/// `update`, except that the root itself is edited for an empty path (removing the root
/// leaves null, as taking an `IValue` does).
pub(crate) fn edit_at(
    root: &mut Value,
    path: &[String],
    mut edit: impl FnMut(&mut Value) -> Result<After, String>,
) -> Result<(), String> {
    if path.is_empty() {
        if edit(root)? == After::Remove {
            *root = Value::Null;
        }
        Ok(())
    } else {
        update(root, path, edit)
    }
}

/// RFC 7396 as RedisJSON applies it: a non-object patch replaces; an object patch turns the
/// target into an object (an empty one if it was not) and merges member by member, null
/// removing.
pub(crate) fn merge(doc: &mut Value, patch: &Value) {
    let Value::Object(members) = patch else {
        *doc = patch.clone();
        return;
    };
    if !matches!(doc, Value::Object(_)) {
        *doc = Value::new_object();
    }
    let Value::Object(target) = doc else {
        unreachable!("made an object above")
    };
    for (key, value) in members.iter() {
        if matches!(value, Value::Null) {
            target.remove(key);
        } else {
            merge(target.entry_or_null(key), value);
        }
    }
}

/// The normalised start of an index range (`JSON.ARRINDEX`, `JSON.ARRPOP`).
pub(crate) fn start_index(start: i64, len: i64) -> i64 {
    if start < 0 {
        (len + start).max(0)
    } else {
        start.min(len - 1)
    }
}

/// `JSON.ARRTRIM`'s normalisation of an index into `0..len`.
fn trim_index(index: i64, len: i64) -> i64 {
    if index < 0 {
        len - len.min(index.saturating_neg())
    } else if len > 0 {
        (len - 1).min(index)
    } else {
        0
    }
}

/// The range `JSON.ARRTRIM` keeps.
pub(crate) fn trim_range(start: i64, stop: i64, len: usize) -> std::ops::Range<usize> {
    let len = len as i64;
    let stop = trim_index(stop, len);
    let start = if start < 0 || start < len {
        trim_index(start, len)
    } else {
        stop + 1
    };
    if start > stop || len == 0 {
        0..0
    } else {
        start as usize..(stop + 1) as usize
    }
}

/// One numeric command's arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arithmetic {
    Add,
    Multiply,
    Power,
}

/// `value op operand` as RedisJSON computes it: two integers wrap as `i64`s do (a power's
/// exponent is cut to 32 bits, as RedisJSON casts it); anything else is a float, and a result
/// that is not finite is refused.
pub(crate) fn arithmetic(op: Arithmetic, value: Number, operand: Number) -> Result<Number, String> {
    if let (Number::Int(a), Number::Int(b)) = (value, operand) {
        return Ok(Number::Int(match op {
            Arithmetic::Add => a.wrapping_add(b),
            Arithmetic::Multiply => a.wrapping_mul(b),
            Arithmetic::Power => a.wrapping_pow(b as u32),
        }));
    }
    let (a, b) = (value.to_f64(), operand.to_f64());
    let result = match op {
        Arithmetic::Add => a + b,
        Arithmetic::Multiply => a * b,
        Arithmetic::Power => a.powf(b),
    };
    if result.is_finite() {
        Ok(Number::Float(result))
    } else {
        Err("result is not a number".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_as_redisjson_trims() {
        assert_eq!(trim_range(1, 3, 5), 1..4);
        assert_eq!(trim_range(-2, -1, 5), 3..5);
        assert_eq!(trim_range(0, -1, 5), 0..5);
        assert_eq!(trim_range(7, 9, 5), 0..0);
        assert_eq!(trim_range(3, 1, 5), 0..0);
        assert_eq!(trim_range(0, 0, 0), 0..0);
        assert_eq!(trim_range(i64::MIN, i64::MAX, 3), 0..3);
    }

    #[test]
    fn integer_arithmetic_wraps() {
        assert_eq!(
            arithmetic(Arithmetic::Add, Number::Int(i64::MAX), Number::Int(1)),
            Ok(Number::Int(i64::MIN))
        );
        assert_eq!(
            arithmetic(Arithmetic::Power, Number::Int(2), Number::Int(-1)),
            Ok(Number::Int(0))
        );
        assert_eq!(
            arithmetic(Arithmetic::Add, Number::Int(7), Number::Float(3.0)),
            Ok(Number::Float(10.0))
        );
        assert!(arithmetic(
            Arithmetic::Multiply,
            Number::Float(1e300),
            Number::Float(1e300)
        )
        .is_err());
    }
}
