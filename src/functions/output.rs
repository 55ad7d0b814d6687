//! Phase-output protocol.
