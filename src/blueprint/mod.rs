//! blueprint
