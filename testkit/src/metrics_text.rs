//! Reading one series from a Prometheus text exposition (`/metrics`), as
//! the tests that count refusals and buffered bytes do.

/// The value of the series named exactly `series` (a metric name with its
/// labels as the exposition writes them, e.g.
/// `metahook_hook_tls_refusals_total{reason="unknown_ca"}`), or 0 before
/// its first sample.
pub fn sample(text: &[u8], series: &str) -> f64 {
    String::from_utf8_lossy(text)
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::sample;

    #[test]
    fn the_exact_series_is_read_not_one_it_prefixes() {
        let text = b"# TYPE a counter\na_total{reason=\"x\"} 3\na_total{reason=\"xy\"} 5\nb 2.5\n";
        assert_eq!(sample(text, "a_total{reason=\"xy\"}"), 5.0);
        assert_eq!(sample(text, "a_total{reason=\"x\"}"), 3.0);
        assert_eq!(sample(text, "b"), 2.5);
        assert_eq!(sample(text, "a_total"), 0.0, "a prefix is not the series");
        assert_eq!(sample(text, "c"), 0.0);
    }
}
