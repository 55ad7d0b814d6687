//! When a replica may take the Lease, renew it, or must count it as lost: pure functions of what
//! it saw of the Lease and for how long, on its own clock.
//!
//! As client-go's leader election does, expiry is judged by how long *this* replica has seen
//! the Lease unchanged, not by the `renewTime` written by another node: clocks of different
//! nodes may disagree, elapsed time on one node does not.

use std::time::Duration;

/// How long a Lease lasts, when its holder renews it, how often the others look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// Validity of the Lease without renewal (`leaseDurationSeconds`).
    pub lease: Duration,
    /// The holder renews this long before the Lease runs out.
    pub grace: Duration,
    /// How often a replica looks at the Lease (client-go's retry period).
    pub retry: Duration,
}

impl Timing {
    /// Why these durations cannot work together, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.retry.is_zero() {
            return Err("the retry period must be longer than 0 s".into());
        }
        if self.grace <= self.retry {
            return Err(format!(
                "the renewal grace ({} s) must be longer than the retry period ({} s), so that a failed renewal is retried before the Lease runs out",
                self.grace.as_secs_f64(),
                self.retry.as_secs_f64()
            ));
        }
        if self.lease <= self.grace {
            return Err(format!(
                "the Lease duration ({} s) must be longer than the renewal grace ({} s)",
                self.lease.as_secs_f64(),
                self.grace.as_secs_f64()
            ));
        }
        Ok(())
    }
}

/// The Lease as a replica saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen<'a> {
    /// `holderIdentity`; `None` or empty when released.
    pub holder: Option<&'a str>,
    /// `leaseDurationSeconds` as the holder wrote it.
    pub duration: Option<Duration>,
    /// How long this replica has seen the Lease unchanged (for the holder: since its own last
    /// write).
    pub unchanged_for: Duration,
}

/// What to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Write this replica as the holder (create the Lease when there is none).
    Take,
    /// This replica holds it: write a new `renewTime`.
    Renew,
    /// Look again after this long.
    Wait(Duration),
}

/// May `me` take the Lease now, must it renew it, or should it look again later?
///
/// `seen` is `None` when there is no Lease. A released Lease (no holder) is taken at once; one
/// held by another replica once it has been seen unchanged for its duration. Waits never
/// exceed the retry period, so a released Lease is taken within it. A Lease naming `me` while
/// `me` is not `leading` is taken again at once: a restarted container keeps its pod's name, and
/// a write that timed out may still have landed.
pub fn decide(me: &str, leading: bool, seen: Option<&Seen<'_>>, t: &Timing) -> Step {
    let Some(seen) = seen else {
        return Step::Take;
    };
    match seen.holder.filter(|h| !h.is_empty()) {
        None => Step::Take,
        Some(h) if h == me && !leading => Step::Take,
        Some(h) if h == me => {
            let due = t.lease.saturating_sub(t.grace);
            match due.checked_sub(seen.unchanged_for) {
                Some(left) if !left.is_zero() => Step::Wait(left.min(t.retry)),
                _ => Step::Renew,
            }
        }
        Some(_) => {
            let expires = seen.duration.filter(|d| !d.is_zero()).unwrap_or(t.lease);
            match expires.checked_sub(seen.unchanged_for) {
                Some(left) if !left.is_zero() => Step::Wait(left.min(t.retry)),
                _ => Step::Take,
            }
        }
    }
}

/// Whether the holder, not renewed for `since_renewed` (from the start of its last successful
/// write), must stop acting as the leader: one retry period before the Lease runs out, so that
/// it has stopped before any other replica may take it.
pub fn lost(since_renewed: Duration, t: &Timing) -> bool {
    since_renewed >= t.lease.saturating_sub(t.retry)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    fn shipped() -> Timing {
        Timing {
            lease: S(15),
            grace: S(5),
            retry: S(2),
        }
    }

    fn seen(holder: Option<&str>, duration: Option<u64>, unchanged_for: Duration) -> Seen<'_> {
        Seen {
            holder,
            duration: duration.map(S),
            unchanged_for,
        }
    }

    #[test]
    fn no_lease_or_released_lease_is_taken_at_once() {
        let t = shipped();
        assert_eq!(decide("a", false, None, &t), Step::Take);
        for holder in [None, Some("")] {
            let s = seen(holder, None, Duration::ZERO);
            assert_eq!(decide("a", false, Some(&s), &t), Step::Take, "{holder:?}");
        }
    }

    #[test]
    fn a_standby_looks_again_within_the_retry_period() {
        let t = shipped();
        for secs in [0, 1, 5, 12] {
            let s = seen(Some("b"), Some(15), S(secs));
            assert_eq!(
                decide("a", false, Some(&s), &t),
                Step::Wait(S(2)),
                "{secs} s"
            );
        }
        // Close to expiry it wakes at expiry, not a retry period later.
        let s = seen(Some("b"), Some(15), Duration::from_millis(14_500));
        assert_eq!(
            decide("a", false, Some(&s), &t),
            Step::Wait(Duration::from_millis(500))
        );
    }

    #[test]
    fn a_lease_unchanged_for_its_duration_is_taken() {
        let t = shipped();
        for secs in [15, 16, 600] {
            let s = seen(Some("b"), Some(15), S(secs));
            assert_eq!(decide("a", false, Some(&s), &t), Step::Take, "{secs} s");
        }
        // The holder's own duration counts, not this replica's.
        let s = seen(Some("b"), Some(30), S(20));
        assert_eq!(decide("a", false, Some(&s), &t), Step::Wait(S(2)));
        let s = seen(Some("b"), Some(5), S(5));
        assert_eq!(decide("a", false, Some(&s), &t), Step::Take);
        // Without one (or 0), this replica's.
        for d in [None, Some(0)] {
            let s = seen(Some("b"), d, S(14));
            assert_eq!(decide("a", false, Some(&s), &t), Step::Wait(S(1)), "{d:?}");
            let s = seen(Some("b"), d, S(15));
            assert_eq!(decide("a", false, Some(&s), &t), Step::Take, "{d:?}");
        }
    }

    #[test]
    fn the_holder_renews_grace_before_expiry() {
        let t = shipped();
        let s = seen(Some("a"), Some(15), S(0));
        assert_eq!(decide("a", true, Some(&s), &t), Step::Wait(S(2)));
        let s = seen(Some("a"), Some(15), S(9));
        assert_eq!(decide("a", true, Some(&s), &t), Step::Wait(S(1)));
        for secs in [10, 11, 14, 20] {
            let s = seen(Some("a"), Some(15), S(secs));
            assert_eq!(decide("a", true, Some(&s), &t), Step::Renew, "{secs} s");
        }
    }

    #[test]
    fn a_lease_naming_this_replica_while_it_does_not_lead_is_taken_again() {
        // A container restarted in the same pod, or a take whose answer was lost.
        let t = shipped();
        for secs in [0, 9, 12] {
            let s = seen(Some("a"), Some(15), S(secs));
            assert_eq!(decide("a", false, Some(&s), &t), Step::Take, "{secs} s");
        }
    }

    #[test]
    fn the_holder_stops_leading_before_anyone_may_take_over() {
        let t = shipped();
        assert!(!lost(S(10), &t));
        assert!(!lost(Duration::from_millis(12_999), &t));
        assert!(lost(S(13), &t));
        // Whenever it counts itself lost, a standby that saw the same write no earlier than it
        // was made still has to wait.
        for ms in (0..20_000).step_by(250) {
            let d = Duration::from_millis(ms);
            let s = seen(Some("b"), Some(15), d);
            if decide("a", false, Some(&s), &t) == Step::Take {
                assert!(lost(d, &t), "{ms} ms");
            }
        }
    }

    #[test]
    fn timings_that_cannot_work_are_refused() {
        assert_eq!(shipped().check(), Ok(()));
        let bad = [
            (15, 5, 0, "longer than 0 s"),
            (
                15,
                2,
                2,
                "renewal grace (2 s) must be longer than the retry period (2 s)",
            ),
            (
                5,
                5,
                2,
                "Lease duration (5 s) must be longer than the renewal grace (5 s)",
            ),
        ];
        for (lease, grace, retry, want) in bad {
            let t = Timing {
                lease: S(lease),
                grace: S(grace),
                retry: S(retry),
            };
            let err = t.check().unwrap_err();
            assert!(err.contains(want), "{err}");
        }
    }
}
