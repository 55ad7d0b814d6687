//! Kanister's CRD types (`cr.kanister.io/v1alpha1`) with Kanister's exact JSON
//! names, and our own `ActionSchedule` (`blueprint-operator.io/v1alpha1`).
//!
//! Blueprints are normalized and validated as JSON values (see
//! `crate::blueprint`) so that unknown fields survive; these typed views are
//! for the executor and the scheduler, which read and write known fields.

pub mod child;
mod kanister;
pub mod labels;
mod resource;
mod watched;

pub use kanister::*;
pub use labels::*;
pub use watched::{WatchedActionSet, bad_states};

pub mod actionschedule;
pub use actionschedule::*;
