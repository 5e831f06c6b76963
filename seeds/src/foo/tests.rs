use super::*;
use serde_json::json;

#[test]
fn dns_subdomains_are_checked_as_kubernetes_does() {
    for good in [
        "a",
        "foo-deployment",
        "a.b-c.d",
        "0",
        "x".repeat(253).as_str(),
    ] {
        assert_eq!(check_dns_subdomain(good), Ok(()), "{good}");
    }
    for bad in [
        "",
        "Foo",
        "-a",
        "a-",
        "a..b",
        ".a",
        "a.",
        "a.-b",
        "a_b",
        "a b",
        "ä",
        "x".repeat(254).as_str(),
    ] {
        assert!(check_dns_subdomain(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn the_schema_carries_the_name_check() {
    let crd = Foo::crd();
    let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap_or_default();
    let name = &schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["deploymentName"];
    assert_eq!(name["pattern"], DNS_SUBDOMAIN_PATTERN);
    assert_eq!(name["maxLength"], 253);
    assert_eq!(name["minLength"], 1);
    let replicas = &schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["replicas"];
    assert_eq!(replicas["minimum"].as_f64(), Some(0.0));
    // Optional, with no schema default: the `default` hook names it after
    // the Foo, and an empty default would fail the pattern.
    let spec = &schema["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(spec.get("required"), None);
    assert_eq!(name.get("default"), None);
}

#[test]
fn the_crd_is_the_seeds() {
    let crd = Foo::crd();
    assert_eq!(
        crd.metadata.name.as_deref(),
        Some("foos.samplecontroller.k8s.io")
    );
    assert_eq!(crd.spec.scope, "Namespaced");
    let version = &crd.spec.versions[0];
    assert_eq!(version.name, "v1alpha1");
    assert!(
        version
            .subresources
            .as_ref()
            .is_some_and(|s| s.status.is_some()),
        "status subresource"
    );
    let columns: Vec<&str> = version
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(columns, ["Deployment", "Desired", "Available", "Age"]);
    let schema = serde_json::to_value(&version.schema).unwrap_or_default();
    let status = &schema["openAPIV3Schema"]["properties"]["status"]["properties"];
    for field in ["availableReplicas", "conditions", "observedGeneration"] {
        assert!(
            status.get(field).is_some(),
            "status.{field} would be pruned"
        );
    }
}

#[test]
fn the_message_is_the_seeds() {
    assert_eq!(
        message_resource_exists("foo-deployment"),
        "Resource \"foo-deployment\" already exists and is not managed by Foo"
    );
}

#[test]
fn v1_is_served_beside_the_stored_v1alpha1_only_with_the_webhook() {
    use metahook_core::conversion::ConversionWebhook;
    let foo = controller();
    assert_eq!(foo.crds(), crds(), "the chart's CRD keeps to v1alpha1");
    let webhook = ConversionWebhook::service(&metahook_core::Webhooks::default());
    let with = foo.crds_with_conversion(&webhook).unwrap_or_default();
    let crd = serde_json::to_value(&with[0]).unwrap_or_default();
    let versions: Vec<_> = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| (v["name"].clone(), v["served"].clone(), v["storage"].clone()))
        .collect();
    assert_eq!(
        versions,
        [
            (json!("v1alpha1"), json!(true), json!(true)),
            (json!("v1"), json!(true), json!(false)),
        ]
    );
    let name = &crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["deployment"]["properties"]["name"];
    assert_eq!(name["pattern"], DNS_SUBDOMAIN_PATTERN);
    assert_eq!(
        crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["path"],
        "/foo/convert"
    );
}
