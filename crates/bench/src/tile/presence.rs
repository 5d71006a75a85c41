//! From each server's timeline (the curve crate's seats) to what the
//! players and the windows need: each emulated player's presence spans in
//! the order the players are spread over servers, the time-weighted
//! players present in a window, and the map changes due. Pure.

use std::time::Duration;

use tickpack_curve::{Span, Timeline};

/// Each player's spans, indexed as the players run assigns them: player
/// `p` plays on server `p % servers` in its seat `p / servers` (round
/// robin over the targets). Every timeline has the same seats.
pub fn player_spans(timelines: &[Timeline]) -> Vec<Vec<Span>> {
    let servers = timelines.len();
    let seats = timelines.first().map_or(0, |t| t.seats.len());
    (0..servers * seats)
        .map(|p| timelines[p % servers].seats[p / servers].clone())
        .collect()
}

/// Players present in `[from, until)`, time-weighted, over `timelines`.
pub fn present_in(timelines: &[Timeline], from: Duration, until: Duration) -> f64 {
    let len = until.saturating_sub(from).as_secs_f64();
    if len <= 0.0 {
        return 0.0;
    }
    let inside: f64 = timelines
        .iter()
        .flat_map(|t| t.seats.iter().flatten())
        .map(|s| {
            let a = s.from.max(from);
            let b = s.until.min(until);
            b.saturating_sub(a).as_secs_f64()
        })
        .sum();
    inside / len
}

/// Every map change due, `(at, server index)`, in time order.
pub fn map_changes(timelines: &[Timeline]) -> Vec<(Duration, usize)> {
    let mut v: Vec<(Duration, usize)> = timelines
        .iter()
        .enumerate()
        .flat_map(|(i, t)| t.map_changes().into_iter().map(move |at| (at, i)))
        .collect();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack_curve::Curve;

    #[test]
    fn players_are_laid_over_servers_round_robin() {
        let steady = Curve::steady();
        let len = Duration::from_secs(10);
        let t: Vec<Timeline> = (0..3).map(|s| steady.timeline(1, s, 2, len)).collect();
        let spans = player_spans(&t);
        assert_eq!(spans.len(), 6);
        assert!(spans.iter().all(|s| s.len() == 1 && s[0].until == len));
        assert!((present_in(&t, Duration::ZERO, len) - 6.0).abs() < 1e-9);
        assert!(
            (present_in(&t, Duration::from_secs(5), Duration::from_secs(7)) - 6.0).abs() < 1e-9
        );
        assert!(map_changes(&t).is_empty());
    }
}
