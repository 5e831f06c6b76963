//! Where the manifests come from: built in, or `--controllers DIR`.
//!
//! Each file is parsed and checked on its own; across files, a controller's
//! name must be unique.

use super::check::Check;
use super::{ConfigError, ControllerConfig, manifest};
use metahook_core::{Controller, Webhooks};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The manifests of controllers declared in Rust
/// ([`metahook_core::Controller::manifest`]), validated as any file is.
pub fn from_controllers(controllers: &[Controller]) -> Result<Vec<ControllerConfig>, ConfigError> {
    collect(controllers.iter().map(|c| {
        (
            format!("the {} controller's declaration", c.name()),
            c.manifest(&Webhooks::default()).to_string(),
        )
    }))
}

/// Every `*.yaml`/`*.yml` file in `dir` (not recursive), in name order.
pub fn from_dir(dir: &Path) -> Result<Vec<ControllerConfig>, ConfigError> {
    let read_err = |source| ConfigError::Read {
        path: dir.to_owned(),
        source,
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read_err)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .is_some_and(|ext| ext == "yaml" || ext == "yml")
        })
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(ConfigError::Empty {
            dir: dir.to_owned(),
        });
    }
    let mut files = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        files.push((path.display().to_string(), text));
    }
    collect(files.into_iter())
}

fn collect(
    files: impl Iterator<Item = (String, String)>,
) -> Result<Vec<ControllerConfig>, ConfigError> {
    let mut out: Vec<ControllerConfig> = Vec::new();
    for (source_name, text) in files {
        let config = parse(&source_name, &text)?;
        if let Some(first) = out.iter().find(|c| c.name == config.name) {
            return Err(ConfigError::Duplicate {
                source_name,
                name: config.name,
                first: first.source.clone(),
            });
        }
        out.push(config);
    }
    Ok(out)
}

/// Parses and validates one CompositeController or DecoratorController
/// document; `source_name`
/// says where it came from in messages.
///
/// # Example
///
/// ```
/// use metahook_planner::config::{self, UpdateStrategy};
/// use std::time::Duration;
///
/// let yaml = r#"
/// apiVersion: metacontroller.k8s.io/v1alpha1
/// kind: CompositeController
/// metadata: {name: demo}
/// spec:
///   parentResource: {apiVersion: example.com/v1, resource: things}
///   childResources:
///     - {apiVersion: v1, resource: configmaps, updateStrategy: {method: InPlace}}
///   hooks:
///     sync:
///       webhook: {url: "http://hooks.example:8080/demo/sync", timeout: 1m30s}
/// "#;
/// let demo = config::parse("demo.yaml", yaml)?;
/// assert_eq!(demo.children[0].update_strategy, UpdateStrategy::InPlace);
/// // The path names the hook in metahook's own service.
/// assert_eq!(demo.hooks.sync.webhook.path, "/demo/sync");
/// assert_eq!(demo.hooks.sync.webhook.timeout, Duration::from_secs(90));
///
/// // A field outside the subset is refused by its path.
/// let typo = yaml.replace("timeout: 1m30s", "timeout: 1m30s, retries: 3");
/// let refused = config::parse("demo.yaml", &typo).unwrap_err();
/// assert!(refused.to_string().starts_with(
///     "demo.yaml: `spec.hooks.sync.webhook.retries` is not supported"
/// ));
/// # Ok::<(), config::ConfigError>(())
/// ```
pub fn parse(source_name: &str, text: &str) -> Result<ControllerConfig, ConfigError> {
    let object: Value = serde_saphyr::from_str(text).map_err(|source| ConfigError::Yaml {
        source_name: source_name.to_owned(),
        source: Box::new(source),
    })?;
    let check = Check { source_name };
    let invalid = |e: serde_path_to_error::Error<serde_json::Error>| {
        check.invalid(&e.path().to_string(), e.into_inner().to_string())
    };
    if object.get("kind").and_then(Value::as_str) == Some("DecoratorController") {
        let document: manifest::Document<manifest::DecoratorSpec> =
            serde_path_to_error::deserialize(&object).map_err(invalid)?;
        return check.manifest(document, "DecoratorController", object, |spec| {
            check.decorator(spec)
        });
    }
    let document: manifest::Document =
        serde_path_to_error::deserialize(&object).map_err(invalid)?;
    check.manifest(document, "CompositeController", object, |spec| {
        check.composite(spec)
    })
}
