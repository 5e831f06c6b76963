//! `chart --out-dir DIR`: the Helm chart that installs the controllers —
//! metahook's own chart (`metahook/chart/`: both modes, TLS and mutual TLS
//! with a generated or cert-manager CA, shards, NetworkPolicy,
//! ServiceMonitor, alerts and a Grafana dashboard (`monitoring/`),
//! PodDisruptionBudget, the aggregated API, a schema for
//! every value) with the controllers' CRDs (`crds/`; those of more than one
//! version in `conversion/`, templated: their conversion webhook names the
//! release's Service), their
//! CompositeController manifests (`metacontroller/`), their admission
//! webhooks (`admission/`, installed with `admission.enabled`), one switch each in
//! `values.yaml`, and the chart's name, description and image.
//!
//! metahook's own chart, the repository's `chart/`, is this output for
//! Hello, Hikawa and Foo (`tests/chart_generated.rs` fails when they
//! differ): one chart to maintain.

#[cfg(feature = "runtime")]
use crate::cli::ChartArgs;
use crate::crds::CrdsError;
use crate::ordered::Ordered;
use metahook_core::{Controller, Webhooks};

/// The chart's templates and top-level files, with `@@…@@` where a chart
/// of its own differs.
const TEMPLATE_FILES: &[(&str, &str)] = &[
    ("Chart.yaml", include_str!("../chart/Chart.yaml")),
    ("values.yaml", include_str!("../chart/values.yaml")),
    (
        "values.schema.json",
        include_str!("../chart/values.schema.json"),
    ),
    (
        "templates/NOTES.txt",
        include_str!("../chart/templates/NOTES.txt"),
    ),
    (
        "templates/_helpers.tpl",
        include_str!("../chart/templates/_helpers.tpl"),
    ),
    (
        "templates/admission-webhooks.yaml",
        include_str!("../chart/templates/admission-webhooks.yaml"),
    ),
    (
        "templates/crds-with-conversion.yaml",
        include_str!("../chart/templates/crds-with-conversion.yaml"),
    ),
    (
        "templates/aggregated-api-cert-manager.yaml",
        include_str!("../chart/templates/aggregated-api-cert-manager.yaml"),
    ),
    (
        "templates/aggregated-api-rbac.yaml",
        include_str!("../chart/templates/aggregated-api-rbac.yaml"),
    ),
    (
        "templates/aggregated-api.yaml",
        include_str!("../chart/templates/aggregated-api.yaml"),
    ),
    (
        "templates/compositecontrollers.yaml",
        include_str!("../chart/templates/compositecontrollers.yaml"),
    ),
    (
        "templates/configmap.yaml",
        include_str!("../chart/templates/configmap.yaml"),
    ),
    (
        "templates/deployment.yaml",
        include_str!("../chart/templates/deployment.yaml"),
    ),
    (
        "templates/hooks-tls-cert-manager.yaml",
        include_str!("../chart/templates/hooks-tls-cert-manager.yaml"),
    ),
    (
        "templates/hooks-tls.yaml",
        include_str!("../chart/templates/hooks-tls.yaml"),
    ),
    (
        "templates/lease.yaml",
        include_str!("../chart/templates/lease.yaml"),
    ),
    (
        "templates/networkpolicy.yaml",
        include_str!("../chart/templates/networkpolicy.yaml"),
    ),
    (
        "templates/poddisruptionbudget.yaml",
        include_str!("../chart/templates/poddisruptionbudget.yaml"),
    ),
    (
        "templates/rbac.yaml",
        include_str!("../chart/templates/rbac.yaml"),
    ),
    (
        "templates/service.yaml",
        include_str!("../chart/templates/service.yaml"),
    ),
    (
        "templates/serviceaccount.yaml",
        include_str!("../chart/templates/serviceaccount.yaml"),
    ),
    (
        "templates/servicemonitor.yaml",
        include_str!("../chart/templates/servicemonitor.yaml"),
    ),
    (
        "templates/prometheusrule.yaml",
        include_str!("../chart/templates/prometheusrule.yaml"),
    ),
    (
        "templates/grafana-dashboard.yaml",
        include_str!("../chart/templates/grafana-dashboard.yaml"),
    ),
    (
        "monitoring/alerts.yaml",
        include_str!("../chart/monitoring/alerts.yaml"),
    ),
    (
        "monitoring/dashboard.json",
        include_str!("../chart/monitoring/dashboard.json"),
    ),
];

/// What names a chart of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartSettings {
    /// The chart's name (a DNS label, at most 53 characters: Helm adds
    /// suffixes to it in object names).
    pub name: String,
    /// One paragraph: what it installs.
    pub description: String,
    /// The chart's version (SemVer).
    pub version: String,
    /// The image tag it deploys unless `image.tag` says otherwise.
    pub app_version: String,
    /// The image repository (`image.repository`).
    pub image: String,
    /// Where the project lives, for Chart.yaml (home, sources, keywords,
    /// license annotation); none for a chart that says nothing of it.
    pub project: Option<Project>,
}

/// A project's page, keywords and license, for Chart.yaml.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// Its home page, also the chart's source.
    pub home: String,
    /// Artifact Hub's keywords.
    pub keywords: Vec<String>,
    /// An SPDX license identifier.
    pub license: String,
}

/// A chart value that cannot work, or a write that failed.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// The chart's name cannot name objects.
    #[error(
        "the chart's name {0:?} must be a DNS label of at most 53 characters (lowercase letters, digits, '-'): Helm names objects after it"
    )]
    Name(String),
    /// A version is not SemVer, as Helm requires.
    #[error("the chart's {field} {value:?} is not a SemVer version (e.g. 0.1.0)")]
    Version {
        /// `version` or `appVersion`.
        field: &'static str,
        /// The version given.
        value: String,
    },
    /// The image repository is not one.
    #[error(
        "the image repository {0:?} is not an image reference (no spaces, no tag: the tag is appVersion)"
    )]
    Image(String),
    /// No controller was given.
    #[error("there is no controller to install")]
    NoController,
    /// A CRD could not be written.
    #[error(transparent)]
    Crds(#[from] CrdsError),
    /// The chart's directory could not be written or read.
    #[error(transparent)]
    Dir(#[from] DirError),
    /// A controller's manifest could not be written as YAML.
    #[error("encoding the {0} controller's manifest failed")]
    Manifest(String, #[source] serde_saphyr::SerializeError),
}

/// A DNS label (RFC 1123) of at most `max` bytes: what Kubernetes names
/// namespaces and Services with, and Helm releases and charts.
pub(crate) fn dns_label(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

impl ChartSettings {
    /// Refuses a value the chart cannot work with, naming it.
    pub fn check(&self) -> Result<(), ChartError> {
        if !dns_label(&self.name, 53) {
            return Err(ChartError::Name(self.name.clone()));
        }
        for (field, value) in [
            ("version", &self.version),
            ("appVersion", &self.app_version),
        ] {
            if !semver(value) {
                return Err(ChartError::Version {
                    field,
                    value: value.clone(),
                });
            }
        }
        let image_ok = !self.image.is_empty()
            && !self.image.contains(char::is_whitespace)
            && !self
                .image
                .rsplit('/')
                .next()
                .is_some_and(|last| last.contains(':') || last.contains('@'));
        if !image_ok {
            return Err(ChartError::Image(self.image.clone()));
        }
        Ok(())
    }
}

/// `MAJOR.MINOR.PATCH`, with an optional `-pre` and `+build`.
fn semver(text: &str) -> bool {
    let core = text.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The chart's version, and its app version, unless they are given.
pub const DEFAULT_VERSION: &str = "0.1.0";

impl ChartSettings {
    /// The chart `chart` writes for `controllers` when given only its
    /// name: version [`DEFAULT_VERSION`], image `localhost/NAME` (as
    /// `scripts/image.sh` of a new crate tags it), a description naming
    /// the controllers.
    pub fn named(name: &str, controllers: &[Controller]) -> ChartSettings {
        let names: Vec<&str> = controllers.iter().map(Controller::name).collect();
        ChartSettings {
            name: name.to_owned(),
            description: format!(
                "The {} controller{} of {name}: Kubernetes operators as pure functions, \
                 with Metacontroller or metahook's bundled driver.",
                names.join(", "),
                if names.len() == 1 { "" } else { "s" },
            ),
            version: DEFAULT_VERSION.to_owned(),
            app_version: DEFAULT_VERSION.to_owned(),
            image: format!("localhost/{name}"),
            project: None,
        }
    }
}

/// `chart`: the chart for `controllers`, written to `--out-dir`; what is
/// not given is named after `program`.
#[cfg(feature = "runtime")]
pub fn run(args: &ChartArgs, program: &str, controllers: &[Controller]) -> Result<(), ChartError> {
    let name = args.name.clone().unwrap_or_else(|| program.to_owned());
    let named = ChartSettings::named(&name, controllers);
    let settings = ChartSettings {
        description: args.description.clone().unwrap_or(named.description),
        version: args.version.clone(),
        app_version: args
            .app_version
            .clone()
            .unwrap_or_else(|| args.version.clone()),
        image: args.image.clone().unwrap_or(named.image),
        ..named
    };
    let files = files(controllers, &settings)?;
    write(&args.out_dir, &files)?;
    eprintln!(
        "wrote the {} chart to {} ({} files)",
        settings.name,
        args.out_dir.display(),
        files.len()
    );
    Ok(())
}

/// Every file of the chart for `controllers`, by its path in the chart.
pub fn files(
    controllers: &[Controller],
    settings: &ChartSettings,
) -> Result<Vec<(String, String)>, ChartError> {
    settings.check()?;
    if controllers.is_empty() {
        return Err(ChartError::NoController);
    }
    let names: Vec<&str> = controllers.iter().map(Controller::name).collect();
    let mut out = Vec::new();
    for (path, template) in TEMPLATE_FILES {
        let text = match *path {
            "Chart.yaml" => chart_yaml(template, settings),
            "values.yaml" => template
                .replace("@@NAME@@", &settings.name)
                .replace("@@IMAGE@@", &settings.image)
                .replace(
                    "@@CONTROLLERS@@\n",
                    &names
                        .iter()
                        .map(|n| format!("  {n}:\n    enabled: true\n"))
                        .collect::<String>(),
                ),
            "values.schema.json" => template
                .replace(
                    "@@CONTROLLER_NAMES@@",
                    &format!(
                        "[{}]",
                        names
                            .iter()
                            .map(|n| format!("\"{n}\""))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
                .replace(
                    "@@CONTROLLER_PROPERTIES@@",
                    &names
                        .iter()
                        .map(|n| {
                            format!("        \"{n}\": {{\"$ref\": \"#/definitions/controller\"}}")
                        })
                        .collect::<Vec<_>>()
                        .join(",\n"),
                ),
            _ => (*template).to_owned(),
        };
        out.push(((*path).to_owned(), text));
    }
    let converted = crate::crds::conversion_files(controllers)?;
    for (file, yaml) in crate::crds::files(controllers)? {
        if !converted
            .iter()
            .any(|(path, _)| *path == format!("conversion/{file}"))
        {
            out.push((format!("crds/{file}"), yaml));
        }
    }
    out.extend(converted);
    for controller in controllers {
        let configs = controller.webhook_configurations(&Webhooks::default());
        if !configs.is_empty() {
            let mut yaml = format!(
                "# The {} controller's admission webhooks, as its declaration writes them; do
# not edit. The chart points them at the release's Service with its CA
# (admission.enabled).
",
                controller.name()
            );
            for config in &configs {
                let doc = serde_saphyr::to_string(&Ordered(config))
                    .map_err(|e| ChartError::Manifest(controller.name().to_owned(), e))?;
                yaml.push_str("---\n");
                yaml.push_str(&doc);
            }
            out.push((format!("admission/{}.yaml", controller.name()), yaml));
        }
        let manifest = controller.manifest(&Webhooks::default());
        let yaml = serde_saphyr::to_string(&Ordered(&manifest))
            .map_err(|e| ChartError::Manifest(controller.name().to_owned(), e))?;
        out.push((
            format!("metacontroller/{}.yaml", controller.name()),
            format!(
                "# The {} controller, as its declaration writes it; do not edit. The chart\n# points its webhooks at the release's Service.\n{yaml}",
                controller.name()
            ),
        ));
    }
    Ok(out)
}

/// Chart.yaml: the name, the description folded at 80 columns, the
/// versions, the project.
fn chart_yaml(template: &str, settings: &ChartSettings) -> String {
    let mut lines = Vec::new();
    let mut line = String::from(" ");
    for word in settings.description.split_whitespace() {
        if line.len() + 1 + word.len() > 80 && line.len() > 1 {
            lines.push(std::mem::replace(&mut line, String::from(" ")));
        }
        line.push(' ');
        line.push_str(word);
    }
    lines.push(line);
    let project = match &settings.project {
        None => String::new(),
        Some(p) => {
            let keywords: String = p.keywords.iter().map(|k| format!("  - {k}\n")).collect();
            format!(
                "home: {home}\nsources:\n  - {home}\nkeywords:\n{keywords}annotations:\n  artifacthub.io/license: {license}\n",
                home = p.home,
                license = p.license
            )
        }
    };
    template
        .replace("@@NAME@@", &settings.name)
        .replace("@@DESCRIPTION@@", &lines.join("\n"))
        .replace("@@VERSION@@", &settings.version)
        .replace("@@APP_VERSION@@", &settings.app_version)
        .replace("@@PROJECT@@", &project)
}

mod dir;

pub use dir::{DirCheck, DirError, check_dir, write};

#[cfg(test)]
mod tests;
