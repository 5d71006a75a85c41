//! `getinfo` / `getstatus` queries and their replies (owned by the probe
//! and health-check work).
