//! functions
