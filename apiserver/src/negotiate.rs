//! What a client asked for in `Accept`, among what is served: plain JSON,
//! a `meta.k8s.io` `Table` (kubectl's server-side printing), or
//! `PartialObjectMetadata` (metadata-only clients, e.g. the namespace
//! controller's). Kubernetes' rule: the first acceptable media range wins;
//! none acceptable is 406 (the aggregator relies on it: a 406 to its
//! aggregated-discovery request makes it fall back to the plain form).

/// The served representations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    /// `Table` in `meta.k8s.io/<version>` (`v1` or `v1beta1`).
    Table(&'static str),
    /// `PartialObjectMetadata[List]` in `meta.k8s.io/<version>`.
    Metadata(&'static str),
}

/// The first media range of `accept` that is served, or `None` (406).
/// No `Accept` (or an empty one) is JSON.
pub fn format(accept: Option<&str>) -> Option<Format> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Some(Format::Json);
    };
    accept.split(',').find_map(media_range)
}

fn media_range(range: &str) -> Option<Format> {
    let mut parts = range.split(';').map(str::trim);
    let media = parts.next()?.to_ascii_lowercase();
    if !matches!(media.as_str(), "application/json" | "application/*" | "*/*") {
        return None;
    }
    let (mut as_, mut g, mut v) = (None, None, None);
    for param in parts {
        let (key, value) = param.split_once('=')?;
        match key.trim() {
            "as" => as_ = Some(value.trim()),
            "g" => g = Some(value.trim()),
            "v" => v = Some(value.trim()),
            // q= and the like do not change what is sent.
            _ => {}
        }
    }
    let meta_version = match (g, v) {
        (Some("meta.k8s.io"), Some("v1")) => Some("v1"),
        (Some("meta.k8s.io"), Some("v1beta1")) => Some("v1beta1"),
        _ => None,
    };
    match as_ {
        None => Some(Format::Json),
        Some("Table") => meta_version.map(Format::Table),
        Some("PartialObjectMetadata" | "PartialObjectMetadataList") => {
            meta_version.map(Format::Metadata)
        }
        // APIGroupDiscoveryList (aggregated discovery) and anything else.
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_get_asks_for_a_table_first() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(format(Some(kubectl)), Some(Format::Table("v1")));
        assert_eq!(
            format(Some("application/json;as=Table;v=v1beta1;g=meta.k8s.io")),
            Some(Format::Table("v1beta1"))
        );
    }

    #[test]
    fn plain_json_and_no_accept_are_json() {
        assert_eq!(format(None), Some(Format::Json));
        assert_eq!(format(Some("")), Some(Format::Json));
        assert_eq!(format(Some("application/json, */*")), Some(Format::Json));
        assert_eq!(format(Some("*/*")), Some(Format::Json));
    }

    #[test]
    fn what_is_not_served_is_skipped_or_refused() {
        // The aggregator's aggregated-discovery request: refused (406), so
        // it falls back to /apis/<group>/<version>.
        let aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        assert_eq!(format(Some(aggregated)), None);
        // With a fallback, the fallback.
        assert_eq!(
            format(Some(&format!("{aggregated},application/json"))),
            Some(Format::Json)
        );
        assert_eq!(format(Some("application/vnd.kubernetes.protobuf")), None);
        assert_eq!(format(Some("application/yaml")), None);
        assert_eq!(
            format(Some(
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            )),
            Some(Format::Metadata("v1"))
        );
        assert_eq!(
            format(Some("application/json;as=Table;v=v9;g=meta.k8s.io")),
            None
        );
    }
}
