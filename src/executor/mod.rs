//! executor
