//! Byte sizes of a host's limits (`256MiB`, `1GiB`): parsing the text of a
//! host file or flag, and the one range check that typed sizes pass too.

use tickpack_host::fleet::FleetError;

/// The largest memory or disk size accepted (64 TiB): more than any one
/// machine holds, far below where a byte count overflows.
pub const MAX_BYTES: u64 = 64 << 40;

/// The smallest memory or disk size accepted: 4 MiB.
pub const MIN_BYTES: u64 = 4 << 20;

/// Parses `256MiB`, `1GiB`, `512M`, `1048576`: [`MIN_BYTES`] to
/// [`MAX_BYTES`]. Errors say "memory size"; [`disk_size`] rewords them.
pub fn parse_bytes(s: &str) -> Result<u64, FleetError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let shown = tickpack_sys::text::escape(s, 40);
    let n: f64 = num.parse().map_err(|_| {
        FleetError::Invalid(format!("memory size \"{shown}\": expected e.g. 256MiB"))
    })?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" | "k" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        u => {
            return Err(FleetError::Invalid(format!(
                "memory size {s:?}: unknown unit {u:?} (use KiB, MiB, GiB)"
            )))
        }
    };
    let v = n * mult as f64;
    if !v.is_finite() || v > MAX_BYTES as f64 {
        return Err(above_max(&shown));
    }
    let v = v as u64;
    check_bytes(v).map_err(|_| below_min(s))?;
    Ok(v)
}

/// The range check of a size, typed or parsed: [`MIN_BYTES`] to
/// [`MAX_BYTES`].
pub fn check_bytes(v: u64) -> Result<u64, FleetError> {
    if v > MAX_BYTES {
        return Err(above_max(&format!("{v}")));
    }
    if v < MIN_BYTES {
        return Err(below_min(&format!("{v}")));
    }
    Ok(v)
}

fn above_max(shown: &str) -> FleetError {
    FleetError::Invalid(format!(
        "memory size \"{shown}\" is above the {} TiB maximum",
        MAX_BYTES >> 40
    ))
}

fn below_min(s: &str) -> FleetError {
    FleetError::Invalid(format!(
        "memory size {s:?} is below the {} MiB minimum",
        MIN_BYTES >> 20
    ))
}

/// A size error of [`parse_bytes`] or [`check_bytes`], said of the disk
/// limit.
pub fn disk_size(e: FleetError) -> FleetError {
    let FleetError::Invalid(m) = e;
    FleetError::Invalid(m.replacen("memory size", "disk size", 1))
}
