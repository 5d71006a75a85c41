//! How values read on the page: escaping, numbers, durations, dates, CPU
//! lists, densities, and the "n/a" / "not reached" placeholders.

use crate::bench::{BenchResult, Ladder, Step};

/// HTML-escapes text for element content and quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

pub(crate) use crate::numbers::{fmt_int, fmt_ms, fmt_num, fmt_quantile};

pub(super) fn fmt_ratio(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if (v - v.round()).abs() < 0.005 && v.abs() >= 1.0 {
        format!("{:.0}x", v.round())
    } else {
        format!("{v:.2}x")
    }
}

/// `part / whole` in percent, "0 %" when `whole` is 0.
pub(super) fn percent_of(part: u64, whole: u64) -> String {
    if whole == 0 {
        "0 %".into()
    } else {
        format!("{} %", fmt_num(part as f64 * 100.0 / whole as f64))
    }
}

pub(super) const NA: &str = "<span class=\"na\">n/a</span>";

/// Whether a step measured transaction latency: it had players and they
/// recorded samples (a game judged without players did not).
pub(super) fn measured_latency(st: &crate::bench::Step) -> bool {
    st.players > 0 && st.transaction_latency_us.count > 0
}

pub(super) const NOT_REACHED: &str = "<span class=\"na\">not reached</span>";

/// A machine as the pages' "System" rows name it.
pub(super) fn system(s: &crate::system::SystemInfo) -> String {
    format!(
        "{}, {} logical CPUs, kernel {}",
        or_na(&s.cpu_model),
        s.logical_cpus,
        or_na(&s.kernel)
    )
}

pub(super) fn or_na(s: &str) -> String {
    if s.trim().is_empty() {
        "<span class=\"na\">unknown</span>".into()
    } else {
        esc(s)
    }
}

/// Unix seconds as "YYYY-MM-DD HH:MM:SS UTC" (0: unknown).
pub(super) fn utc(unix: u64) -> String {
    if unix == 0 {
        return "unknown".into();
    }
    // Howard Hinnant's civil_from_days.
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

pub(super) fn fmt_duration(s: u64) -> String {
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, s / 60 % 60),
    }
}

/// CPU numbers as ranges: [0,1,2,5] -> "0-2, 5"; empty -> "not pinned".
pub(super) fn cpu_list(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        return "not pinned".into();
    }
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    format!("{} ({})", parts.join(", "), v.len())
}

pub(super) fn servers(n: Option<u32>) -> String {
    match n {
        Some(n) => crate::words::servers(n),
        None => NOT_REACHED.into(),
    }
}

/// A ladder's maximum density; "at least" when no step failed (its largest
/// passing step is only a lower bound).
pub(super) fn ladder_max(l: &Ladder) -> String {
    if !l.limit_found() && !l.steps.is_empty() {
        return format!("<span class=\"na\">{}</span>", esc(&l.max_density_words()));
    }
    servers(l.max_servers)
}

/// A result's maximum density, from its first ladder when that one never
/// failed a step.
pub(super) fn max_density(r: &BenchResult) -> String {
    match r.ladders.first() {
        Some(l) if !l.limit_found() && !l.steps.is_empty() => ladder_max(l),
        _ => servers(r.max_servers),
    }
}

/// The step at the recommended density: of the first ladder, or over
/// repetitions of the first ladder of the first variant that recommended
/// it.
pub(super) fn recommended_step(r: &BenchResult) -> Option<&Step> {
    let first = r.ladders.first()?;
    let ladder = r
        .ladders
        .iter()
        .find(|l| l.label == first.label && l.recommended_servers == r.recommended_servers)
        .unwrap_or(first);
    step_at(Some(ladder), r.recommended_servers)
}

pub(super) fn step_at(ladder: Option<&Ladder>, servers: Option<u32>) -> Option<&Step> {
    let s = servers?;
    ladder?.steps.iter().find(|st| st.servers == s)
}

pub(super) fn is_fail(step: &Step) -> bool {
    step.verdict.is_fail()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::summary::tiles_of;

    #[test]
    fn dates_and_numbers_read_like_a_person_wrote_them() {
        assert_eq!(utc(0), "unknown");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_735_689_599), "2024-12-31 23:59:59 UTC");
        assert_eq!(fmt_int(1_234_567), "1,234,567");
        assert_eq!(fmt_int(123_456), "123,456");
        assert_eq!(fmt_int(0), "0");
        assert_eq!(tiles_of(9, 3), " (3 tiles of 3)");
        assert_eq!(tiles_of(9, 0), "");
        assert_eq!(fmt_num(75.0), "75");
        assert_eq!(fmt_num(0.1), "0.1");
        assert_eq!(fmt_num(f64::NAN), "n/a");
        assert_eq!(fmt_ms(450), "0.450");
        assert_eq!(fmt_ms(12_345), "12.3");
        assert_eq!(fmt_ratio(1.3333), "1.33x");
        assert_eq!(fmt_ratio(24.0), "24x");
        assert_eq!(fmt_quantile(0.999), "99.9");
        assert_eq!(cpu_list(&[5, 0, 1, 2]), "0-2, 5 (4)");
        assert_eq!(cpu_list(&[]), "not pinned");
    }

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(
            esc(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
