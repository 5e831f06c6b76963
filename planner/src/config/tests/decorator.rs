//! DecoratorController manifests: what is read, what is refused.

use super::*;
use crate::test_support::manifest;

const SERVICE_PER_POD: &str = r#"
apiVersion: metacontroller.k8s.io/v1alpha1
kind: DecoratorController
metadata: {name: service-per-pod}
spec:
  resources:
    - apiVersion: apps/v1
      resource: statefulsets
      annotationSelector:
        matchExpressions:
          - {key: service-per-pod-label, operator: Exists}
    - apiVersion: v1
      resource: pods
      labelSelector: {matchLabels: {app: web}}
      annotationSelector: {matchAnnotations: {decorate: "yes"}}
  attachments:
    - {apiVersion: v1, resource: services, updateStrategy: {method: InPlace}}
  resyncPeriodSeconds: 0
  hooks:
    sync:
      webhook: {url: "http://hooks.example/sync-service-per-pod"}
    finalize:
      version: v2
      webhook: {url: "http://hooks.example/finalize-service-per-pod"}
"#;

fn err(text: &str) -> String {
    parse("d.yaml", text).unwrap_err().to_string()
}

#[test]
fn a_decorator_reads_resources_attachments_and_hooks() {
    let c = parse("d.yaml", SERVICE_PER_POD).unwrap();
    assert_eq!(c.kind, ControllerKind::Decorator);
    assert!(c.is_decorator());
    assert_eq!(c.parent.resource, "statefulsets");
    let exists = c.parent.annotation_selector.as_ref().unwrap();
    assert_eq!(
        exists.match_expressions.as_ref().unwrap()[0].operator,
        "Exists"
    );
    assert_eq!(c.more_resources.len(), 1);
    // matchAnnotations is read as a label selector's matchLabels.
    let pods = &c.more_resources[0];
    assert_eq!(
        pods.annotation_selector
            .as_ref()
            .unwrap()
            .match_labels
            .as_ref()
            .unwrap()["decorate"],
        "yes"
    );
    assert!(pods.label_selector.is_some());
    assert_eq!(c.children[0].resource, "services");
    assert_eq!(c.children[0].update_strategy, UpdateStrategy::InPlace);
    // Floored at one second, as Metacontroller does.
    assert_eq!(c.resync_period, Some(std::time::Duration::from_secs(1)));
    assert_eq!(c.hooks.finalize.as_ref().unwrap().version, HookVersion::V2);
    assert_eq!(c.hooks.sync.webhook.path, "/sync-service-per-pod");
}

#[test]
fn a_decorator_of_two_resources_is_driven_as_two() {
    let each = parse("d.yaml", SERVICE_PER_POD).unwrap().per_resource();
    let resources: Vec<_> = each.iter().map(|c| c.parent.resource.as_str()).collect();
    assert_eq!(resources, ["statefulsets", "pods"]);
    assert!(
        each.iter()
            .all(|c| c.name == "service-per-pod" && c.more_resources.is_empty())
    );
}

#[test]
fn a_decorator_outside_the_subset_is_refused_by_path() {
    let ignore = SERVICE_PER_POD.replace(
        "resource: statefulsets",
        "resource: statefulsets\n      ignoreStatusChanges: true",
    );
    let per_resource = parse("d.yaml", &ignore).unwrap().per_resource();
    assert!(per_resource[0].parent.ignore_status_changes);
    assert!(!per_resource[1].parent.ignore_status_changes);
    let rolling = SERVICE_PER_POD.replace("method: InPlace", "method: RollingRecreate");
    assert!(
        err(&rolling).contains(
            "`spec.attachments[0].updateStrategy.method: RollingRecreate` is not supported"
        )
    );
    let unknown = SERVICE_PER_POD.replace("  attachments:", "  childResources: []\n  attachments:");
    assert!(err(&unknown).contains("`spec.childResources` is not supported"));
}

#[test]
fn a_decorator_takes_endpoint_configs_as_a_composite_does() {
    let text = SERVICE_PER_POD.replace(
        "  attachments:",
        "  endpointConfigs:\n    - host: hooks.example\n      basicAuth: {secretRef: {name: b, namespace: hooks}}\n  attachments:",
    );
    let c = parse("test.yaml", &text).unwrap();
    assert!(matches!(
        c.hooks.sync.webhook.auth.header,
        Some(crate::config::AuthHeader::Basic { .. })
    ));
}

#[test]
fn a_decorator_needs_a_resource_and_a_sync_hook() {
    let none = manifest(
        "DecoratorController",
        "d",
        "  resources: []\n  hooks: {sync: {webhook: {url: \"http://h/sync\"}}}\n",
    );
    assert!(err(&none).contains("`spec.resources` must name at least one resource"));
    let no_sync = SERVICE_PER_POD.replace(
        "    sync:\n      webhook: {url: \"http://hooks.example/sync-service-per-pod\"}\n",
        "",
    );
    assert!(
        err(&no_sync).contains("`spec.hooks.sync` is required"),
        "{}",
        err(&no_sync)
    );
    let bad = SERVICE_PER_POD.replace("operator: Exists", "operator: Near");
    assert!(
        err(&bad).contains("`spec.resources[0].annotationSelector`"),
        "{}",
        err(&bad)
    );
}
