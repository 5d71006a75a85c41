//! Linux CPU lists such as `0-3,8`: the format of sysfs (`cpu/online`,
//! `node*/cpulist`), `cpuset.cpus` and tickpack's `--cpus` flags.

/// No CPU number is accepted at or above this, whatever the caller's
/// limit: Linux builds for at most 8192 CPUs (`CONFIG_NR_CPUS`), and a
/// range is expanded into a list, so `0-99999999` must fail at parse time
/// instead of allocating gigabytes.
pub const MAX_CPUS: usize = 8192;

/// Why a CPU list was refused; the message names the bad item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    /// Nothing but blanks.
    #[error("the list is empty")]
    Empty,
    /// Two commas in a row, or a comma at either end.
    #[error("empty item (two commas in a row, or a trailing comma?)")]
    EmptyItem,
    /// An item that is not a number.
    #[error("{0:?} is not a CPU number")]
    NotANumber(String),
    /// A CPU at or above the limit given to [`parse_cpu_list`].
    #[error("CPU {cpu} is out of range (max {max})")]
    OutOfRange {
        /// The CPU named.
        cpu: usize,
        /// The highest CPU accepted.
        max: usize,
    },
    /// A range whose start is above its end.
    #[error("range {0:?} runs backwards")]
    Backwards(String),
}

/// Parses a CPU list into ascending, distinct CPU numbers.
///
/// Items are single CPUs or inclusive ranges separated by commas; blanks
/// around items (and a trailing newline, as sysfs writes) are fine. With
/// `below: Some(n)`, CPUs at or above `n` are refused; CPUs at or above
/// [`MAX_CPUS`] always are (checked before a range is expanded). An empty list is an
/// error: a caller for which "no CPUs" is valid (a memory-only NUMA node)
/// checks for blank text first.
pub fn parse_cpu_list(input: &str, below: Option<usize>) -> Result<Vec<usize>, CpuListError> {
    if input.trim().is_empty() {
        return Err(CpuListError::Empty);
    }
    let limit = below.unwrap_or(MAX_CPUS).min(MAX_CPUS);
    let parse_one = |s: &str| -> Result<usize, CpuListError> {
        let n: usize = s
            .trim()
            .parse()
            .map_err(|_| CpuListError::NotANumber(s.trim().to_owned()))?;
        if n >= limit {
            return Err(CpuListError::OutOfRange {
                cpu: n,
                max: limit.saturating_sub(1),
            });
        }
        Ok(n)
    };
    let mut cpus = Vec::new();
    for item in input.split(',') {
        if item.trim().is_empty() {
            return Err(CpuListError::EmptyItem);
        }
        match item.split_once('-') {
            None => cpus.push(parse_one(item)?),
            Some((lo, hi)) => {
                let (lo, hi) = (parse_one(lo)?, parse_one(hi)?);
                if lo > hi {
                    return Err(CpuListError::Backwards(item.trim().to_owned()));
                }
                cpus.extend(lo..=hi);
            }
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats CPU numbers the way Linux does (`0-3,8`), for `cpuset.cpus` and
/// messages. The input need not be sorted; duplicates are dropped.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_items_ranges_blanks_and_a_trailing_newline() {
        assert_eq!(parse_cpu_list("0-2,5", None).unwrap(), vec![0, 1, 2, 5]);
        assert_eq!(parse_cpu_list(" 5, 1-2 ,2", None).unwrap(), vec![1, 2, 5]);
        assert_eq!(
            parse_cpu_list("0-3,8\n", None).unwrap(),
            vec![0, 1, 2, 3, 8]
        );
        assert_eq!(parse_cpu_list("7-7", None).unwrap(), vec![7]);
    }

    #[test]
    fn refuses_bad_lists_naming_the_problem() {
        for (input, needle) in [
            ("", "empty"),
            ("\n", "empty"),
            ("1,,2", "empty item"),
            ("a", "\"a\" is not a CPU number"),
            ("3-1", "backwards"),
            ("0-", "\"\" is not a CPU number"),
        ] {
            let msg = parse_cpu_list(input, None).unwrap_err().to_string();
            assert!(msg.contains(needle), "{input:?}: {msg}");
        }
    }

    #[test]
    fn the_limit_is_exclusive() {
        assert_eq!(parse_cpu_list("1023", Some(1024)).unwrap(), vec![1023]);
        assert_eq!(
            parse_cpu_list("1-1024", Some(1024)),
            Err(CpuListError::OutOfRange {
                cpu: 1024,
                max: 1023
            })
        );
        assert_eq!(parse_cpu_list("4096", None).unwrap(), vec![4096]);
        assert_eq!(parse_cpu_list("8191", Some(100_000)).unwrap(), vec![8191]);
    }

    /// Regression: `--reserved-cpus 0-99999999` expanded the range into a
    /// list and grew to 4.7 GB; another aborted allocating 32 GB.
    #[test]
    fn reserved_cpus_huge_range_is_refused_quickly() {
        for input in ["0-99999999", "0-18446744073709551615", "8192", "1,0-9000"] {
            let e = parse_cpu_list(input, None).unwrap_err();
            assert!(
                matches!(e, CpuListError::OutOfRange { max: 8191, .. }),
                "{input}: {e}"
            );
        }
    }

    #[test]
    fn formats_in_linux_order_and_round_trips() {
        assert_eq!(format_cpu_list(&[8, 0, 1, 2, 3, 3]), "0-3,8");
        assert_eq!(format_cpu_list(&[1, 3, 5]), "1,3,5");
        assert_eq!(format_cpu_list(&[]), "");
        for cpus in [vec![0], vec![0, 1, 2, 3, 8], vec![2, 4, 5, 6, 9, 10]] {
            assert_eq!(parse_cpu_list(&format_cpu_list(&cpus), None).unwrap(), cpus);
        }
    }
}
