//! Feeds arbitrary bytes to every admission route. The first byte picks the route; the rest is
//! the request body. Any panic is a bug; every answer must be 200, 400 or 413.
#![no_main]

use blueprint_operator::webhook::{Route, handle_review};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else {
        return;
    };
    let route = Route::ALL[usize::from(first) % Route::ALL.len()];
    let (status, _) = handle_review(route, body);
    assert!(matches!(status, 200 | 400 | 413), "status {status}");
});
