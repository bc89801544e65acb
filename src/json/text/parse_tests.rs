use super::*;
use proptest::prelude::*;

fn ours(text: &str) -> Result<Value, String> {
    parse(text, ParseLimits::command(usize::MAX)).map_err(|e| e.to_string())
}

/// serde_json's own verdict, reduced to what both can express: the error text, or the
/// compact rendering of the value (member order aside, which serde_json's map sorts).
fn reference(text: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str::<serde_json::Value>(text).map_err(|e| e.to_string())
}

fn to_reference(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Number(Number::Int(i)) => (*i).into(),
        Value::Number(Number::UInt(u)) => (*u).into(),
        Value::Number(Number::Float(f)) => serde_json::Number::from_f64(*f)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        Value::String(s) => serde_json::Value::String(s.to_string()),
        Value::Array(a) => a.iter().map(to_reference).collect(),
        Value::Object(o) => o
            .iter()
            .map(|(k, v)| (k.to_string(), to_reference(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
    }
}

fn agree(text: &str) {
    let ours = ours(text);
    let reference = reference(text);
    match (&ours, &reference) {
        (Ok(a), Ok(b)) => {
            let a = to_reference(a);
            assert_eq!(&a, b, "{text:?}");
            // Floats must be the same bits, not just equal.
            assert_eq!(a.to_string(), b.to_string(), "{text:?}");
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "{text:?}"),
        _ => panic!("{text:?}: ours {ours:?}, serde_json {reference:?}"),
    }
}

#[test]
fn matches_serde_json_on_the_transcripts_bad_documents() {
    for text in [
        "",
        " ",
        "tru",
        "nul",
        "{a:1}",
        "{\"a\":1,}",
        "[1,]",
        "[1 2]",
        "{\"a\" 1}",
        "--1",
        "01",
        "1.",
        "1.e3",
        "1e",
        "1e+",
        "\"unterminated",
        "\"bad \\x escape\"",
        "\"\\ud800\"",
        "\"\\ud800\\u0041\"",
        "\"\\udc00\"",
        "\"\\u12\"",
        "\"\\u12G4\"",
        "\"tab\there\"",
        "1e400",
        "-1e400",
        "1e-400",
        "123456789012345678901234567890",
        "-9223372036854775808",
        "-9223372036854775809",
        "18446744073709551615",
        "18446744073709551616",
        "-0",
        "0.1",
        "2.5e-3",
        "1E5",
        "[[]]]",
        "{}}",
        "{\"a\":1}x",
        "\n\n  [1,\n  x]",
        "0.000000000000000000000000000000000000000000001e-300",
        "1.7976931348623157e308",
        "1.7976931348623159e308",
        "4.9e-324",
        "123.456e999999999999",
        "0e999999999999",
        "12345678901234567890123.5",
        "1.23456789012345678901234567890",
    ] {
        agree(text);
    }
}

#[test]
fn nests_127_levels_and_refuses_128() {
    agree(&format!("{}{}", "[".repeat(127), "]".repeat(127)));
    agree(&format!("{}{}", "[".repeat(128), "]".repeat(128)));
    agree(&format!("{}1{}", "{\"a\":".repeat(128), "}".repeat(128)));
}

#[test]
fn duplicate_keys_keep_their_first_place_and_last_value() {
    let v = ours(r#"{"a":1,"b":2,"a":3}"#).unwrap();
    let o = v.as_object().unwrap();
    assert_eq!(o.iter().map(|(k, _)| k).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(o.get("a"), Some(&Value::Number(Number::Int(3))));
}

#[test]
fn own_texts_read_floats_back_exactly() {
    // 17 significant digits: serde_json's conversion rounds twice and may miss by an ulp.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut redisjson_misses = 0;
    for _ in 0..20_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let f = f64::from_bits(state >> 2);
        if !f.is_finite() {
            continue;
        }
        let text = crate::json::to_text(&Value::Number(Number::Float(f)));
        let text = std::str::from_utf8(&text).unwrap();
        let back = parse(text, ParseLimits::own(usize::MAX));
        assert_eq!(back, Ok(Value::Number(Number::Float(f))), "{f:e}");
        if parse(text, ParseLimits::stored(usize::MAX)) != back {
            redisjson_misses += 1;
        }
    }
    assert!(redisjson_misses > 0, "the exact mode would not be needed");
}

#[test]
fn refuses_documents_over_the_budget() {
    let limits = ParseLimits::command(100);
    assert!(parse("[1,2,3]", limits).is_ok());
    assert_eq!(
        parse(&format!("\"{}\"", "x".repeat(200)), limits),
        Err(ParseError::TooLarge)
    );
    assert_eq!(
        parse(&format!("[{}1]", "1,".repeat(100)), limits),
        Err(ParseError::TooLarge)
    );
}

proptest! {
    #[test]
    fn agrees_with_serde_json_on_json_like_text(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("{"), Just("}"), Just("["), Just("]"), Just(","), Just(":"),
                Just("\""), Just("\\"), Just("u"), Just("d8"), Just("dc"), Just("00"),
                Just("n"), Just("true"), Just("null"), Just("fals"), Just(" "),
                Just("\n"), Just("\t"), Just("-"), Just("0"), Just("1"), Just("9"),
                Just("."), Just("e"), Just("E"), Just("+"), Just("a"), Just("é"),
                Just("\u{1}"), Just("99999999999999999999"), Just("\"k\":"),
            ],
            0..24,
        )
    ) {
        agree(&parts.concat());
    }

    #[test]
    fn agrees_with_serde_json_on_numbers(
        sign in prop_oneof![Just(""), Just("-")],
        int in "[0-9]{1,25}",
        frac in proptest::option::of("[0-9]{0,25}"),
        exp in proptest::option::of(("[eE]", prop_oneof![Just(""), Just("+"), Just("-")], "[0-9]{0,4}")),
    ) {
        let mut text = format!("{sign}{int}");
        if let Some(frac) = frac {
            text.push('.');
            text.push_str(&frac);
        }
        if let Some((e, s, digits)) = exp {
            text.push_str(&format!("{e}{s}{digits}"));
        }
        agree(&text);
    }
}

#[test]
fn memory_matches_redisjson_own_example() {
    // RedisJSON's ivalue_manager test document and its answer.
    let text = r#"{"a": 100.12, "b": "foo", "c": true, "d": 126, "e": -112, "f": 7388608,
            "g": -6388608, "h": 9388608, "i": -9485608, "j": [], "k": {},
            "l": [1, "asas", {"a": 1}], "m": {"t": "f"}}"#;
    let v = parse(text, ParseLimits::command(usize::MAX)).unwrap();
    assert_eq!(v.memory(), 759);
}
