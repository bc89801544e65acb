//! The document value. Its shape follows what RedisJSON 2.8 keeps, because replies depend on it:
//! an object's members stay in insertion order, and removing one moves the last member into its
//! place (RedisJSON's `ijson` objects do, so key order after a deletion is theirs); integers
//! that fit an `i64` stay integers, larger positive ones are kept as `u64`, and every number
//! written with a fraction or an exponent is a float, printed back with its `.0`.
//!
//! Each array and object also carries the capacity `ijson` would have reserved for it, grown by
//! the same steps (at least 4, doubling), because `JSON.DEBUG MEMORY` and `MEMORY USAGE` answer
//! from that capacity; the real vectors are reserved to the same size.

use std::sync::OnceLock;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The deepest nesting of arrays and objects a document may reach. RedisJSON limits each
/// parsed text to 127 levels but lets `JSON.SET` at a path nest further; sieved stops at this
/// depth so that no recursion over a document can exhaust a thread's stack.
pub const MAX_NESTING: usize = 1024;

/// A JSON number as RedisJSON stores it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    Int(i64),
    /// A positive integer above `i64::MAX`.
    UInt(u64),
    /// A number written with a fraction or an exponent, or the result of float arithmetic.
    Float(f64),
}

impl Number {
    /// Whether JSONPath and the numeric commands see an integer (`ijson`'s "long"): `u64`
    /// values above `i64::MAX` count as doubles there.
    pub fn is_long(self) -> bool {
        matches!(self, Number::Int(_))
    }

    /// The value as a double, rounding large integers as a cast does.
    pub fn to_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::UInt(u) => u as f64,
            Number::Float(f) => f,
        }
    }

    /// Numeric equality across representations (`1 == 1.0`), as `ijson` compares numbers.
    pub fn same_value(self, other: Number) -> bool {
        match (self, other) {
            (Number::Int(a), Number::Int(b)) => a == b,
            (Number::UInt(a), Number::UInt(b)) => a == b,
            (Number::Int(_), Number::UInt(_)) | (Number::UInt(_), Number::Int(_)) => false,
            (Number::Float(a), Number::Float(b)) => a == b,
            (Number::Int(i), Number::Float(f)) | (Number::Float(f), Number::Int(i)) => {
                int_equals_float(i128::from(i), f)
            }
            (Number::UInt(u), Number::Float(f)) | (Number::Float(f), Number::UInt(u)) => {
                int_equals_float(i128::from(u), f)
            }
        }
    }
}

/// Exact comparison of an integer with a float, without the rounding a cast would add.
fn int_equals_float(i: i128, f: f64) -> bool {
    f.fract() == 0.0 && (-1.8e19..=1.9e19).contains(&f) && f as i128 == i
}

/// The kinds JSONPath filters and the typed commands tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    /// An integer that fits an `i64`.
    Long,
    /// A float, or an integer above `i64::MAX`.
    Double,
    String,
    Array,
    Object,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(Number),
    String(Box<str>),
    Array(Box<Array>),
    Object(Box<Object>),
}

impl Value {
    pub fn kind(&self) -> Kind {
        match self {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Bool,
            Value::Number(n) if n.is_long() => Kind::Long,
            Value::Number(_) => Kind::Double,
            Value::String(_) => Kind::String,
            Value::Array(_) => Kind::Array,
            Value::Object(_) => Kind::Object,
        }
    }

    /// The name `JSON.TYPE` answers: integers above `i64::MAX` are still "integer".
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(Number::Float(_)) => "number",
            Value::Number(_) => "integer",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    pub fn new_array() -> Value {
        Value::Array(Box::default())
    }

    pub fn new_object() -> Value {
        Value::Object(Box::default())
    }

    pub fn as_array(&self) -> Option<&Array> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_array_mut(&mut self) -> Option<&mut Array> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_object_mut(&mut self) -> Option<&mut Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// Members of an array or values of an object, in order; nothing for a scalar.
    pub fn children(&self) -> Children<'_> {
        match self {
            Value::Array(a) => Children::Array(a.items.iter()),
            Value::Object(o) => Children::Object(o.members.iter()),
            _ => Children::None,
        }
    }

    /// How many levels of arrays and objects nest here (0 for a scalar, 1 for `[]`).
    pub fn nesting(&self) -> usize {
        match self {
            Value::Array(_) | Value::Object(_) => {
                1 + self.children().map(Value::nesting).max().unwrap_or(0)
            }
            _ => 0,
        }
    }

    /// A copy that keeps every container's reserved capacity, as the document itself would
    /// be after a change in place (`clone` shrinks them, as a copied key's do).
    pub fn copy_as_is(&self) -> Value {
        match self {
            Value::Array(array) => Value::Array(Box::new(Array {
                items: array.items.iter().map(Value::copy_as_is).collect(),
                capacity: array.capacity,
            })),
            Value::Object(object) => Value::Object(Box::new(Object {
                members: object
                    .members
                    .iter()
                    .map(|member| Member {
                        key: member.key.clone(),
                        value: member.value.copy_as_is(),
                    })
                    .collect(),
                index: object.index.clone(),
                capacity: object.capacity,
            })),
            other => other.clone(),
        }
    }

    /// `JSON.DEBUG MEMORY`'s answer for this value: RedisJSON's estimate of `ijson`'s memory,
    /// the value's own 8-byte slot included.
    pub fn memory(&self) -> usize {
        8 + self.memory_below()
    }

    /// RedisJSON's estimate without the value's slot: nothing for small integers, booleans
    /// and null, 4 bytes for 24-bit integers, 16 for other numbers, a string's bytes, and for
    /// containers their contents plus a header and slots for their reserved capacity.
    fn memory_below(&self) -> usize {
        const WORD: usize = 8;
        match self {
            Value::Null | Value::Bool(_) => 0,
            Value::Number(Number::Int(i)) if (-128..384).contains(i) => 0,
            Value::Number(Number::Int(i)) if (-(1 << 23)..1 << 23).contains(i) => 4,
            Value::Number(_) => 16,
            Value::String(s) => s.len(),
            Value::Array(a) if a.capacity == 0 => 0,
            Value::Array(a) => {
                a.items.iter().map(Value::memory_below).sum::<usize>() + (a.capacity + 2) * WORD
            }
            Value::Object(o) if o.capacity == 0 => 0,
            Value::Object(o) => {
                o.members
                    .iter()
                    .map(|m| m.key.len() + m.value.memory_below())
                    .sum::<usize>()
                    + (o.capacity * 3 + 2) * WORD
            }
        }
    }

    /// Structural equality as `ijson` decides it (JSONPath `==` between two document values):
    /// numbers compare by value across representations, objects regardless of member order.
    pub fn loosely_equals(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Number(a), Value::Number(b)) => a.same_value(*b),
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.loosely_equals(y))
            }
            (Value::Object(a), Value::Object(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, v)| b.get(k).is_some_and(|w| v.loosely_equals(w)))
            }
            _ => false,
        }
    }

    /// Equality as `JSON.ARRINDEX` decides it: the kinds must match (1 is not 1.0), doubles
    /// compare as doubles, objects regardless of member order.
    pub fn strictly_equals(&self, other: &Value) -> bool {
        if self.kind() != other.kind() {
            return false;
        }
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Number(Number::Int(a)), Value::Number(Number::Int(b))) => a == b,
            (Value::Number(a), Value::Number(b)) => a.to_f64() == b.to_f64(),
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.strictly_equals(y))
            }
            (Value::Object(a), Value::Object(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, v)| b.get(k).is_some_and(|w| v.strictly_equals(w)))
            }
            _ => false,
        }
    }
}

impl From<Number> for Value {
    fn from(n: Number) -> Value {
        Value::Number(n)
    }
}

/// The children of a value, in document order.
pub enum Children<'a> {
    None,
    Array(std::slice::Iter<'a, Value>),
    Object(std::slice::Iter<'a, Member>),
}

impl<'a> Iterator for Children<'a> {
    type Item = &'a Value;

    fn next(&mut self) -> Option<&'a Value> {
        match self {
            Children::None => None,
            Children::Array(items) => items.next(),
            Children::Object(members) => members.next().map(|m| &m.value),
        }
    }
}

/// The capacity `ijson` grows a container to when it needs room for `needed` entries.
fn grown_capacity(capacity: usize, needed: usize) -> usize {
    if capacity >= needed {
        capacity
    } else {
        (capacity * 2).max(needed.max(4))
    }
}

#[derive(Debug, Default)]
pub struct Array {
    items: Vec<Value>,
    /// What `ijson` would have reserved (see the module's comment).
    capacity: usize,
}

impl PartialEq for Array {
    /// The same items (the reserved capacity is bookkeeping, not content).
    fn eq(&self, other: &Array) -> bool {
        self.items == other.items
    }
}

impl Clone for Array {
    /// A copy is exactly as large as its contents, as `ijson` clones.
    fn clone(&self) -> Array {
        Array {
            items: self.items.clone(),
            capacity: self.items.len(),
        }
    }
}

impl Array {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn get(&self, index: usize) -> Option<&Value> {
        self.items.get(index)
    }

    pub fn get_mut(&mut self, index: usize) -> Option<&mut Value> {
        self.items.get_mut(index)
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Value> {
        self.items.iter()
    }

    pub fn as_slice(&self) -> &[Value] {
        &self.items
    }

    /// Makes room for `additional` more items, growing as `ijson` does.
    pub fn reserve(&mut self, additional: usize) {
        let needed = self.items.len() + additional;
        let capacity = grown_capacity(self.capacity, needed);
        if capacity != self.capacity {
            self.capacity = capacity;
            self.items
                .reserve_exact(capacity.saturating_sub(self.items.len()));
        }
    }

    pub fn push(&mut self, value: Value) {
        self.reserve(1);
        self.items.push(value);
    }

    /// Inserts at `index` (at most the length).
    pub fn insert(&mut self, index: usize, value: Value) {
        self.reserve(1);
        self.items.insert(index, value);
    }

    /// Removes the item at `index`, if there is one; the capacity stays.
    pub fn remove(&mut self, index: usize) -> Option<Value> {
        (index < self.items.len()).then(|| self.items.remove(index))
    }

    /// Keeps the items in `range`; the capacity stays.
    pub fn keep_range(&mut self, range: std::ops::Range<usize>) {
        self.items.truncate(range.end);
        self.items.drain(..range.start);
    }

    /// Removes every item; the capacity stays.
    pub fn clear(&mut self) {
        self.items.clear();
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }
}

impl FromIterator<Value> for Array {
    fn from_iter<I: IntoIterator<Item = Value>>(iter: I) -> Array {
        let mut array = Array::default();
        for value in iter {
            array.push(value);
        }
        array
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub key: Box<str>,
    pub value: Value,
}

/// Objects up to this many members are searched in order (a typical record's fields fit, and
/// need no index); larger ones keep an index.
const SCAN_MEMBERS: usize = 16;

/// Member names are chosen by clients, so their hash is seeded per process.
fn hash(key: &str) -> usize {
    static SEED: OnceLock<u64> = OnceLock::new();
    let seed = *SEED.get_or_init(|| {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(0x4a53_4f4eu64)
    });
    xxh3_64_with_seed(key.as_bytes(), seed) as usize
}

#[derive(Debug, Default)]
pub struct Object {
    members: Vec<Member>,
    /// Empty up to `SCAN_MEMBERS` members; then each bucket holds a member's position plus
    /// one, or 0, in a power-of-two table at most half full (linear probing).
    index: Box<[u32]>,
    /// What `ijson` would have reserved (see the module's comment).
    capacity: usize,
}

impl PartialEq for Object {
    /// Same members in the same order.
    fn eq(&self, other: &Object) -> bool {
        self.members == other.members
    }
}

impl Clone for Object {
    /// A copy is exactly as large as its contents, as `ijson` clones.
    fn clone(&self) -> Object {
        Object {
            members: self.members.clone(),
            index: self.index.clone(),
            capacity: self.members.len(),
        }
    }
}

impl Object {
    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> + '_ {
        self.members.iter().map(|m| (&*m.key, &m.value))
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.members.iter().map(|m| &*m.key)
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    fn mask(&self) -> usize {
        self.index.len() - 1
    }

    /// Where `key`'s member sits in `members`.
    fn position(&self, key: &str) -> Option<usize> {
        if self.index.is_empty() {
            return self.members.iter().position(|m| &*m.key == key);
        }
        let mask = self.mask();
        let mut bucket = hash(key) & mask;
        loop {
            match self.index[bucket] {
                0 => return None,
                held if &*self.members[held as usize - 1].key == key => {
                    return Some(held as usize - 1)
                }
                _ => bucket = (bucket + 1) & mask,
            }
        }
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.position(key).map(|at| &self.members[at].value)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// A member's value for changing it in place. RedisJSON reaches the last step of a path
    /// through `ijson`'s entry API, which reserves room for one more member first, so this
    /// does too (the capacity may grow although nothing is added).
    pub fn entry_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.reserve(1);
        let at = self.position(key)?;
        Some(&mut self.members[at].value)
    }

    /// A member's value on the way down a path (no reservation).
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        let at = self.position(key)?;
        Some(&mut self.members[at].value)
    }

    fn reserve(&mut self, additional: usize) {
        let needed = self.members.len() + additional;
        let capacity = grown_capacity(self.capacity, needed);
        if capacity != self.capacity {
            self.capacity = capacity;
            self.members
                .reserve_exact(capacity.saturating_sub(self.members.len()));
        }
    }

    /// Sets `key` to `value`: a new member goes last, an existing one keeps its place.
    pub fn insert(&mut self, key: &str, value: Value) {
        self.reserve(1);
        if let Some(at) = self.position(key) {
            self.members[at].value = value;
            return;
        }
        self.members.push(Member {
            key: key.into(),
            value,
        });
        if self.members.len() > SCAN_MEMBERS {
            if self.members.len() * 2 > self.index.len() {
                self.rebuild_index();
            } else {
                self.place(self.members.len() - 1);
            }
        }
    }

    /// The value for `key`, inserting null first when it is missing (RedisJSON's merge).
    pub fn entry_or_null(&mut self, key: &str) -> &mut Value {
        if self.position(key).is_none() {
            self.insert(key, Value::Null);
        } else {
            self.reserve(1);
        }
        let at = self.position(key).expect("just inserted");
        &mut self.members[at].value
    }

    /// Removes `key`'s member; the last member moves into its place.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self.position(key)?;
        if !self.index.is_empty() {
            let last = self.members.len() - 1;
            self.clear_bucket(self.bucket_holding(at));
            if at != last {
                let bucket = self.bucket_holding(last);
                self.index[bucket] = at as u32 + 1;
            }
        }
        let removed = self.members.swap_remove(at).value;
        if self.members.len() <= SCAN_MEMBERS {
            self.index = Box::default();
        }
        Some(removed)
    }

    /// Removes every member; the capacity stays.
    pub fn clear(&mut self) {
        self.members.clear();
        self.index = Box::default();
    }

    fn bucket_holding(&self, at: usize) -> usize {
        let mask = self.mask();
        let mut bucket = hash(&self.members[at].key) & mask;
        while self.index[bucket] as usize != at + 1 {
            bucket = (bucket + 1) & mask;
        }
        bucket
    }

    /// Empties a bucket, shifting later entries of its probe run back (no tombstones).
    fn clear_bucket(&mut self, bucket: usize) {
        let mask = self.mask();
        let mut hole = bucket;
        let mut next = (bucket + 1) & mask;
        loop {
            let held = self.index[next];
            if held == 0 {
                break;
            }
            let home = hash(&self.members[held as usize - 1].key) & mask;
            if next.wrapping_sub(home) & mask >= next.wrapping_sub(hole) & mask {
                self.index[hole] = held;
                hole = next;
            }
            next = (next + 1) & mask;
        }
        self.index[hole] = 0;
    }

    fn place(&mut self, at: usize) {
        let mask = self.mask();
        let mut bucket = hash(&self.members[at].key) & mask;
        while self.index[bucket] != 0 {
            bucket = (bucket + 1) & mask;
        }
        self.index[bucket] = at as u32 + 1;
    }

    fn rebuild_index(&mut self) {
        let buckets = (self.members.len() * 2).next_power_of_two();
        self.index = vec![0; buckets].into_boxed_slice();
        for at in 0..self.members.len() {
            self.place(at);
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(i: i64) -> Value {
        Value::Number(Number::Int(i))
    }

    #[test]
    fn removal_moves_the_last_member_into_the_hole() {
        let mut o = Object::default();
        for (i, k) in ["a", "b", "c", "d"].iter().enumerate() {
            o.insert(k, int(i as i64));
        }
        o.remove("a");
        assert_eq!(o.keys().collect::<Vec<_>>(), ["d", "b", "c"]);
        o.insert("b", int(9));
        assert_eq!(o.keys().collect::<Vec<_>>(), ["d", "b", "c"]);
    }

    #[test]
    fn large_objects_find_members_through_their_index() {
        let mut o = Object::default();
        for i in 0..1000 {
            o.insert(&format!("k{i}"), int(i));
        }
        for i in (0..1000).step_by(3) {
            assert_eq!(o.remove(&format!("k{i}")), Some(int(i)));
        }
        for i in 0..1000 {
            assert_eq!(o.get(&format!("k{i}")).is_some(), i % 3 != 0, "k{i}");
        }
        assert_eq!(o.len(), 666);
        for i in 0..1000 {
            o.remove(&format!("k{i}"));
        }
        assert!(o.is_empty());
    }

    #[test]
    fn capacities_grow_as_ijson_grows_them() {
        let mut a = Array::default();
        let caps: Vec<usize> = (0..9)
            .map(|i| {
                a.push(int(i));
                a.capacity()
            })
            .collect();
        assert_eq!(caps, [4, 4, 4, 4, 8, 8, 8, 8, 16]);
        assert_eq!(Value::Array(Box::new(a.clone())).memory(), 8 + (9 + 2) * 8);
        let mut o = Object::default();
        for k in ["a", "b", "c", "d"] {
            o.insert(k, Value::Null);
        }
        assert_eq!(o.capacity(), 4);
        // Reaching a member through the entry API reserves room for one more.
        o.entry_mut("a");
        assert_eq!(o.capacity(), 8);
    }

    #[test]
    fn numbers_compare_across_representations() {
        assert!(Number::Int(2).same_value(Number::Float(2.0)));
        assert!(!Number::Int(2).same_value(Number::Float(2.5)));
        assert!(Number::UInt(u64::MAX).same_value(Number::UInt(u64::MAX)));
        assert!(!Number::Int(i64::MAX).same_value(Number::Float(i64::MAX as f64)));
    }
}
