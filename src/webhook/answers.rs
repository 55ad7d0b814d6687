//! Answers already given to Blueprint reviews, looked up by the object's bytes.
//!
//! GitOps tools send the same objects again and again: Flux's and Argo CD's server-side
//! dry-runs and diffs, no-op re-applies, `kubectl diff`. Each reaches the webhook as a review of
//! an object it has already judged. The Blueprint handlers are pure (see [`super::admission`]):
//! the same route and object always get the same answer, whatever else the request says, so
//! the answer is kept and only the request's uid changes. A remembered review skips decoding
//! the object and every check.
//!
//! Bounded, so memory stays flat: at most [`MAX_ENTRIES`] answers holding at most
//! [`MAX_BYTES`] of object text; when full, the CLOCK policy (a second chance for every answer
//! used since the hand last passed) picks what to forget.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher as _;
use std::sync::{Arc, Mutex};

use kube::core::admission::AdmissionResponse;

use super::admission::Route;
use super::metrics::Verdict;

/// Most answers kept.
pub const MAX_ENTRIES: usize = 256;
/// Most object text kept, in bytes (the answers themselves are small).
pub const MAX_BYTES: usize = 2 * 1024 * 1024;

/// What was answered: the response (its uid is replaced per request), the verdict and the log
/// summary.
#[derive(Debug, Clone)]
pub struct Answer {
    pub response: AdmissionResponse,
    pub verdict: Verdict,
    pub summary: String,
}

#[derive(Debug)]
struct Entry {
    route: Route,
    object: Box<[u8]>,
    answer: Arc<Answer>,
    /// Used since the clock hand last passed.
    used: bool,
}

#[derive(Debug, Default)]
struct Clock {
    /// By the hash of route and object; another object with the same hash replaces the entry.
    entries: HashMap<u64, Entry>,
    /// The clock's order of the keys of `entries`.
    hand: VecDeque<u64>,
    bytes: usize,
}

/// The answers, shared by all connections.
#[derive(Debug, Default)]
pub struct Answers {
    clock: Mutex<Clock>,
    /// Fixed-seed, fast hashing: a collision only costs a miss (lookups compare the bytes).
    hasher: foldhash::fast::FixedState,
}

impl Answers {
    fn key(&self, route: Route, object: &[u8]) -> u64 {
        self.hasher.hash_one((route, object))
    }

    /// The answer given before to `route` for exactly these object bytes.
    pub fn get(&self, route: Route, object: &[u8]) -> Option<Arc<Answer>> {
        let key = self.key(route, object);
        let mut clock = self.clock.lock().unwrap_or_else(|e| e.into_inner());
        let entry = clock.entries.get_mut(&key)?;
        if entry.route != route || *entry.object != *object {
            return None;
        }
        entry.used = true;
        Some(entry.answer.clone())
    }

    /// Remembers the answer to `route` for these object bytes (unless the object alone is
    /// over the budget).
    pub fn put(&self, route: Route, object: &[u8], answer: Answer) {
        if object.len() > MAX_BYTES / 8 {
            return;
        }
        let key = self.key(route, object);
        let mut clock = self.clock.lock().unwrap_or_else(|e| e.into_inner());
        let entry = Entry {
            route,
            object: object.into(),
            answer: Arc::new(answer),
            used: false,
        };
        clock.bytes += object.len();
        match clock.entries.insert(key, entry) {
            Some(old) => clock.bytes -= old.object.len(),
            None => clock.hand.push_back(key),
        }
        while clock.entries.len() > MAX_ENTRIES || clock.bytes > MAX_BYTES {
            clock.evict_one();
        }
    }

    /// Answers held now (tests read it).
    pub fn len(&self) -> usize {
        self.clock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entries
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Clock {
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
                self.bytes -= old.object.len();
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(summary: &str) -> Answer {
        Answer {
            response: AdmissionResponse::invalid("test"),
            verdict: Verdict::Allowed,
            summary: summary.into(),
        }
    }

    #[test]
    fn the_same_route_and_bytes_get_the_answer_back() {
        let answers = Answers::default();
        answers.put(Route::ValidateBlueprint, b"{\"a\":1}", answer("one"));
        let got = answers.get(Route::ValidateBlueprint, b"{\"a\":1}");
        assert_eq!(got.map(|a| a.summary.clone()).as_deref(), Some("one"));
        assert!(
            answers
                .get(Route::ValidateBlueprint, b"{\"a\":2}")
                .is_none()
        );
        assert!(answers.get(Route::MutateBlueprint, b"{\"a\":1}").is_none());
    }

    #[test]
    fn entries_and_bytes_stay_within_the_bounds() {
        let answers = Answers::default();
        for i in 0..MAX_ENTRIES * 3 {
            answers.put(
                Route::MutateBlueprint,
                format!("{{\"n\":{i}}}").as_bytes(),
                answer("x"),
            );
        }
        assert_eq!(answers.len(), MAX_ENTRIES);
        let big = vec![b' '; MAX_BYTES / 8];
        for i in 0..20u8 {
            let mut object = big.clone();
            object[0] = i;
            answers.put(Route::MutateBlueprint, &object, answer("big"));
        }
        let clock = answers.clock.lock().unwrap();
        assert!(clock.bytes <= MAX_BYTES, "{} bytes kept", clock.bytes);
        assert_eq!(clock.hand.len(), clock.entries.len());
        let counted: usize = clock.entries.values().map(|e| e.object.len()).sum();
        assert_eq!(counted, clock.bytes);
    }

    #[test]
    fn an_answer_used_since_the_last_pass_outlives_an_unused_one() {
        let answers = Answers::default();
        for i in 0..MAX_ENTRIES {
            answers.put(
                Route::ValidateBlueprint,
                format!("{i}").as_bytes(),
                answer("x"),
            );
        }
        // The oldest is used again: the next insertion forgets the second oldest instead.
        assert!(answers.get(Route::ValidateBlueprint, b"0").is_some());
        answers.put(Route::ValidateBlueprint, b"new", answer("x"));
        assert!(answers.get(Route::ValidateBlueprint, b"0").is_some());
        assert!(answers.get(Route::ValidateBlueprint, b"1").is_none());
        assert!(answers.get(Route::ValidateBlueprint, b"new").is_some());
    }

    #[test]
    fn an_object_over_an_eighth_of_the_budget_is_not_kept() {
        let answers = Answers::default();
        answers.put(
            Route::ValidateBlueprint,
            &vec![b'x'; MAX_BYTES / 8 + 1],
            answer("x"),
        );
        assert!(answers.is_empty());
    }
}
