//! Which pod template a ReplicaSet was given, as a short hash kept in an
//! annotation: the template the API server hands back is defaulted (every
//! container gains an `imagePullPolicy`, a `terminationMessagePath`...),
//! so it cannot be compared with the parent's.

use k8s_openapi::api::core::v1::PodTemplateSpec;

/// The annotation on each ReplicaSet holding its template's hash.
pub const TEMPLATE_HASH_ANNOTATION: &str = "ctl.enisoc.com/template-hash";

/// The hash of `template` as it serializes (k8s-openapi writes fields in a
/// fixed order and maps sorted): 16 hex digits of 64-bit FNV-1a, which is
/// stable across Rust releases, unlike `std`'s `DefaultHasher`.
pub fn template_hash(template: &PodTemplateSpec) -> Result<String, serde_json::Error> {
    let bytes = serde_json::to_vec(template)?;
    Ok(format!("{:016x}", fnv1a64(&bytes)))
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    #[test]
    fn fnv1a_gives_the_published_values() {
        // The reference vectors of the FNV specification.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    fn template(image: &str, labels: &[(&str, &str)]) -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "nginx".to_owned(),
                    image: Some(image.to_owned()),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
        }
    }

    #[test]
    fn a_change_anywhere_in_the_template_changes_the_hash() {
        let base = template_hash(&template("nginx:1", &[("app", "a")])).unwrap();
        assert_eq!(base.len(), 16);
        assert_eq!(
            base,
            template_hash(&template("nginx:1", &[("app", "a")])).unwrap()
        );
        assert_ne!(
            base,
            template_hash(&template("nginx:2", &[("app", "a")])).unwrap()
        );
        assert_ne!(
            base,
            template_hash(&template("nginx:1", &[("app", "a"), ("new", "label")])).unwrap()
        );
    }

    #[test]
    fn label_order_does_not_matter() {
        assert_eq!(
            template_hash(&template("n", &[("a", "1"), ("b", "2")])).unwrap(),
            template_hash(&template("n", &[("b", "2"), ("a", "1")])).unwrap()
        );
    }
}
