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

use std::sync::Arc;

use kube::core::admission::AdmissionResponse;

use super::admission::Route;
use super::metrics::Verdict;
use crate::memo::Memo;

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

/// The answers, shared by all connections.
#[derive(Debug)]
pub struct Answers {
    memo: Memo<Route, Answer>,
}

impl Default for Answers {
    fn default() -> Answers {
        Answers {
            memo: Memo::new(MAX_ENTRIES, MAX_BYTES),
        }
    }
}

impl Answers {
    /// The answer given before to `route` for exactly these object bytes.
    pub fn get(&self, route: Route, object: &[u8]) -> Option<Arc<Answer>> {
        self.memo.get(route, object)
    }

    /// Remembers the answer to `route` for these object bytes (unless the object alone is
    /// over an eighth of the budget).
    pub fn put(&self, route: Route, object: &[u8], answer: Answer) {
        self.memo.put(route, object, Arc::new(answer));
    }

    /// Answers held now (tests read it).
    pub fn len(&self) -> usize {
        self.memo.len()
    }

    pub fn is_empty(&self) -> bool {
        self.memo.is_empty()
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
    fn entries_stay_within_the_bound() {
        let answers = Answers::default();
        for i in 0..MAX_ENTRIES * 3 {
            answers.put(
                Route::MutateBlueprint,
                format!("{{\"n\":{i}}}").as_bytes(),
                answer("x"),
            );
        }
        assert_eq!(answers.len(), MAX_ENTRIES);
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
