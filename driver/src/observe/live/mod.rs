//! `plan --live`: what the driver would do to each parent in the cluster
//! now, with nothing written. Each controller's parents are listed in
//! pages; each is planned as one reconcile of the driver plans it
//! (`pass.rs`), with the children of its namespace (`window.rs`) and its
//! related objects (`related.rs`) read through a client that cannot write
//! ([`crate::client::read_only`]), and its hooks called as the driver
//! calls them. A page of parents and one namespace's children are held
//! at a time: memory does not grow with the number of parents.
//!
//! A CompositeController whose children do not roll: a rolling update's
//! next move depends on ControllerRevisions and a DecoratorController's
//! answer on a plan of its own, which this does not read yet.

mod pass;
mod related;
mod window;

pub use pass::PassError;

use crate::config::UpdateStrategyExt;
use crate::controller::cache::{CachedObject, SharedType};
use crate::controller::context::HookTargets;
use crate::decide::model::{Driven, ResolvedType};
use crate::hook::call::HookCaller;
use crate::observe::records::Step;
use crate::start::prepare::Prepared;
use crate::start::resolve::resolve_controller;
use crate::start::run::DriveError;
use kube::Client;
use kube::api::{Api, ListParams};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Mutex;
use window::{PAGE_SIZE, Window};

/// The client budget a plan takes unless told otherwise: Metacontroller's
/// client-go defaults, so that a plan of a big cluster is paced as a
/// controller's own client would be.
pub mod defaults {
    /// Requests a second, on average.
    pub const QPS: f64 = 5.0;
    /// Requests at once before `QPS` paces them.
    pub const BURST: std::num::NonZeroU32 = crate::start::run::defaults::KUBE_BURST;
}

/// Why the plan stopped.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// A controller's types could not be resolved through discovery.
    #[error("resolving the controller's types failed")]
    Resolve(#[source] Box<DriveError>),
    /// A list of parents, children or related objects failed.
    #[error("listing {resource} failed")]
    List {
        /// The list's path.
        resource: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// A parent's plan could not be handed on (its output failed).
    #[error("writing the plan failed")]
    Output(#[source] std::io::Error),
}

/// Which parents are planned.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Only parents in this namespace (a namespaced parent type); `None`:
    /// every namespace.
    pub namespace: Option<String>,
    /// Only parents this label selector selects.
    pub selector: Option<String>,
    /// Only the parent of this name.
    pub name: Option<String>,
}

/// What the driver would do to one parent.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ParentPlan {
    /// The controller.
    pub controller: String,
    /// The parent's kind.
    pub kind: String,
    /// The parent's namespace (none for a cluster-scoped parent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The parent's name.
    pub name: String,
    /// The hook the reconcile calls (`sync` or `finalize`); none when the
    /// parent is not this controller's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook: Option<&'static str>,
    /// Every operation, in order: what a reconcile record lists; a status
    /// write's `changed` holds the status fields it changes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
    /// Why the reconcile would fail (the hook refused, its answer is not
    /// one the driver takes), after `steps`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

impl ParentPlan {
    fn of(ctl: &Driven, parent: &CachedObject) -> Self {
        ParentPlan {
            controller: ctl.config.name.clone(),
            kind: ctl.parent.api.kind.clone(),
            namespace: parent.metadata.namespace.clone(),
            name: parent.metadata.name.clone().unwrap_or_default(),
            hook: None,
            steps: Vec::new(),
            failure: None,
        }
    }

    /// Whether any step changes the cluster: all but `verifyParent`, a
    /// read.
    pub fn changes(&self) -> bool {
        self.steps.iter().any(|s| s.op != "verifyParent")
    }
}

/// One controller, its types resolved.
struct Resolved {
    driven: Driven,
    hooks: HookTargets,
}

/// Plans the parents of the controllers it was given, through a client.
pub struct LivePlanner {
    client: Client,
    caller: HookCaller,
    controllers: Vec<Resolved>,
    /// A controller left out, and why.
    skipped: Vec<String>,
    /// Related types resolved, by (apiVersion, resource).
    related: Mutex<HashMap<(String, String), ResolvedType>>,
}

impl LivePlanner {
    /// Resolves the types of `prepared` through `client` (one discovery
    /// read per type); `caller` calls their hooks. A decorator, or a
    /// controller whose children roll, is left out ([`Self::skipped`]).
    pub async fn new(
        client: Client,
        prepared: Vec<Prepared>,
        caller: HookCaller,
    ) -> Result<Self, LiveError> {
        let mut controllers = Vec::new();
        let mut skipped = Vec::new();
        for p in prepared {
            if p.config.is_decorator() {
                skipped.push(format!(
                    "{}: a DecoratorController (not planned yet)",
                    p.config.name
                ));
                continue;
            }
            if p.config
                .children
                .iter()
                .any(|c| c.update_strategy.is_rolling())
            {
                skipped.push(format!(
                    "{}: its children roll (which moves next depends on ControllerRevisions, not planned yet)",
                    p.config.name
                ));
                continue;
            }
            let (driven, hooks) = resolve_controller(&client, p)
                .await
                .map_err(|err| LiveError::Resolve(Box::new(err)))?;
            controllers.push(Resolved { driven, hooks });
        }
        Ok(LivePlanner {
            client,
            caller,
            controllers,
            skipped,
            related: Mutex::default(),
        })
    }

    /// The controllers left out, each with why.
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// Plans every parent of every controller in `scope`, one at a time
    /// in the order the API server lists them, handing each plan to
    /// `each` as it is made.
    pub async fn plan(
        &self,
        scope: &Scope,
        mut each: impl FnMut(ParentPlan) -> std::io::Result<()>,
    ) -> Result<(), LiveError> {
        for resolved in &self.controllers {
            let parent_type = &resolved.driven.parent;
            let shared = SharedType::of(&parent_type.api);
            let api: Api<CachedObject> = match &scope.namespace {
                Some(ns) if parent_type.namespaced => {
                    Api::namespaced_with(self.client.clone(), ns, &shared)
                }
                _ => Api::all_with(self.client.clone(), &shared),
            };
            let mut params = ListParams::default().limit(PAGE_SIZE);
            if let Some(selector) = &scope.selector {
                params = params.labels(selector);
            }
            if let Some(name) = &scope.name {
                params = params.fields(&format!("metadata.name={name}"));
            }
            let mut window = Window::empty();
            loop {
                let page = api.list(&params).await.map_err(|source| LiveError::List {
                    resource: api.resource_url().to_owned(),
                    source,
                })?;
                for mut parent in page.items {
                    parent.set_type_if_missing(&parent_type.api.api_version, &parent_type.api.kind);
                    let namespace = parent
                        .metadata
                        .namespace
                        .as_deref()
                        .filter(|_| parent_type.namespaced);
                    window
                        .hold(&self.client, &resolved.driven, namespace)
                        .await?;
                    let planned = pass::plan(self, resolved, &window, &parent).await;
                    each(planned).map_err(LiveError::Output)?;
                }
                match page.metadata.continue_ {
                    Some(token) if !token.is_empty() => params = params.continue_token(&token),
                    _ => break,
                }
            }
        }
        Ok(())
    }
}
