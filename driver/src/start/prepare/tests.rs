use super::*;
use crate::config;
use crate::test_support::manifest;
use std::time::Duration;

/// The controllers built into this binary, as their manifests read.
fn seeds() -> Vec<ControllerConfig> {
    config::from_controllers(metahook_seeds::controllers()).unwrap()
}

/// `configs`' hooks resolved against the registry built into this binary.
fn against_seeds(
    configs: Vec<ControllerConfig>,
    mode: HookMode,
    skip_missing: bool,
) -> Result<Vec<Prepared>, PrepareError> {
    resolve_hooks(configs, mode, skip_missing, metahook_seeds::controllers())
}

#[test]
fn in_process_hooks_come_from_the_registry_by_path() {
    let prepared = against_seeds(seeds(), HookMode::InProcess, true).unwrap();
    let names: Vec<_> = prepared.iter().map(|p| p.config.name.as_str()).collect();
    // Exactly the embedded controllers whose hooks this binary serves.
    let expected: Vec<_> = ["hello", "hikawa", "foo"]
        .into_iter()
        .filter(|n| metahook_seeds::controller(n).is_some())
        .collect();
    assert_eq!(names, expected);
    let hello = prepared.iter().find(|p| p.config.name == "hello").unwrap();
    assert!(matches!(hello.hooks.sync.endpoint, Endpoint::InProcess(_)));
    assert!(matches!(
        hello.hooks.finalize.as_ref().map(|h| &h.endpoint),
        Some(Endpoint::InProcess(_))
    ));
}

#[test]
fn an_in_process_hook_carries_its_controllers_revision_and_one_over_http_none() {
    let declared = metahook_seeds::controller("hello").unwrap();
    let version = declared.revision();
    assert!(version.is_some(), "Hello declares its crate's version");
    let in_process = against_seeds(seeds(), HookMode::InProcess, true).unwrap();
    let hello = in_process
        .iter()
        .find(|p| p.config.name == "hello")
        .unwrap();
    assert_eq!(hello.hooks.sync.revision.as_deref(), version);
    let finalize = hello.hooks.finalize.as_ref().unwrap();
    assert_eq!(finalize.revision.as_deref(), version);
    // A controller may declare none.
    let plain = metahook_core::Controller::composite::<metahook_seeds::hello::Hello>("hello")
        .sync(metahook_seeds::hello::sync)
        .finalize(metahook_seeds::hello::finalize)
        .build();
    let undeclared = resolve_hooks(seeds(), HookMode::InProcess, true, &[plain]).unwrap();
    assert_eq!(undeclared[0].hooks.sync.revision, None);
    // Over HTTP the hooks are whatever answers there: no revision unless
    // the manifest names one.
    for prepared in against_seeds(seeds(), HookMode::Http, false).unwrap() {
        assert_eq!(
            prepared.hooks.sync.revision, None,
            "{}",
            prepared.config.name
        );
    }
    let text = include_str!("../../../../chart/metacontroller/hello.yaml").replacen(
        "metadata:\n",
        "metadata:\n  annotations:\n    metahook.dev/revision: hooks-v7\n",
        1,
    );
    let annotated = vec![config::parse("hello.yaml", &text).unwrap()];
    assert_eq!(annotated[0].revision.as_deref(), Some("hooks-v7"));
    let over_http = against_seeds(annotated.clone(), HookMode::Http, false).unwrap();
    assert_eq!(
        over_http[0].hooks.sync.revision.as_deref(),
        Some("hooks-v7")
    );
    assert_eq!(
        over_http[0]
            .hooks
            .finalize
            .as_ref()
            .unwrap()
            .revision
            .as_deref(),
        Some("hooks-v7")
    );
    // In the process, the binary's declaration wins.
    let in_process = against_seeds(annotated, HookMode::InProcess, false).unwrap();
    assert_eq!(in_process[0].hooks.sync.revision.as_deref(), version);
}

#[test]
fn an_explicit_controller_without_in_process_hooks_is_an_error() {
    let text = include_str!("../../../../chart/metacontroller/hello.yaml")
        .replace("/hello/sync", "/nobody/sync");
    let configs = vec![config::parse("x.yaml", &text).unwrap()];
    let err = against_seeds(configs.clone(), HookMode::InProcess, false).unwrap_err();
    assert!(
        err.to_string()
            .contains("the sync hook at /nobody/sync is not built into this binary"),
        "{err}"
    );
    assert!(matches!(
        against_seeds(configs, HookMode::InProcess, true),
        Err(PrepareError::NothingToDrive(_))
    ));
}

#[test]
fn http_mode_calls_every_webhook_by_url() {
    let prepared = against_seeds(seeds(), HookMode::Http, false).unwrap();
    assert_eq!(prepared.len(), 3);
    let Endpoint::Http { url, timeout, .. } = &prepared[0].hooks.sync.endpoint else {
        panic!("expected HTTP")
    };
    assert_eq!(url, "http://metahook.metahook:80/hello/sync");
    assert_eq!(*timeout, Duration::from_secs(10));
}

#[test]
fn a_decorator_is_driven_in_process_only_by_a_decorators_hooks() {
    let spec = r#"  resources: [{apiVersion: v1, resource: pods}]
  hooks: {sync: {webhook: {url: "http://hooks/hello/sync"}}}
"#;
    let text = manifest("DecoratorController", "labeller", spec);
    let configs = vec![config::parse("d.yaml", &text).unwrap()];
    let err = against_seeds(configs.clone(), HookMode::InProcess, false).unwrap_err();
    // /hello/sync is a CompositeController's hook: not a decorator's.
    assert!(matches!(err, PrepareError::NotInProcess { .. }), "{err}");
    let prepared = against_seeds(configs, HookMode::Http, false).unwrap();
    assert!(matches!(
        prepared[0].hooks.sync.endpoint,
        Endpoint::Http { .. }
    ));
}

#[test]
fn a_decorator_declared_in_the_binary_is_driven_in_process() {
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    use metahook_core::{Controller, Decorate, DecoratorAnswer};
    fn label(_: &Decorate<Pod, ConfigMap>) -> DecoratorAnswer {
        DecoratorAnswer::new().label("seen", "yes")
    }
    let table = [Controller::decorator::<Pod>("labeller").sync(label).build()];
    let configs = config::from_controllers(&table).unwrap();
    assert!(configs[0].is_decorator());
    let prepared = resolve_hooks(configs, HookMode::InProcess, false, &table).unwrap();
    assert!(matches!(
        prepared[0].hooks.sync.endpoint,
        Endpoint::InProcess(_)
    ));
}

#[test]
fn a_hook_decodes_strictly_as_its_mode_or_version_says() {
    // hello's hooks are v2: strict unless the webhook says loose.
    let strict = |text: &str| {
        let configs = vec![config::parse("h.yaml", text).unwrap()];
        let prepared = against_seeds(configs, HookMode::Http, false).unwrap();
        let hooks = &prepared[0].hooks;
        (hooks.sync.strict, hooks.finalize.as_ref().map(|f| f.strict))
    };
    // The sync hook's own webhook; finalize stays as it is.
    let hello = include_str!("../../../../chart/metacontroller/hello.yaml");
    assert_eq!(strict(hello), (true, Some(true)));
    let loose = hello.replacen(
        "path: /hello/sync",
        "path: /hello/sync\n        responseUnMarshallMode: loose",
        1,
    );
    assert_eq!(strict(&loose), (false, Some(true)));
    let v1 = hello.replace("version: v2", "version: v1");
    assert_eq!(strict(&v1), (false, Some(false)));
    let v1_strict = v1.replacen(
        "path: /hello/sync",
        "path: /hello/sync\n        responseUnMarshallMode: strict",
        1,
    );
    assert_eq!(strict(&v1_strict), (true, Some(false)));
}
