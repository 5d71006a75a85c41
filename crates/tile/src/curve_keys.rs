//! A member's curve from the file's keys: the envelope (the member's own,
//! else the tile's: the host's evening), its alignment, `[member.rounds]`
//! and `[member.churn]` with the defaults of `tickpack_curve` for what is
//! not set. Every refusal names its key.

use std::time::Duration;

use tickpack_curve::{Churn, Curve, Envelope, EnvelopeError, Point, Rounds};

use crate::file::{ChurnFile, CurveName, EnvelopeKeys, MemberFile, RoundsFile};
use crate::member::Refusal;

fn at(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| p.to_string()).collect()
}

/// The envelope the keys ask for (`None`: none given); a refusal names
/// the key (`curve`, `peak_to_mean` or `points`).
pub(crate) fn envelope(keys: &EnvelopeKeys) -> Result<Option<Envelope>, (&'static str, String)> {
    if keys.is_empty() {
        return Ok(None);
    }
    let name = keys
        .curve
        .unwrap_or(match (&keys.points, keys.peak_to_mean) {
            (Some(_), _) => CurveName::Points,
            (None, Some(_)) => CurveName::Evening,
            (None, None) => CurveName::Steady,
        });
    let for_curve = |key, wanted: &str| {
        Err((
            key,
            format!(
                "{key} is for curve = \"{wanted}\", and this curve is \"{}\"",
                name_str(name)
            ),
        ))
    };
    let e = match name {
        CurveName::Steady => {
            if keys.peak_to_mean.is_some() {
                return for_curve("peak_to_mean", "evening");
            }
            if keys.points.is_some() {
                return for_curve("points", "points");
            }
            Envelope::Steady
        }
        CurveName::Evening => {
            if keys.points.is_some() {
                return for_curve("points", "points");
            }
            Envelope::Evening {
                peak_to_mean: keys
                    .peak_to_mean
                    .unwrap_or(tickpack_curve::envelope::EVENING_PEAK_TO_MEAN),
            }
        }
        CurveName::Points => {
            if keys.peak_to_mean.is_some() {
                return for_curve("peak_to_mean", "evening");
            }
            let Some(points) = &keys.points else {
                return Err((
                    "curve",
                    "curve = \"points\" needs points = [[time, share], ...] (each 0..=1: a share of the step, a share of the players)".into(),
                ));
            };
            Envelope::Points(
                points
                    .iter()
                    .map(|&(at, share)| Point { at, share })
                    .collect(),
            )
        }
    };
    e.check().map_err(|err| {
        let key = match err {
            EnvelopeError::PeakToMean(_) => "peak_to_mean",
            _ => "points",
        };
        (key, err.to_string())
    })?;
    Ok(Some(e))
}

fn name_str(n: CurveName) -> &'static str {
    match n {
        CurveName::Steady => "steady",
        CurveName::Evening => "evening",
        CurveName::Points => "points",
    }
}

/// The member's curve: `seats` its emulated players (0: bots, a load
/// command or idle, which keep their load the whole step and follow no
/// envelope and no churn).
pub(crate) fn member_curve(
    m: &MemberFile,
    (tile_envelope, tile_aligned): (&EnvelopeKeys, bool),
    seats: u16,
    idle: bool,
) -> Result<Curve, Refusal> {
    let own = envelope(&m.envelope()).map_err(|(k, e)| (at(&[k]), e))?;
    let aligned = m.aligned.unwrap_or(tile_aligned);
    let rounds = m.rounds.as_ref().map(rounds).transpose()?;
    let churn = m.churn.as_ref().map(churn).transpose()?;
    if seats == 0 {
        let why = if idle {
            "an idle member has no players"
        } else {
            "bots and a load command stay the whole step; a curve needs emulated players (players = N)"
        };
        if own.as_ref().is_some_and(|e| *e != Envelope::Steady) {
            let key = if m.points.is_some() {
                "points"
            } else {
                "curve"
            };
            return Err((at(&[key]), format!("{key}: {why}")));
        }
        if churn.is_some() {
            return Err((at(&["churn"]), format!("churn: {why}")));
        }
        if idle && rounds.is_some() {
            return Err((
                at(&["rounds"]),
                "rounds: an idle member plays no rounds (it only answers queries)".into(),
            ));
        }
        return Ok(Curve {
            envelope: Envelope::Steady,
            rounds,
            churn: None,
            aligned,
        });
    }
    let envelope = match own {
        Some(e) => e,
        // The tile's was checked already.
        None => envelope(tile_envelope)
            .ok()
            .flatten()
            .unwrap_or(Envelope::Steady),
    };
    Ok(Curve {
        envelope,
        rounds,
        churn,
        aligned,
    })
}

/// Seconds of a key as a duration: finite, 0 or more (more than 0 when
/// `positive`).
fn secs(
    section: &str,
    key: &'static str,
    v: Option<f64>,
    default: Duration,
    positive: bool,
) -> Result<Duration, Refusal> {
    let Some(v) = v else {
        return Ok(default);
    };
    if !v.is_finite() || v < 0.0 || (positive && v == 0.0) || v > 7.0 * 24.0 * 3600.0 {
        return Err((
            at(&[section, key]),
            format!(
                "{key} {v}: expected {} s and at most a week",
                if positive { "more than 0" } else { "0" }
            ),
        ));
    }
    Ok(Duration::from_secs_f64(v))
}

fn rounds(f: &RoundsFile) -> Result<Rounds, Refusal> {
    let d = Rounds::default();
    let map_every = match f.map_every {
        Some(n) => u32::try_from(n).map_err(|_| {
            (
                at(&["rounds", "map_every"]),
                format!(
                    "map_every {n}: expected 1..={}",
                    tickpack_curve::rounds::MAX_MAP_EVERY
                ),
            )
        })?,
        None => d.map_every,
    };
    let r = Rounds {
        round: secs("rounds", "round_s", f.round_s, d.round, true)?,
        freeze: secs("rounds", "freeze_s", f.freeze_s, d.freeze, false)?,
        map_every,
        compress: f.compress.unwrap_or(d.compress),
    };
    r.check().map_err(|e| (at(&["rounds", e.key]), e.message))?;
    Ok(r)
}

fn churn(f: &ChurnFile) -> Result<Churn, Refusal> {
    let d = Churn::default();
    let c = Churn {
        shape: f.shape.unwrap_or(d.shape),
        scale: secs("churn", "scale_s", f.scale_s, d.scale, true)?,
        gap: secs("churn", "gap_s", f.gap_s, d.gap, false)?,
        compress: f.compress.unwrap_or(d.compress),
    };
    c.check().map_err(|e| (at(&["churn", e.key]), e.message))?;
    Ok(c)
}
