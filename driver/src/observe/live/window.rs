//! The children one namespace holds, per child type: what a parent of
//! that namespace may claim, and which names are taken — the driver's
//! caches (`controller/cache/owners.rs`), for one namespace at a time.
//!
//! A cluster-wide list returns a type's objects ordered by namespace, so
//! parents of one namespace arrive together: the window lists the next
//! namespace's children when a parent of another arrives, and drops the
//! last. Memory is one namespace's children; requests, one list (in
//! pages) per child type and namespace.

use super::error::LiveError;
use crate::controller::cache::{CachedObject, SharedType};
use crate::decide::model::{Driven, controller_of};
use crate::decide::plan::Existing;
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
}

impl Window {
    pub(super) fn empty() -> Self {
        Window {
            namespace: None,
            types: Vec::new(),
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
        self.namespace = None;
        for child in &ctl.children {
            let shared = SharedType::of(&child.resource.api);
            let api: Api<CachedObject> = match namespace {
                Some(ns) if child.resource.namespaced => {
                    Api::namespaced_with(client.clone(), ns, &shared)
                }
                _ => Api::all_with(client.clone(), &shared),
            };
            let mut objects = Objects::default();
            for mut obj in list_all(&api, ListParams::default()).await? {
                obj.set_type_if_missing(&child.resource.api.api_version, &child.resource.api.kind);
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
            self.types.push(objects);
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
        self.types
            .iter()
            .map(|objects| {
                let held = objects.controlled.get(uid).into_iter().flatten();
                let all: Vec<Arc<CachedObject>> = held.chain(&objects.orphans).cloned().collect();
                CachedObject::decode_all(&all)
            })
            .collect()
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
