//! `plan --live`: what the driver would do to each parent in the cluster
//! now, with nothing written. Each controller's parents are listed in
//! pages; each is planned as one reconcile of the driver plans it
//! (`pass.rs`), with the children of its namespace (`window.rs`) and its
//! related objects (`related.rs`) read through a client that cannot write
//! ([`crate::client::read_only`]), and its hooks called as the driver
//! calls them. A page of parents and one namespace's children are held
//! at a time: memory does not grow with the number of parents.
//!
//! A CompositeController, its children rolled or not (a rolling
//! controller's ControllerRevisions are read with the children, and its
//! hooks called once per revision, as the driver calls them), or a
//! DecoratorController: each of its resources planned as the driver
//! drives it, one controller per resource (`decorate.rs`).

mod context;
mod decorate;
mod error;
mod parent_plan;
mod pass;
mod related;
mod window;

pub use error::{LiveError, PassError};
pub use parent_plan::ParentPlan;

use crate::controller::cache::{CachedObject, SharedType};
use crate::hook::call::HookCaller;
use crate::start::prepare::Prepared;
use crate::start::resolve::resolve_controller;
use crate::start::run::DriveError;
use context::{Reader, Resolved};
use kube::Client;
use kube::api::{Api, ListParams};
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

/// Plans the parents of the controllers it was given, through a client.
pub struct LivePlanner {
    reader: Reader,
    controllers: Vec<Resolved>,
    /// A controller left out, and why.
    skipped: Vec<String>,
}

impl LivePlanner {
    /// Resolves the types of `prepared` through `client` (one discovery
    /// read per type); `caller` calls their hooks. A decorator of several
    /// resources is planned as the driver runs it, one controller per
    /// resource. A controller whose types the API server does not serve
    /// (its ControllerRevisions', when its children roll) is left out
    /// ([`Self::skipped`]).
    pub async fn new(
        client: Client,
        prepared: Vec<Prepared>,
        caller: HookCaller,
    ) -> Result<Self, LiveError> {
        let mut controllers = Vec::new();
        let mut skipped = Vec::new();
        // A decorator of several resources: one controller per resource.
        let prepared = prepared.into_iter().flat_map(Prepared::per_resource);
        for p in prepared {
            // A type the API server does not serve has no objects: its
            // controller has nothing to plan (the driver would wait for it).
            match resolve_controller(&client, p).await {
                Ok((driven, hooks)) => controllers.push(Resolved { driven, hooks }),
                Err(DriveError::Discovery {
                    controller,
                    what,
                    source,
                }) if source.not_served() => skipped.push(format!(
                    "{controller}: {what} is not served ({source}); the driver would wait for it"
                )),
                Err(err) => return Err(LiveError::Resolve(Box::new(err))),
            }
        }
        Ok(LivePlanner {
            reader: Reader {
                client,
                caller,
                related: Mutex::default(),
            },
            controllers,
            skipped,
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
                    Api::namespaced_with(self.reader.client.clone(), ns, &shared)
                }
                _ => Api::all_with(self.reader.client.clone(), &shared),
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
                        .hold(&self.reader.client, &resolved.driven, namespace)
                        .await?;
                    let planned = pass::plan(&self.reader, resolved, &window, &parent).await;
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
