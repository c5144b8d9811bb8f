//! What this process has spent, read from /proc: CPU time and resident memory. The metrics
//! page shows them under Prometheus's standard names, so a client can see what the server
//! spent; they live apart from the page so that the server's top module can offer them
//! without reaching into a route file.

/// System configuration value, if the system knows it.
fn sysconf(name: libc::c_int) -> Option<f64> {
    // SAFETY: sysconf only reads a configuration value; any name is allowed.
    let value = unsafe { libc::sysconf(name) };
    (value > 0).then_some(value as f64)
}

/// User plus system CPU time of this process, from /proc/self/stat (fields 14 and 15,
/// counted after the command name, which may itself hold spaces).
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // after_name starts at field 3 (state), so field n is at index n - 3.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / sysconf(libc::_SC_CLK_TCK)?)
}

/// Resident memory of this process, from /proc/self/statm (pages).
pub fn process_resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: f64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some((pages * sysconf(libc::_SC_PAGESIZE)?) as u64)
}
