//! Weak argument decoding.
