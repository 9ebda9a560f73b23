//! Runtime timestamps in the agent's terms. CRI times are nanoseconds since the Unix
//! epoch on the runtime's wall clock (0: not yet, or unknown); the status shows them in
//! RFC 3339, and back-offs and probe delays count on the monotonic clock (`Instant`),
//! which a wall-clock step (NTP on a board that booted in 1970) must not move.
//!
//! The clocks are arguments, never read here, so each conversion is pure and tested.

use crate::model::time::format_rfc3339;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A runtime timestamp as RFC 3339; `None` for 0 (not yet) or a time before 1970.
pub fn rfc3339_of(unix_nanos: i64) -> Option<String> {
    let nanos = u64::try_from(unix_nanos).ok().filter(|n| *n > 0)?;
    Some(format_rfc3339(UNIX_EPOCH + Duration::from_nanos(nanos)))
}

/// `t` in nanoseconds since the epoch, as the runtime counts (0 before 1970, the
/// largest `i64` past 2262).
pub fn unix_nanos(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The monotonic instant of a runtime timestamp, given the two clocks read at the same
/// moment (`now` monotonic, `wall` the wall clock); never later than `now`: `now` for 0
/// (unknown) or a time in the future.
pub fn instant_of(unix_nanos: i64, now: Instant, wall: SystemTime) -> Instant {
    let Ok(nanos) = u64::try_from(unix_nanos) else {
        return now;
    };
    if nanos == 0 {
        return now;
    }
    let wall = wall.duration_since(UNIX_EPOCH).unwrap_or_default();
    let ago = wall.saturating_sub(Duration::from_nanos(nanos));
    now.checked_sub(ago).unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: i64 = 1_000_000_000;

    /// A wall clock at 2026-11-29T22:40:28Z.
    fn wall() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_795_992_028)
    }

    #[test]
    fn instant_of_a_past_time_is_as_far_back() {
        let now = Instant::now();
        let t = 1_795_992_028 * SEC - 90 * SEC - 250_000_000;
        assert_eq!(
            now.duration_since(instant_of(t, now, wall())),
            Duration::from_millis(90_250)
        );
        assert_eq!(instant_of(1_795_992_028 * SEC, now, wall()), now);
    }

    #[test]
    fn instant_of_unknown_future_or_negative_is_now() {
        let now = Instant::now();
        for t in [0, -1, i64::MIN, 1_795_992_028 * SEC + 5 * SEC, i64::MAX] {
            assert_eq!(instant_of(t, now, wall()), now, "{t}");
        }
    }

    #[test]
    fn instant_of_survives_a_wall_clock_before_the_epoch() {
        // A board without a battery-backed clock; nothing panics or overflows.
        let now = Instant::now();
        let before = UNIX_EPOCH - Duration::from_secs(10);
        assert_eq!(instant_of(5 * SEC, now, before), now);
        assert_eq!(instant_of(1, now, UNIX_EPOCH), now);
    }

    #[test]
    fn rfc3339_of_runtime_times() {
        assert_eq!(rfc3339_of(0), None);
        assert_eq!(rfc3339_of(-5), None);
        assert_eq!(
            rfc3339_of(1_795_992_028 * SEC + 999_999_999).as_deref(),
            Some("2026-11-29T22:40:28Z")
        );
    }

    #[test]
    fn unix_nanos_round_trips_and_clamps() {
        assert_eq!(unix_nanos(wall()), 1_795_992_028 * SEC);
        assert_eq!(unix_nanos(UNIX_EPOCH - Duration::from_secs(1)), 0);
        assert_eq!(
            unix_nanos(UNIX_EPOCH + Duration::from_secs(10_000_000_000)),
            i64::MAX
        );
    }
}
