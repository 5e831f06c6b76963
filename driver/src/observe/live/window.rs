//! The children one namespace holds, per child type: what a parent of
//! that namespace may claim, and which names are taken — the driver's
//! caches (`controller/cache/owners.rs`), for one namespace at a time.
//!
//! A cluster-wide list returns a type's objects ordered by namespace, so
//! parents of one namespace arrive together: the window lists the next
//! namespace's children when a parent of another arrives, and drops the
//! last. Memory is one namespace's children; requests, one list (in
//! pages) per child type and namespace. A controller whose children roll
//! has its parents' ControllerRevisions listed the same way, one list a
//! namespace (the driver's revision cache, `reconcile/rolling.rs`).

use super::error::LiveError;
use crate::controller::cache::{CachedObject, SharedType};
use crate::decide::model::{Driven, ResolvedType, controller_of};
use crate::decide::plan::Existing;
use crate::decide::revisions::revision_type;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Objects per LIST page, as the driver's caches page
/// (`controller/cache/initial_list.rs`).
pub(super) const PAGE_SIZE: u32 = 100;

/// One child type's objects in the window's namespace.
#[derive(Default)]
struct Objects {
    /// Held by a controller, by its UID.
    controlled: HashMap<String, Vec<Arc<CachedObject>>>,
    /// Held by none: what a parent may adopt.
    orphans: Vec<Arc<CachedObject>>,
    /// Every object's namespace and name.
    names: HashSet<(Option<String>, String)>,
}

/// The children of one namespace (`None`: every namespace, for a
/// cluster-scoped parent), per child type in the controller's order.
pub(super) struct Window {
    namespace: Option<Option<String>>,
    types: Vec<Objects>,
    /// The ControllerRevisions, when a child type rolls.
    revisions: Objects,
}

impl Window {
    pub(super) fn empty() -> Self {
        Window {
            namespace: None,
            types: Vec::new(),
            revisions: Objects::default(),
        }
    }

    /// Holds `namespace`'s children of `ctl`'s child types, listing them
    /// unless it holds them already.
    pub(super) async fn hold(
        &mut self,
        client: &Client,
        ctl: &Driven,
        namespace: Option<&str>,
    ) -> Result<(), LiveError> {
        let wanted = namespace.map(str::to_owned);
        if self.namespace.as_ref() == Some(&wanted) {
            return Ok(());
        }
        // The last namespace's objects go before the next are read.
        self.types.clear();
        self.revisions = Objects::default();
        self.namespace = None;
        for child in &ctl.children {
            self.types
                .push(Objects::list(client, &child.resource, namespace).await?);
        }
        if ctl.rolls() {
            self.revisions = Objects::list(client, &revision_type(), namespace).await?;
        }
        self.namespace = Some(wanted);
        Ok(())
    }

    /// Per child type, the objects the parent `uid` holds and the orphans:
    /// what the driver's caches hand a reconcile
    /// (`TypeCache::candidates`).
    pub(super) fn candidates(
        &self,
        uid: &str,
    ) -> Result<Vec<Vec<Arc<DynamicObject>>>, serde_json::Error> {
        self.types.iter().map(|o| o.candidates(uid)).collect()
    }

    /// The ControllerRevisions the parent `uid` holds and the orphans:
    /// what the driver's revision cache hands a rolling reconcile.
    pub(super) fn revisions(
        &self,
        uid: &str,
    ) -> Result<Vec<Arc<DynamicObject>>, serde_json::Error> {
        self.revisions.candidates(uid)
    }
}

impl Objects {
    /// `resource`'s objects in `namespace` (every namespace for `None` or
    /// a cluster-scoped type).
    async fn list(
        client: &Client,
        resource: &ResolvedType,
        namespace: Option<&str>,
    ) -> Result<Self, LiveError> {
        let shared = SharedType::of(&resource.api);
        let api: Api<CachedObject> = match namespace {
            Some(ns) if resource.namespaced => Api::namespaced_with(client.clone(), ns, &shared),
            _ => Api::all_with(client.clone(), &shared),
        };
        let mut objects = Objects::default();
        for mut obj in list_all(&api, ListParams::default()).await? {
            obj.set_type_if_missing(&resource.api.api_version, &resource.api.kind);
            let key = (
                obj.metadata.namespace.clone(),
                obj.metadata.name.clone().unwrap_or_default(),
            );
            objects.names.insert(key);
            let obj = Arc::new(obj);
            match controller_of(obj.as_ref()).map(|o| o.uid.clone()) {
                Some(uid) => objects.controlled.entry(uid).or_default().push(obj),
                None => objects.orphans.push(obj),
            }
        }
        Ok(objects)
    }

    /// Those the parent `uid` holds, then the orphans.
    fn candidates(&self, uid: &str) -> Result<Vec<Arc<DynamicObject>>, serde_json::Error> {
        let held = self.controlled.get(uid).into_iter().flatten();
        let all: Vec<Arc<CachedObject>> = held.chain(&self.orphans).cloned().collect();
        CachedObject::decode_all(&all)
    }
}

/// Any object of the window by name, claimed or not: as the driver's
/// caches answer the planner ([`crate::controller::cache::ChildCaches`]).
impl Existing for Window {
    fn holds(&self, type_index: usize, namespace: Option<&str>, name: &str) -> bool {
        self.types.get(type_index).is_some_and(|objects| {
            objects
                .names
                .contains(&(namespace.map(str::to_owned), name.to_owned()))
        })
    }
}

/// Every object `params` selects, read in pages of [`PAGE_SIZE`].
pub(super) async fn list_all(
    api: &Api<CachedObject>,
    params: ListParams,
) -> Result<Vec<CachedObject>, LiveError> {
    let mut params = params.limit(PAGE_SIZE);
    let mut all = Vec::new();
    loop {
        let page = api.list(&params).await.map_err(|source| LiveError::List {
            resource: api.resource_url().to_owned(),
            source,
        })?;
        all.extend(page.items);
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(all),
        }
    }
}
