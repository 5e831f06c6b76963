//! The manifests' rules, each refusal asserted by the message a user reads.

mod decorator;

use super::go_duration::{GoDurationError, go_duration};
use super::*;
use crate::test_support::manifest;
use std::time::Duration;

const MINIMAL: &str = r#"
apiVersion: metacontroller.k8s.io/v1alpha1
kind: CompositeController
metadata: {name: demo}
spec:
  parentResource: {apiVersion: example.com/v1, resource: things}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  hooks:
    sync:
      webhook: {url: "http://hooks.example:8080/demo/sync"}
"#;

fn err(text: &str) -> String {
    parse("test.yaml", text).unwrap_err().to_string()
}

#[test]
fn embedded_manifests_are_in_the_subset() {
    let all = from_controllers(metahook_seeds::controllers()).unwrap();
    let names: Vec<_> = all.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["hello", "hikawa", "foo"]);
    let hello = &all[0];
    assert_eq!(hello.parent.api_version, "fraim.co.jp/v1");
    assert_eq!(hello.parent.resource, "helloes");
    assert!(hello.generate_selector);
    assert_eq!(hello.children[0].update_strategy, UpdateStrategy::InPlace);
    assert_eq!(hello.hooks.sync.version, HookVersion::V2);
    assert_eq!(
        hello.hooks.sync.webhook.url,
        "http://metahook.metahook:80/hello/sync"
    );
    assert_eq!(hello.hooks.sync.webhook.path, "/hello/sync");
    assert_eq!(hello.hooks.sync.webhook.timeout, Duration::from_secs(10));
    assert!(hello.hooks.finalize.is_some());
    assert!(all[2].hooks.customize.is_some());
}

#[test]
fn defaults_match_metacontroller() {
    let c = parse("m.yaml", MINIMAL).unwrap();
    assert_eq!(c.children[0].update_strategy, UpdateStrategy::OnDelete);
    assert_eq!(c.hooks.sync.version, HookVersion::V1);
    assert_eq!(c.hooks.sync.webhook.timeout, DEFAULT_TIMEOUT);
    assert_eq!(c.hooks.sync.webhook.path, "/demo/sync");
    assert!(!c.generate_selector);
    assert_eq!(c.resync_period, None);
    assert_eq!(c.object["metadata"]["name"], "demo");
}

#[test]
fn rolling_updates_are_read_with_their_checks_and_field_paths() {
    let rolling = MINIMAL
        .replace(
            "resource: things}",
            "resource: things, revisionHistory: {fieldPaths: [spec.template]}}",
        )
        .replace(
            "{apiVersion: v1, resource: configmaps}",
            "{apiVersion: v1, resource: pods, updateStrategy: {method: RollingRecreate, \
             statusChecks: {conditions: [{type: Ready, status: 'True'}]}}}\n    \
             - {apiVersion: v1, resource: secrets, updateStrategy: {method: RollingInPlace}}",
        );
    let c = parse("m.yaml", &rolling).unwrap();
    assert_eq!(c.parent.revision_field_paths, ["spec.template"]);
    assert_eq!(
        c.children[0].update_strategy,
        UpdateStrategy::RollingRecreate
    );
    assert_eq!(
        c.children[0].status_checks,
        [ConditionCheck {
            type_: "Ready".to_owned(),
            status: Some("True".to_owned()),
            reason: None,
        }]
    );
    assert!(c.children[1].update_strategy.is_rolling());
    assert!(c.children[1].status_checks.is_empty());
    // No revisionHistory (or no fieldPaths): the whole spec, as
    // Metacontroller defaults it.
    let c = parse("m.yaml", MINIMAL).unwrap();
    assert_eq!(c.parent.revision_field_paths, ["spec"]);
    let empty = MINIMAL.replace(
        "resource: things}",
        "resource: things, revisionHistory: {}}",
    );
    assert_eq!(
        parse("m.yaml", &empty).unwrap().parent.revision_field_paths,
        ["spec"]
    );
    let bad_path = MINIMAL.replace(
        "resource: things}",
        "resource: things, revisionHistory: {fieldPaths: [spec..template]}}",
    );
    assert!(
        err(&bad_path).contains("`spec.parentResource.revisionHistory.fieldPaths[0]`"),
        "{}",
        err(&bad_path)
    );
    let no_type = MINIMAL.replace(
        "{apiVersion: v1, resource: configmaps}",
        "{apiVersion: v1, resource: configmaps, updateStrategy: {method: RollingInPlace, \
         statusChecks: {conditions: [{status: 'True'}]}}}",
    );
    assert!(
        err(&no_type).contains(
            "`spec.childResources[0].updateStrategy.statusChecks.conditions[0].type` is required"
        ),
        "{}",
        err(&no_type)
    );
}

#[test]
fn unsupported_fields_are_named() {
    let etag = MINIMAL.replace(
        "webhook: {url:",
        "webhook: {etag: {enabled: true, ttl: 5}, url:",
    );
    assert!(err(&etag).contains("`spec.hooks.sync.webhook.etag.ttl` is not supported"));
    let pre = MINIMAL.replace("  hooks:\n", "  hooks:\n    preUpdateChild: {}\n");
    assert!(err(&pre).contains("`spec.hooks.preUpdateChild`"));
}

#[test]
fn ignore_status_changes_the_unmarshal_mode_and_etag_are_read() {
    let c = parse("m.yaml", MINIMAL).unwrap();
    assert!(!c.parent.ignore_status_changes);
    assert_eq!(c.hooks.sync.webhook.strict, None);
    let set = MINIMAL
        .replace(
            "resource: things}",
            "resource: things, ignoreStatusChanges: true}",
        )
        .replace(
            "webhook: {url:",
            "webhook: {responseUnMarshallMode: strict, url:",
        );
    let c = parse("m.yaml", &set).unwrap();
    assert!(c.parent.ignore_status_changes);
    assert_eq!(c.hooks.sync.webhook.strict, Some(true));
    let loose = MINIMAL.replace(
        "webhook: {url:",
        "webhook: {responseUnMarshallMode: loose, url:",
    );
    assert_eq!(
        parse("m.yaml", &loose).unwrap().hooks.sync.webhook.strict,
        Some(false)
    );
    let etag = |settings: &str| {
        let text = MINIMAL.replace(
            "webhook: {url:",
            &format!("webhook: {{etag: {settings}, url:"),
        );
        parse("m.yaml", &text).map(|c| c.hooks.sync.webhook.etag)
    };
    assert_eq!(
        etag("{enabled: false, cacheTimeoutSeconds: 5}").unwrap(),
        None
    );
    assert_eq!(
        etag("{enabled: true, cacheTimeoutSeconds: 5}").unwrap(),
        Some(Etag {
            timeout: Some(Duration::from_secs(5)),
            cleanup: None
        })
    );
    assert!(
        etag("{enabled: true, cacheCleanupSeconds: 0}")
            .unwrap_err()
            .to_string()
            .contains(
                "`spec.hooks.sync.webhook.etag.cacheCleanupSeconds` must be a positive number"
            )
    );
    let bad = MINIMAL.replace(
        "webhook: {url:",
        "webhook: {responseUnMarshallMode: lax, url:",
    );
    assert!(
        err(&bad)
            .contains("`spec.hooks.sync.webhook.responseUnMarshallMode` must be loose or strict"),
        "{}",
        err(&bad)
    );
}

#[test]
fn wrong_types_are_named_by_their_path() {
    let method = MINIMAL.replace(
        "{apiVersion: v1, resource: configmaps}",
        "{apiVersion: v1, resource: configmaps, updateStrategy: {method: 5}}",
    );
    assert!(
        err(&method).contains("`spec.childResources[0].updateStrategy.method` invalid type"),
        "{}",
        err(&method)
    );
    let selector = MINIMAL.replace("resource: things}", "resource: things, labelSelector: 5}");
    assert!(err(&selector).contains("`spec.parentResource.labelSelector` invalid type"));
}

#[test]
fn invalid_values_are_named() {
    assert!(
        err(&MINIMAL.replace("CompositeController", "ReplicaController"))
            .contains("`kind` must be CompositeController or DecoratorController")
    );
    assert!(
        err(&MINIMAL.replace("resource: things", "resource: \"\""))
            .contains("`spec.parentResource.resource` is required")
    );
    assert!(
        err(&MINIMAL.replace("  hooks:\n    sync:\n", "  hooks:\n    finalize:\n"))
            .contains("`spec.hooks.sync` is required")
    );
    let bad_timeout = MINIMAL.replace("webhook: {url:", "webhook: {timeout: soon, url:");
    assert!(err(&bad_timeout).contains("`spec.hooks.sync.webhook.timeout` must be a Go duration"));
    let no_path = MINIMAL.replace(
        "webhook: {url: \"http://hooks.example:8080/demo/sync\"}",
        "webhook: {service: {name: s, namespace: tools}}",
    );
    let got = err(&no_path);
    assert!(
        got.contains("`spec.hooks.sync.webhook.path` is required"),
        "{got}"
    );
    let bad_method = MINIMAL.replace(
        "{apiVersion: v1, resource: configmaps}",
        "{apiVersion: v1, resource: configmaps, updateStrategy: {method: Sometimes}}",
    );
    assert!(
        err(&bad_method)
            .contains("must be OnDelete, Recreate, InPlace, RollingRecreate or RollingInPlace")
    );
    let bad_selector = MINIMAL.replace(
        "resource: things}",
        "resource: things, labelSelector: {matchExpressions: [{key: a, operator: Near}]}}",
    );
    assert!(err(&bad_selector).contains("`spec.parentResource.labelSelector`"));
    assert!(err("not: [valid").contains("not valid YAML"));
}

#[test]
fn service_webhooks_build_metacontrollers_url() {
    let text = MINIMAL.replace(
        "webhook: {url: \"http://hooks.example:8080/demo/sync\"}",
        "{version: v2, webhook: {service: {name: hooks, namespace: tools, port: 8080}, path: /demo/sync, timeout: 1m30s}}",
    )
    .replace("    sync:\n      {", "    sync: {");
    let c = parse("m.yaml", &text).unwrap();
    assert_eq!(
        c.hooks.sync.webhook.url,
        "http://hooks.tools:8080/demo/sync"
    );
    assert_eq!(c.hooks.sync.webhook.timeout, Duration::from_secs(90));
    assert_eq!(c.hooks.sync.version, HookVersion::V2);
}

fn webhook_auth(fields: &str) -> Result<WebhookAuth, String> {
    let text = MINIMAL.replace(
        "webhook: {url: \"http://hooks.example:8080/demo/sync\"}",
        &format!("webhook: {{url: \"https://hooks.example/demo/sync\", {fields}}}"),
    );
    parse("m.yaml", &text)
        .map(|c| c.hooks.sync.webhook.auth)
        .map_err(|e| e.to_string())
}

#[test]
fn webhook_credentials_as_metacontroller_reads_them() {
    let secret = |name: &str| ObjectRef {
        namespace: "hooks".to_owned(),
        name: name.to_owned(),
    };
    let all = webhook_auth(
        "caBundle: {secretRef: {name: ca, namespace: hooks}}, \
         clientTLS: {secretRef: {name: client, namespace: hooks}}, \
         authorization: {secretRef: {name: token, namespace: hooks, key: t}}",
    )
    .unwrap();
    assert_eq!(
        all,
        WebhookAuth {
            ca_bundle: Some(CaBundle::Secret(KeyRef {
                object: secret("ca"),
                key: "ca.crt".to_owned()
            })),
            client_tls: Some(ClientTls {
                secret: secret("client"),
                cert_key: "tls.crt".to_owned(),
                private_key_key: "tls.key".to_owned(),
            }),
            header: Some(AuthHeader::Authorization {
                scheme: "Bearer".to_owned(),
                secret: KeyRef {
                    object: secret("token"),
                    key: "t".to_owned()
                },
            }),
        }
    );
    let basic = webhook_auth(
        "caBundle: {configMapRef: {name: ca, namespace: hooks, key: bundle.pem}}, \
         basicAuth: {secretRef: {name: b, namespace: hooks}, usernameKey: u}",
    )
    .unwrap();
    assert_eq!(
        basic.ca_bundle,
        Some(CaBundle::ConfigMap(KeyRef {
            object: secret("ca"),
            key: "bundle.pem".to_owned()
        }))
    );
    assert_eq!(
        basic.header,
        Some(AuthHeader::Basic {
            secret: secret("b"),
            username_key: "u".to_owned(),
            password_key: "password".to_owned(),
        })
    );
    let token = webhook_auth(
        "authorization: {type: Token, secretRef: {name: t, namespace: hooks, key: k}}",
    )
    .unwrap();
    assert!(
        matches!(token.header, Some(AuthHeader::Authorization { ref scheme, .. }) if scheme == "Token")
    );
    assert!(webhook_auth("caBundle: {inline: pem}").is_ok());
    assert!(webhook_auth("").unwrap().is_empty());

    for (fields, message) in [
        (
            "authorization: {secretRef: {name: t, namespace: ns, key: k}}, basicAuth: {secretRef: {name: b, namespace: ns}}",
            "`spec.hooks.sync.webhook.authorization` and basicAuth are mutually exclusive",
        ),
        (
            "authorization: {type: basic, secretRef: {name: t, namespace: ns, key: k}}",
            "`spec.hooks.sync.webhook.authorization.type` Basic is not supported: use basicAuth",
        ),
        (
            "authorization: {secretRef: {name: t, namespace: ns}}",
            "`spec.hooks.sync.webhook.authorization.secretRef.key` is required",
        ),
        (
            "caBundle: {}",
            "`spec.hooks.sync.webhook.caBundle` needs one of inline, secretRef or configMapRef",
        ),
        (
            "caBundle: {inline: x, secretRef: {name: a, namespace: b}}",
            "has more than one source",
        ),
        (
            "clientTLS: {secretRef: {name: c}}",
            "`spec.hooks.sync.webhook.clientTLS.secretRef.namespace` is required",
        ),
        (
            "clientTLS: {secretRef: {name: c, namespace: ns, key: k}}",
            "`spec.hooks.sync.webhook.clientTLS.secretRef.key` is not a field here",
        ),
        (
            "basicAuth: {}",
            "`spec.hooks.sync.webhook.basicAuth.secretRef` is required",
        ),
        (
            "clientTLS: {secretRef: {name: c, namespace: ns}, caFile: x}",
            "`spec.hooks.sync.webhook.clientTLS.caFile` is not supported",
        ),
    ] {
        let got = webhook_auth(fields).unwrap_err();
        assert!(got.contains(message), "{fields}: {got}");
    }
}

#[test]
fn go_durations() {
    let parse_go_duration = |text| go_duration(text).ok();
    assert_eq!(parse_go_duration("10s"), Some(Duration::from_secs(10)));
    assert_eq!(parse_go_duration("1m30s"), Some(Duration::from_secs(90)));
    assert_eq!(parse_go_duration("250ms"), Some(Duration::from_millis(250)));
    assert_eq!(parse_go_duration("1.5h"), Some(Duration::from_secs(5400)));
    assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
    assert_eq!(parse_go_duration("-3s"), Some(Duration::ZERO));
    assert_eq!(parse_go_duration("3"), None);
    assert_eq!(parse_go_duration("s"), None);
    assert_eq!(parse_go_duration(""), None);
}

/// What kube's parser alone would misread (or panic on) is refused, as Go
/// refuses it; more than 15 digits is refused too, so that kube's
/// arithmetic cannot overflow (`MAX_DIGITS`).
#[test]
fn go_durations_kube_would_misread_are_refused() {
    assert_eq!(go_duration("12µs").ok(), Some(Duration::from_micros(12)));
    assert_eq!(go_duration("12μs").ok(), Some(Duration::from_micros(12)));
    assert_eq!(go_duration("+5s").ok(), Some(Duration::from_secs(5)));
    assert_eq!(go_duration("-0").ok(), Some(Duration::ZERO));
    for text in [
        "+",
        "-",
        "5s0",
        "1s+5s",
        "--5s",
        "+-5s",
        "1h-5m",
        "1000000000000000h",
        "1000000000000000ns",
    ] {
        assert!(
            matches!(go_duration(text), Err(GoDurationError::Shape)),
            "{text}"
        );
    }
    assert_eq!(
        go_duration("100000000000000h").ok(),
        Some(Duration::from_secs(360_000_000_000_000_000))
    );
    let unit = MINIMAL.replace("webhook: {url:", "webhook: {timeout: 5sec, url:");
    let got = err(&unit);
    assert!(
        got.contains("`spec.hooks.sync.webhook.timeout` must be a Go duration such as 10s or 1m30s (invalid unit"),
        "{got}"
    );
}

#[test]
fn a_directory_is_read_in_name_order_and_duplicates_rejected() {
    let dir = std::env::temp_dir().join(format!("metahook-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("b.yaml"), MINIMAL).unwrap();
    std::fs::write(
        dir.join("a.yml"),
        MINIMAL.replace("name: demo", "name: alpha"),
    )
    .unwrap();
    std::fs::write(dir.join("notes.txt"), "ignored").unwrap();
    let names: Vec<_> = from_dir(&dir)
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["alpha", "demo"]);
    std::fs::write(dir.join("c.yaml"), MINIMAL).unwrap();
    assert!(
        from_dir(&dir)
            .unwrap_err()
            .to_string()
            .contains("already defined")
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(from_dir(&dir), Err(ConfigError::Read { .. })));
}

#[test]
fn endpoint_configs_give_their_settings_to_webhooks_of_their_host_that_have_none() {
    let spec = r#"  parentResource: {apiVersion: example.com/v1, resource: things}
  endpointConfigs:
    - host: other.example
      authorization: {secretRef: {name: other, namespace: hooks, key: t}}
    - host: hooks.example:443
      caBundle: {configMapRef: {name: ca, namespace: hooks, key: ca.crt}}
      authorization: {secretRef: {name: token, namespace: hooks, key: t}}
  hooks:
    sync:
      webhook: {url: "https://hooks.example/demo/sync"}
    finalize:
      webhook:
        url: "https://hooks.example/demo/finalize"
        basicAuth: {secretRef: {name: own, namespace: hooks}}
    customize:
      webhook: {url: "https://elsewhere.example/demo/customize"}
"#;
    let c = parse("test.yaml", &manifest("CompositeController", "demo", spec)).unwrap();
    // The sync hook's host, with https's default port: the second entry.
    let sync = &c.hooks.sync.webhook.auth;
    assert_eq!(
        sync.ca_bundle,
        Some(CaBundle::ConfigMap(KeyRef {
            object: ObjectRef {
                namespace: "hooks".to_owned(),
                name: "ca".to_owned()
            },
            key: "ca.crt".to_owned()
        }))
    );
    assert!(
        matches!(&sync.header, Some(AuthHeader::Authorization { secret, .. }) if secret.object.name == "token"),
        "{sync:?}"
    );
    // Settings of its own: those only (no CA from the entry).
    let finalize = &c.hooks.finalize.as_ref().unwrap().webhook.auth;
    assert!(matches!(finalize.header, Some(AuthHeader::Basic { .. })));
    assert_eq!(finalize.ca_bundle, None);
    // No entry for its host: nothing.
    assert!(c.hooks.customize.as_ref().unwrap().webhook.auth.is_empty());
    // An entry is checked as a webhook's settings are, by its path.
    let bad = MINIMAL.replace(
        "  hooks:\n",
        "  endpointConfigs:\n    - {caBundle: {inline: pem}}\n  hooks:\n",
    );
    assert!(
        err(&bad).contains("`spec.endpointConfigs[0].host` is required"),
        "{}",
        err(&bad)
    );
    let both = MINIMAL.replace(
        "  hooks:\n",
        "  endpointConfigs:\n    - {host: h, caBundle: {}}\n  hooks:\n",
    );
    assert!(
        err(&both).contains("`spec.endpointConfigs[0].caBundle` needs one of inline"),
        "{}",
        err(&both)
    );
}
