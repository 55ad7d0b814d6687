//! Scheduler: ActionSchedule creates Kanister ActionSets on a cron schedule,
//! rotates finished ones and reports what it did.
//!
//! - [`cron`]: CronJob-compatible schedule parser and `next` (robfig/cron v3 port).
//! - [`plan`]: pure planning: given spec, status, now and existing runs, decide.
//! - [`retention`]: pure selection of the ActionSets to rotate, with reasons.

pub mod cron;
pub mod plan;
pub mod retention;
