//! A bounded memo: what a pure function answered, looked up by the bytes it was given.
//!
//! Used where the same input comes back often and the answer costs much more than a lookup:
//! the webhook's answers to objects it has judged (`webhook::answers`) and the checks of
//! Blueprint template texts (`template::check_fields_memo`). Bounded, so memory stays flat:
//! at most `max_entries` answers holding at most `max_bytes` of input; when full, the CLOCK
//! policy (a second chance for every answer used since the hand last passed) picks what to
//! forget.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher as _, Hash};
use std::sync::{Arc, Mutex};

/// Answers of type `V` by a tag (e.g. which route asked) and the input's bytes.
#[derive(Debug)]
pub struct Memo<T, V> {
    clock: Mutex<Clock<T, V>>,
    /// Fixed-seed, fast hashing: a collision only costs a miss (lookups compare the bytes).
    hasher: foldhash::fast::FixedState,
    max_entries: usize,
    max_bytes: usize,
}

#[derive(Debug)]
struct Entry<T, V> {
    tag: T,
    input: Box<[u8]>,
    answer: Arc<V>,
    /// Used since the clock hand last passed.
    used: bool,
}

#[derive(Debug)]
struct Clock<T, V> {
    /// By the hash of tag and input; another input with the same hash replaces the entry.
    entries: HashMap<u64, Entry<T, V>>,
    /// The clock's order of the keys of `entries`.
    hand: VecDeque<u64>,
    bytes: usize,
}

impl<T: Copy + Eq + Hash, V> Memo<T, V> {
    /// A memo of at most `max_entries` answers and `max_bytes` of input; an input over an
    /// eighth of `max_bytes` is never kept.
    pub fn new(max_entries: usize, max_bytes: usize) -> Memo<T, V> {
        Memo {
            clock: Mutex::new(Clock {
                entries: HashMap::new(),
                hand: VecDeque::new(),
                bytes: 0,
            }),
            hasher: foldhash::fast::FixedState::default(),
            max_entries,
            max_bytes,
        }
    }

    fn key(&self, tag: T, input: &[u8]) -> u64 {
        self.hasher.hash_one((tag, input))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Clock<T, V>> {
        // An answer is inserted whole or not at all: a panic elsewhere leaves the map usable.
        self.clock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The answer given before for `tag` and exactly these bytes.
    pub fn get(&self, tag: T, input: &[u8]) -> Option<Arc<V>> {
        let key = self.key(tag, input);
        let mut clock = self.lock();
        let entry = clock.entries.get_mut(&key)?;
        if entry.tag != tag || *entry.input != *input {
            return None;
        }
        entry.used = true;
        Some(entry.answer.clone())
    }

    /// Remembers `answer` for `tag` and these bytes (unless the input alone is over an eighth
    /// of the budget).
    pub fn put(&self, tag: T, input: &[u8], answer: Arc<V>) {
        if input.len() > self.max_bytes / 8 {
            return;
        }
        let key = self.key(tag, input);
        let mut clock = self.lock();
        let entry = Entry {
            tag,
            input: input.into(),
            answer,
            used: false,
        };
        clock.bytes += input.len();
        match clock.entries.insert(key, entry) {
            Some(old) => clock.bytes -= old.input.len(),
            None => clock.hand.push_back(key),
        }
        while clock.entries.len() > self.max_entries || clock.bytes > self.max_bytes {
            clock.evict_one();
        }
    }

    /// Answers held now.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every answer (benchmarks measure the work the memo saves this way).
    pub fn clear(&self) {
        let mut clock = self.lock();
        clock.entries.clear();
        clock.hand.clear();
        clock.bytes = 0;
    }
}

impl<T, V> Clock<T, V> {
    /// Forgets the first answer the hand finds unused since its last pass.
    fn evict_one(&mut self) {
        while let Some(key) = self.hand.pop_front() {
            let Some(entry) = self.entries.get_mut(&key) else {
                continue;
            };
            if entry.used {
                entry.used = false;
                self.hand.push_back(key);
                continue;
            }
            if let Some(old) = self.entries.remove(&key) {
                self.bytes -= old.input.len();
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENTRIES: usize = 16;
    const BYTES: usize = 1024;

    fn memo() -> Memo<u8, String> {
        Memo::new(ENTRIES, BYTES)
    }

    #[test]
    fn the_same_tag_and_bytes_get_the_answer_back() {
        let memo = memo();
        memo.put(1, b"{\"a\":1}", Arc::new("one".into()));
        assert_eq!(
            memo.get(1, b"{\"a\":1}").as_deref().map(String::as_str),
            Some("one")
        );
        assert!(memo.get(1, b"{\"a\":2}").is_none());
        assert!(memo.get(2, b"{\"a\":1}").is_none());
    }

    #[test]
    fn entries_and_bytes_stay_within_the_bounds() {
        let memo = memo();
        for i in 0..ENTRIES * 3 {
            memo.put(0, format!("{{\"n\":{i}}}").as_bytes(), Arc::new("x".into()));
        }
        assert_eq!(memo.len(), ENTRIES);
        let big = vec![b' '; BYTES / 8];
        for i in 0..20u8 {
            let mut input = big.clone();
            input[0] = i;
            memo.put(0, &input, Arc::new("big".into()));
        }
        let clock = memo.lock();
        assert!(clock.bytes <= BYTES, "{} bytes kept", clock.bytes);
        assert_eq!(clock.hand.len(), clock.entries.len());
        let counted: usize = clock.entries.values().map(|e| e.input.len()).sum();
        assert_eq!(counted, clock.bytes);
    }

    #[test]
    fn an_answer_used_since_the_last_pass_outlives_an_unused_one() {
        let memo = memo();
        for i in 0..ENTRIES {
            memo.put(0, format!("{i}").as_bytes(), Arc::new("x".into()));
        }
        // The oldest is used again: the next insertion forgets the second oldest instead.
        assert!(memo.get(0, b"0").is_some());
        memo.put(0, b"new", Arc::new("x".into()));
        assert!(memo.get(0, b"0").is_some());
        assert!(memo.get(0, b"1").is_none());
        assert!(memo.get(0, b"new").is_some());
    }

    #[test]
    fn an_input_over_an_eighth_of_the_budget_is_not_kept_and_clear_forgets_all() {
        let memo = memo();
        memo.put(0, &[b'x'; BYTES / 8 + 1], Arc::new("x".into()));
        assert!(memo.is_empty());
        memo.put(0, b"a", Arc::new("x".into()));
        assert_eq!(memo.len(), 1);
        memo.clear();
        assert!(memo.is_empty());
        assert!(memo.get(0, b"a").is_none());
    }
}
