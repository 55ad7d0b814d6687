//! The RDS client ([`client`]), its errors ([`error`]) and waiters ([`wait`]), as Kanister's
//! `pkg/aws/rds`.

pub mod client;
pub mod error;
pub mod wait;

pub use client::RdsClient;
pub use error::RdsError;
pub use wait::Waits;
