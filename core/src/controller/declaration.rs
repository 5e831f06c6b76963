//! A controller, declared: its name, what it controls, its hooks, the
//! CRDs it owns, and what is wrong with the declaration.

use super::shape::Shape;
use super::status_schema::with_engine_fields;
use crate::hook::{Handler, HookKind};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use std::fmt;
use std::time::Duration;

/// The longest name of a controller with a finalize hook: a finalizer's
/// part after the slash is at most 63, and `compositecontroller-` (as
/// long as `decoratorcontroller-`) comes first.
const MAX_NAME_WITH_FINALIZER: usize = 63 - "compositecontroller-".len();

/// One controller, ready to be served, driven and rendered.
#[derive(Clone)]
pub struct Controller {
    pub(super) name: String,
    pub(super) shape: Shape,
    pub(super) hooks: Vec<(HookKind, Handler)>,
    pub(super) crds: Vec<Crd>,
    /// The parent's other versions, when it has some.
    pub(super) versions: Option<Versions>,
    pub(super) resync_period: Option<Duration>,
    pub(super) hook_timeout: Duration,
    /// The hooks' revision, when declared.
    pub(super) revision: Option<String>,
    /// Mistakes in the declaration, reported by [`Controller::check`].
    pub(super) problems: Vec<String>,
}

impl fmt::Debug for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hooks: Vec<_> = self.hooks.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("shape", &self.shape)
            .field("hooks", &hooks)
            .finish()
    }
}

/// A CRD a controller owns: made, or made when asked (a schema takes a
/// moment to generate, and serving a hook never needs it).
#[derive(Clone)]
pub(super) enum Crd {
    Made(Box<CustomResourceDefinition>),
    Of(fn() -> CustomResourceDefinition),
    /// The parent's: with the status fields the engine writes.
    Parent(fn() -> CustomResourceDefinition),
}

/// The versions of a parent served beside the hub's
/// ([`Composite::version`](crate::Composite::version)), for its CRD.
#[derive(Clone)]
pub(super) struct Versions {
    /// The hub's version (`v1alpha1`): the one stored.
    pub(super) hub: String,
    /// Each other version's CRD, in the order declared.
    pub(super) others: Vec<fn() -> CustomResourceDefinition>,
}

/// What is wrong with a controller's declaration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("controller {name:?}: {}", problems.join("; "))]
pub struct DeclarationError {
    /// The controller's name.
    pub name: String,
    /// Each problem, in a sentence: `it has no sync hook`.
    pub problems: Vec<String>,
}

impl Controller {
    pub(super) fn new(name: String, shape: Shape) -> Self {
        Controller {
            name,
            shape,
            hooks: Vec::new(),
            crds: Vec::new(),
            versions: None,
            resync_period: None,
            hook_timeout: Duration::from_secs(10),
            revision: None,
            problems: Vec::new(),
        }
    }

    /// Its name: the first segment of its hooks' paths (`/{name}/sync`)
    /// and its manifest's `metadata.name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The revision of its hooks, when it declares one
    /// ([`Composite::revision`](crate::Composite::revision)).
    pub fn revision(&self) -> Option<&str> {
        self.revision.as_deref()
    }

    /// What it controls: a parent and its child types, or a decorated type
    /// and its attachment types.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The hook of this kind, if the controller has one.
    pub fn hook(&self, kind: HookKind) -> Option<Handler> {
        self.hooks
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, handler)| handler.clone())
    }

    /// The finalizer Metacontroller (and the driver) puts on its parents
    /// when it has a finalize hook: `metacontroller.io/compositecontroller-<name>`
    /// (`decoratorcontroller-` for a decorator).
    pub fn finalizer(&self) -> Option<String> {
        let prefix = match self.shape {
            Shape::Composite { .. } => "compositecontroller",
            Shape::Decorator { .. } => "decoratorcontroller",
        };
        self.hook(HookKind::Finalize)
            .map(|_| format!("metacontroller.io/{prefix}-{}", self.name))
    }

    /// The kinds of hook it has, in the order they were declared.
    pub fn hook_kinds(&self) -> impl Iterator<Item = HookKind> + '_ {
        self.hooks.iter().map(|(kind, _)| *kind)
    }

    /// The CRDs it owns (its parent's, then those declared), each once.
    /// The parent's status schema has the fields the engine writes
    /// (`observedGeneration`) whether its status type declares them or not.
    /// The parent's CRD has only the hub's version, whatever other versions
    /// are declared: those need the conversion webhook
    /// ([`Controller::crds_with_conversion`]).
    pub fn crds(&self) -> Vec<CustomResourceDefinition> {
        let made = self.crds_with_parent(|make| Ok::<_, std::convert::Infallible>(make()));
        match made {
            Ok(crds) => crds,
            Err(never) => match never {},
        }
    }

    /// [`Controller::crds`], the parent's CRD made by `parent`.
    pub(super) fn crds_with_parent<E>(
        &self,
        parent: impl Fn(fn() -> CustomResourceDefinition) -> Result<CustomResourceDefinition, E>,
    ) -> Result<Vec<CustomResourceDefinition>, E> {
        let mut crds: Vec<CustomResourceDefinition> = Vec::new();
        for crd in &self.crds {
            let crd = match crd {
                Crd::Made(crd) => (**crd).clone(),
                Crd::Of(make) => make(),
                Crd::Parent(make) => with_engine_fields(parent(*make)?),
            };
            if !crds.iter().any(|c| c.metadata.name == crd.metadata.name) {
                crds.push(crd);
            }
        }
        Ok(crds)
    }

    /// Whether the declaration can work: a sync hook, each type a hook
    /// reads among those declared, a name fit for a URL path.
    pub fn check(&self) -> Result<(), DeclarationError> {
        let mut problems = self.problems.clone();
        if !self.hooks.iter().any(|(k, _)| *k == HookKind::Sync) {
            problems.push("it has no sync hook".to_owned());
        }
        let fit = !self.name.is_empty()
            && self.name.len() <= 63
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !self.name.starts_with('-')
            && !self.name.ends_with('-');
        if !fit {
            problems.push(
                "its name must be a DNS label (lowercase letters, digits and '-', at most 63)"
                    .to_owned(),
            );
        }
        // A finalizer's part after the slash is at most 63 characters.
        if let Some(finalizer) = self.finalizer().filter(|_| fit)
            && self.name.len() > MAX_NAME_WITH_FINALIZER
        {
            problems.push(format!(
                "with a finalize hook its name must be at most {MAX_NAME_WITH_FINALIZER} characters: the finalizer {finalizer} would be longer than a Kubernetes name allows"
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(DeclarationError {
                name: self.name.clone(),
                problems,
            })
        }
    }

    pub(super) fn add_hook(&mut self, kind: HookKind, handler: Handler) {
        if self.hooks.iter().any(|(k, _)| *k == kind) {
            self.problems
                .push(format!("its {kind} hook is declared twice"));
        }
        self.hooks.push((kind, handler));
    }
}
