//! JSON text in: RedisJSON parses documents with `serde_json` (1.0.146, default features) into
//! `ijson` values, and its replies quote `serde_json`'s error messages with their line and
//! column. This parser builds `Value`s directly and reports the same errors at the same
//! positions; numbers are read by the same steps, including the way a long mantissa or a large
//! exponent turns into a float, so every document parses to the bits RedisJSON stores.

use super::value::{Array, Member, Number, Object, Value, MAX_NESTING};
use std::fmt;

/// How deep a command's JSON argument may nest: `serde_json`'s recursion limit of 128 lets
/// 127 levels of arrays and objects through.
pub const COMMAND_NESTING: usize = 127;

/// What may be built from one text.
#[derive(Debug, Clone, Copy)]
pub struct ParseLimits {
    /// Levels of arrays and objects allowed (`COMMAND_NESTING` for commands).
    pub nesting: usize,
    /// Heap bytes the new value may take (strings, numbers' and containers' slots, counted as
    /// they are reserved), so that a document over the memory limit is refused while it is
    /// being built, before it is whole.
    pub max_bytes: usize,
    /// Read floats exactly (correctly rounded) rather than as RedisJSON's parser does, whose
    /// result may be a unit in the last place off: for sieved's own snapshots and logs, whose
    /// floats were printed by `to_text` and must read back as the same bits.
    pub exact_floats: bool,
}

impl ParseLimits {
    /// The limits RedisJSON applies to a command's argument, with a memory budget.
    pub fn command(max_bytes: usize) -> ParseLimits {
        ParseLimits {
            nesting: COMMAND_NESTING,
            max_bytes,
            exact_floats: false,
        }
    }

    /// For documents RedisJSON stored (its RDB and DUMP payloads), which it loads without a
    /// depth limit (sieved stops at `MAX_NESTING`), floats read as RedisJSON reads them.
    pub fn stored(max_bytes: usize) -> ParseLimits {
        ParseLimits {
            nesting: MAX_NESTING,
            max_bytes,
            exact_floats: false,
        }
    }

    /// For documents sieved itself wrote: any depth a document may have, floats exact.
    pub fn own(max_bytes: usize) -> ParseLimits {
        ParseLimits {
            nesting: MAX_NESTING,
            max_bytes,
            exact_floats: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    EofWhileParsingList,
    EofWhileParsingObject,
    EofWhileParsingString,
    EofWhileParsingValue,
    ExpectedColon,
    ExpectedListCommaOrEnd,
    ExpectedObjectCommaOrEnd,
    ExpectedSomeIdent,
    ExpectedSomeValue,
    InvalidEscape,
    InvalidNumber,
    NumberOutOfRange,
    ControlCharacterWhileParsingString,
    KeyMustBeAString,
    LoneLeadingSurrogateInHexEscape,
    TrailingComma,
    TrailingCharacters,
    UnexpectedEndOfHexEscape,
    RecursionLimitExceeded,
}

impl ErrorCode {
    fn message(self) -> &'static str {
        match self {
            ErrorCode::EofWhileParsingList => "EOF while parsing a list",
            ErrorCode::EofWhileParsingObject => "EOF while parsing an object",
            ErrorCode::EofWhileParsingString => "EOF while parsing a string",
            ErrorCode::EofWhileParsingValue => "EOF while parsing a value",
            ErrorCode::ExpectedColon => "expected `:`",
            ErrorCode::ExpectedListCommaOrEnd => "expected `,` or `]`",
            ErrorCode::ExpectedObjectCommaOrEnd => "expected `,` or `}`",
            ErrorCode::ExpectedSomeIdent => "expected ident",
            ErrorCode::ExpectedSomeValue => "expected value",
            ErrorCode::InvalidEscape => "invalid escape",
            ErrorCode::InvalidNumber => "invalid number",
            ErrorCode::NumberOutOfRange => "number out of range",
            ErrorCode::ControlCharacterWhileParsingString => {
                "control character (\\u0000-\\u001F) found while parsing a string"
            }
            ErrorCode::KeyMustBeAString => "key must be a string",
            ErrorCode::LoneLeadingSurrogateInHexEscape => "lone leading surrogate in hex escape",
            ErrorCode::TrailingComma => "trailing comma",
            ErrorCode::TrailingCharacters => "trailing characters",
            ErrorCode::UnexpectedEndOfHexEscape => "unexpected end of hex escape",
            ErrorCode::RecursionLimitExceeded => "recursion limit exceeded",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// `serde_json`'s syntax error; displays as its text, `... at line L column C`.
    Syntax {
        code: ErrorCode,
        line: usize,
        column: usize,
    },
    /// The value would take more than `ParseLimits::max_bytes`.
    TooLarge,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Syntax { code, line, column } => {
                write!(f, "{} at line {line} column {column}", code.message())
            }
            ParseError::TooLarge => f.write_str("document too large"),
        }
    }
}

impl std::error::Error for ParseError {}

/// Parses one JSON text (surrounding whitespace allowed) into a value.
pub fn parse(text: &str, limits: ParseLimits) -> Result<Value, ParseError> {
    let mut parser = Parser {
        input: text.as_bytes(),
        at: 0,
        depth_left: limits.nesting + 1,
        bytes_left: limits.max_bytes,
        exact_floats: limits.exact_floats,
    };
    let value = parser.value()?;
    match parser.skip_whitespace() {
        Some(_) => Err(parser.peek_error(ErrorCode::TrailingCharacters)),
        None => Ok(value),
    }
}

/// `serde_json`'s table of exact powers of ten, 1e0 through 1e308.
fn pow10(exponent: usize) -> Option<f64> {
    static TABLE: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    TABLE
        .get_or_init(|| {
            (0..=308)
                .map(|e| format!("1e{e}").parse::<f64>().expect("a valid literal"))
                .collect()
        })
        .get(exponent)
        .copied()
}

struct Parser<'a> {
    input: &'a [u8],
    at: usize,
    /// `serde_json`'s remaining depth: one more than the levels still allowed.
    depth_left: usize,
    bytes_left: usize,
    exact_floats: bool,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.input.get(self.at).copied()
    }

    fn peek_or_null(&self) -> u8 {
        self.peek().unwrap_or(0)
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    fn position_of(&self, at: usize) -> (usize, usize) {
        let before = &self.input[..at];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        let line = 1 + before[..line_start].iter().filter(|&&b| b == b'\n').count();
        (line, at - line_start)
    }

    /// An error at the current position (after the byte just read).
    fn error(&self, code: ErrorCode) -> ParseError {
        let (line, column) = self.position_of(self.at);
        ParseError::Syntax { code, line, column }
    }

    /// An error at the byte only peeked at.
    fn peek_error(&self, code: ErrorCode) -> ParseError {
        let (line, column) = self.position_of((self.at + 1).min(self.input.len()));
        ParseError::Syntax { code, line, column }
    }

    fn skip_whitespace(&mut self) -> Option<u8> {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
        self.peek()
    }

    fn charge(&mut self, bytes: usize) -> Result<(), ParseError> {
        self.bytes_left = self
            .bytes_left
            .checked_sub(bytes)
            .ok_or(ParseError::TooLarge)?;
        Ok(())
    }

    fn value(&mut self) -> Result<Value, ParseError> {
        let Some(peek) = self.skip_whitespace() else {
            return Err(self.peek_error(ErrorCode::EofWhileParsingValue));
        };
        match peek {
            b'n' => {
                self.at += 1;
                self.ident(b"ull")?;
                Ok(Value::Null)
            }
            b't' => {
                self.at += 1;
                self.ident(b"rue")?;
                Ok(Value::Bool(true))
            }
            b'f' => {
                self.at += 1;
                self.ident(b"alse")?;
                Ok(Value::Bool(false))
            }
            b'-' => {
                let start = self.at;
                self.at += 1;
                let n = self.integer(false)?;
                self.number_value(start, n)
            }
            b'0'..=b'9' => {
                let start = self.at;
                let n = self.integer(true)?;
                self.number_value(start, n)
            }
            b'"' => {
                self.at += 1;
                let s = self.string()?;
                self.charge(s.len())?;
                Ok(Value::String(s.into_boxed_str()))
            }
            b'[' => {
                self.descend()?;
                self.at += 1;
                let array = self.array();
                self.depth_left += 1;
                let array = array?;
                self.end_list()?;
                Ok(Value::Array(Box::new(array)))
            }
            b'{' => {
                self.descend()?;
                self.at += 1;
                let object = self.object();
                self.depth_left += 1;
                let object = object?;
                self.end_object()?;
                Ok(Value::Object(Box::new(object)))
            }
            _ => Err(self.peek_error(ErrorCode::ExpectedSomeValue)),
        }
    }

    fn number_value(&mut self, start: usize, n: Number) -> Result<Value, ParseError> {
        let n = match n {
            Number::Float(_) if self.exact_floats => {
                let text = std::str::from_utf8(&self.input[start..self.at]).expect("ASCII digits");
                match text.parse::<f64>() {
                    Ok(f) if f.is_finite() => Number::Float(f),
                    _ => return Err(self.error(ErrorCode::NumberOutOfRange)),
                }
            }
            n => n,
        };
        let heap = match n {
            Number::Int(i) if (-128..384).contains(&i) => 0,
            Number::Int(i) if (-(1 << 23)..1 << 23).contains(&i) => 4,
            _ => 16,
        };
        self.charge(heap)?;
        Ok(Value::Number(n))
    }

    fn descend(&mut self) -> Result<(), ParseError> {
        self.depth_left -= 1;
        if self.depth_left == 0 {
            return Err(self.peek_error(ErrorCode::RecursionLimitExceeded));
        }
        Ok(())
    }

    fn ident(&mut self, rest: &[u8]) -> Result<(), ParseError> {
        for &expected in rest {
            match self.next() {
                None => return Err(self.error(ErrorCode::EofWhileParsingValue)),
                Some(byte) if byte != expected => {
                    return Err(self.error(ErrorCode::ExpectedSomeIdent))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    fn array(&mut self) -> Result<Array, ParseError> {
        let mut array = Array::default();
        let mut first = true;
        loop {
            let Some(peek) = self.skip_whitespace() else {
                return Err(self.peek_error(ErrorCode::EofWhileParsingList));
            };
            if peek == b']' {
                return Ok(array);
            }
            if first {
                first = false;
            } else if peek == b',' {
                self.at += 1;
                match self.skip_whitespace() {
                    Some(b']') => return Err(self.peek_error(ErrorCode::TrailingComma)),
                    Some(_) => {}
                    None => return Err(self.peek_error(ErrorCode::EofWhileParsingValue)),
                }
            } else {
                return Err(self.peek_error(ErrorCode::ExpectedListCommaOrEnd));
            }
            let value = self.value()?;
            let before = array.capacity();
            array.push(value);
            self.charge((array.capacity() - before) * std::mem::size_of::<Value>())?;
        }
    }

    fn end_list(&mut self) -> Result<(), ParseError> {
        match self.skip_whitespace() {
            Some(b']') => {
                self.at += 1;
                Ok(())
            }
            Some(b',') => {
                self.at += 1;
                match self.skip_whitespace() {
                    Some(b']') => Err(self.peek_error(ErrorCode::TrailingComma)),
                    _ => Err(self.peek_error(ErrorCode::TrailingCharacters)),
                }
            }
            Some(_) => Err(self.peek_error(ErrorCode::TrailingCharacters)),
            None => Err(self.peek_error(ErrorCode::EofWhileParsingList)),
        }
    }

    fn object(&mut self) -> Result<Object, ParseError> {
        let mut object = Object::default();
        let mut first = true;
        loop {
            let Some(peek) = self.skip_whitespace() else {
                return Err(self.peek_error(ErrorCode::EofWhileParsingObject));
            };
            if peek == b'}' {
                return Ok(object);
            }
            if first {
                first = false;
                if peek != b'"' {
                    return Err(self.peek_error(ErrorCode::KeyMustBeAString));
                }
            } else if peek == b',' {
                self.at += 1;
                match self.skip_whitespace() {
                    Some(b'"') => {}
                    Some(b'}') => return Err(self.peek_error(ErrorCode::TrailingComma)),
                    Some(_) => return Err(self.peek_error(ErrorCode::KeyMustBeAString)),
                    None => return Err(self.peek_error(ErrorCode::EofWhileParsingValue)),
                }
            } else {
                return Err(self.peek_error(ErrorCode::ExpectedObjectCommaOrEnd));
            }
            self.at += 1;
            let key = self.string()?;
            match self.skip_whitespace() {
                Some(b':') => self.at += 1,
                Some(_) => return Err(self.peek_error(ErrorCode::ExpectedColon)),
                None => return Err(self.peek_error(ErrorCode::EofWhileParsingObject)),
            }
            let value = self.value()?;
            let before = object.capacity();
            self.charge(key.len())?;
            object.insert(&key, value);
            self.charge((object.capacity() - before) * std::mem::size_of::<Member>())?;
        }
    }

    fn end_object(&mut self) -> Result<(), ParseError> {
        match self.skip_whitespace() {
            Some(b'}') => {
                self.at += 1;
                Ok(())
            }
            Some(b',') => Err(self.peek_error(ErrorCode::TrailingComma)),
            Some(_) => Err(self.peek_error(ErrorCode::TrailingCharacters)),
            None => Err(self.peek_error(ErrorCode::EofWhileParsingObject)),
        }
    }

    /// A string's contents; the opening quote is already read.
    fn string(&mut self) -> Result<String, ParseError> {
        let mut out: Vec<u8> = Vec::new();
        loop {
            let start = self.at;
            while let Some(&b) = self.input.get(self.at) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.at += 1;
            }
            out.extend_from_slice(&self.input[start..self.at]);
            match self.peek() {
                None => return Err(self.error(ErrorCode::EofWhileParsingString)),
                Some(b'"') => {
                    self.at += 1;
                    // Only whole UTF-8 sequences from a `str` and whole escapes went in.
                    return Ok(String::from_utf8(out).expect("valid UTF-8"));
                }
                Some(b'\\') => {
                    self.at += 1;
                    self.escape(&mut out)?;
                }
                Some(_) => {
                    self.at += 1;
                    return Err(self.error(ErrorCode::ControlCharacterWhileParsingString));
                }
            }
        }
    }

    fn next_in_string(&mut self) -> Result<u8, ParseError> {
        self.next()
            .ok_or_else(|| self.error(ErrorCode::EofWhileParsingString))
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), ParseError> {
        let byte = match self.next_in_string()? {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => return self.unicode_escape(out),
            _ => return Err(self.error(ErrorCode::InvalidEscape)),
        };
        out.push(byte);
        Ok(())
    }

    fn hex_escape(&mut self) -> Result<u16, ParseError> {
        let Some(digits) = self.input.get(self.at..self.at + 4) else {
            self.at = self.input.len();
            return Err(self.error(ErrorCode::EofWhileParsingString));
        };
        self.at += 4;
        let mut n: u16 = 0;
        for &d in digits {
            let digit = (d as char)
                .to_digit(16)
                .ok_or_else(|| self.error(ErrorCode::InvalidEscape))?;
            n = n << 4 | digit as u16;
        }
        Ok(n)
    }

    fn unicode_escape(&mut self, out: &mut Vec<u8>) -> Result<(), ParseError> {
        let first = self.hex_escape()?;
        if (0xDC00..=0xDFFF).contains(&first) {
            return Err(self.error(ErrorCode::LoneLeadingSurrogateInHexEscape));
        }
        let code = if (0xD800..=0xDBFF).contains(&first) {
            for expected in [b'\\', b'u'] {
                match self.peek() {
                    None => return Err(self.error(ErrorCode::EofWhileParsingString)),
                    Some(b) if b == expected => self.at += 1,
                    Some(_) => {
                        self.at += 1;
                        return Err(self.error(ErrorCode::UnexpectedEndOfHexEscape));
                    }
                }
            }
            let second = self.hex_escape()?;
            if !(0xDC00..=0xDFFF).contains(&second) {
                return Err(self.error(ErrorCode::LoneLeadingSurrogateInHexEscape));
            }
            ((u32::from(first) - 0xD800) << 10 | (u32::from(second) - 0xDC00)) + 0x1_0000
        } else {
            u32::from(first)
        };
        let c = char::from_u32(code).expect("surrogates excluded");
        out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        Ok(())
    }

    /// A number after its sign.
    fn integer(&mut self, positive: bool) -> Result<Number, ParseError> {
        let Some(first) = self.next() else {
            return Err(self.error(ErrorCode::EofWhileParsingValue));
        };
        match first {
            b'0' => match self.peek_or_null() {
                b'0'..=b'9' => Err(self.peek_error(ErrorCode::InvalidNumber)),
                _ => self.number(positive, 0),
            },
            b'1'..=b'9' => {
                let mut significand = u64::from(first - b'0');
                loop {
                    match self.peek_or_null() {
                        c @ b'0'..=b'9' => {
                            let digit = u64::from(c - b'0');
                            match significand
                                .checked_mul(10)
                                .and_then(|s| s.checked_add(digit))
                            {
                                Some(next) => {
                                    self.at += 1;
                                    significand = next;
                                }
                                None => {
                                    return self
                                        .long_integer(positive, significand)
                                        .map(Number::Float)
                                }
                            }
                        }
                        _ => return self.number(positive, significand),
                    }
                }
            }
            _ => Err(self.error(ErrorCode::InvalidNumber)),
        }
    }

    fn number(&mut self, positive: bool, significand: u64) -> Result<Number, ParseError> {
        Ok(match self.peek_or_null() {
            b'.' => Number::Float(self.decimal(positive, significand, 0)?),
            b'e' | b'E' => Number::Float(self.exponent(positive, significand, 0)?),
            _ if positive => match i64::try_from(significand) {
                Ok(i) => Number::Int(i),
                Err(_) => Number::UInt(significand),
            },
            _ => {
                let negated = (significand as i64).wrapping_neg();
                // `-0` and magnitudes past i64::MIN become floats, as serde_json makes them.
                if negated >= 0 {
                    Number::Float(-(significand as f64))
                } else {
                    Number::Int(negated)
                }
            }
        })
    }

    fn decimal(
        &mut self,
        positive: bool,
        mut significand: u64,
        exponent_before_point: i32,
    ) -> Result<f64, ParseError> {
        self.at += 1;
        let mut exponent_after_point: i32 = 0;
        while let c @ b'0'..=b'9' = self.peek_or_null() {
            let digit = u64::from(c - b'0');
            match significand
                .checked_mul(10)
                .and_then(|s| s.checked_add(digit))
            {
                Some(next) => {
                    self.at += 1;
                    significand = next;
                    exponent_after_point -= 1;
                }
                None => {
                    // Further digits no longer change the float: skip them.
                    while let b'0'..=b'9' = self.peek_or_null() {
                        self.at += 1;
                    }
                    let exponent = exponent_before_point + exponent_after_point;
                    return match self.peek_or_null() {
                        b'e' | b'E' => self.exponent(positive, significand, exponent),
                        _ => self.float_from_parts(positive, significand, exponent),
                    };
                }
            }
        }
        if exponent_after_point == 0 {
            return Err(match self.peek() {
                Some(_) => self.peek_error(ErrorCode::InvalidNumber),
                None => self.peek_error(ErrorCode::EofWhileParsingValue),
            });
        }
        let exponent = exponent_before_point + exponent_after_point;
        match self.peek_or_null() {
            b'e' | b'E' => self.exponent(positive, significand, exponent),
            _ => self.float_from_parts(positive, significand, exponent),
        }
    }

    fn exponent(
        &mut self,
        positive: bool,
        significand: u64,
        starting: i32,
    ) -> Result<f64, ParseError> {
        self.at += 1;
        let positive_exponent = match self.peek_or_null() {
            b'+' => {
                self.at += 1;
                true
            }
            b'-' => {
                self.at += 1;
                false
            }
            _ => true,
        };
        let mut exponent = match self.next() {
            None => return Err(self.error(ErrorCode::EofWhileParsingValue)),
            Some(c @ b'0'..=b'9') => i32::from(c - b'0'),
            Some(_) => return Err(self.error(ErrorCode::InvalidNumber)),
        };
        while let c @ b'0'..=b'9' = self.peek_or_null() {
            self.at += 1;
            let digit = i32::from(c - b'0');
            match exponent.checked_mul(10).and_then(|e| e.checked_add(digit)) {
                Some(next) => exponent = next,
                None => {
                    if significand != 0 && positive_exponent {
                        return Err(self.error(ErrorCode::NumberOutOfRange));
                    }
                    while let b'0'..=b'9' = self.peek_or_null() {
                        self.at += 1;
                    }
                    return Ok(if positive { 0.0 } else { -0.0 });
                }
            }
        }
        let exponent = if positive_exponent {
            starting.saturating_add(exponent)
        } else {
            starting.saturating_sub(exponent)
        };
        self.float_from_parts(positive, significand, exponent)
    }

    /// `serde_json`'s conversion (without its `float_roundtrip` feature): the significand as a
    /// double, multiplied or divided by a power of ten from its table.
    fn float_from_parts(
        &mut self,
        positive: bool,
        significand: u64,
        mut exponent: i32,
    ) -> Result<f64, ParseError> {
        let mut f = significand as f64;
        loop {
            match pow10(exponent.unsigned_abs() as usize) {
                Some(pow) => {
                    if exponent >= 0 {
                        f *= pow;
                        if f.is_infinite() {
                            return Err(self.error(ErrorCode::NumberOutOfRange));
                        }
                    } else {
                        f /= pow;
                    }
                    break;
                }
                None => {
                    if f == 0.0 {
                        break;
                    }
                    if exponent >= 0 {
                        return Err(self.error(ErrorCode::NumberOutOfRange));
                    }
                    f /= 1e308;
                    exponent += 308;
                }
            }
        }
        Ok(if positive { f } else { -f })
    }

    /// An integer too long for a `u64`: the digits past it only scale the float.
    fn long_integer(&mut self, positive: bool, significand: u64) -> Result<f64, ParseError> {
        let mut exponent: i32 = 0;
        loop {
            match self.peek_or_null() {
                b'0'..=b'9' => {
                    self.at += 1;
                    exponent = exponent.saturating_add(1);
                }
                b'.' => return self.decimal(positive, significand, exponent),
                b'e' | b'E' => return self.exponent(positive, significand, exponent),
                _ => return self.float_from_parts(positive, significand, exponent),
            }
        }
    }
}

#[cfg(test)]
mod parse_tests;
