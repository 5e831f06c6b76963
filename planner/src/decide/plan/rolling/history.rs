//! A rolling parent's history: its ControllerRevisions claimed by the
//! rules children follow ([`claim_revisions`]), read into one parent per
//! revision to call the hook with ([`revisions`]), and written back once
//! the rollout moved ([`write`]), named as Metacontroller names them.

use crate::decide::model::Driven;
use crate::decide::plan::apply::owner_reference;
use crate::decide::plan::claim::{Claim, adopted_owners, child_selector, claim_rule, owners_but};
use crate::decide::plan::error::PlanError;
use crate::decide::plan::finalizer::is_deleting;
use crate::decide::plan::op::{Op, RevisionWrite};
use crate::decide::revisions::revision_type;
use crate::decide::selector::SelectorExt;
use crate::wire::object_json;
use kube::ResourceExt;
use kube::core::DynamicObject;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The labels that keep one parent type's revisions apart from another's.
const LABEL_API_GROUP: &str = "metacontroller.k8s.io/apiGroup";
const LABEL_RESOURCE: &str = "metacontroller.k8s.io/resource";

/// A ControllerRevision's `children[]`: the names of one child kind it
/// claims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claims {
    pub api_group: String,
    pub kind: String,
    pub names: Vec<String>,
}

/// One revision of a parent.
#[derive(Debug, Clone, PartialEq)]
pub struct Revision {
    /// The parent as this revision had it: the hook is called with it.
    pub parent: DynamicObject,
    /// Its ControllerRevision's name.
    pub name: String,
    /// The ControllerRevision it was read from; `None` for a new one.
    pub observed: Option<Arc<DynamicObject>>,
    /// `parentPatch`: the parent's `fieldPaths` as this revision had them.
    pub patch: Value,
    pub children: Vec<Claims>,
}

impl Revision {
    pub(super) fn claims(&self, group: &str, kind: &str, name: &str) -> bool {
        self.children
            .iter()
            .any(|c| c.api_group == group && c.kind == kind && c.names.iter().any(|n| n == name))
    }

    pub(super) fn add(&mut self, group: &str, kind: &str, name: &str) {
        match self
            .children
            .iter_mut()
            .find(|c| c.api_group == group && c.kind == kind)
        {
            Some(c) if c.names.iter().any(|n| n == name) => {}
            Some(c) => c.names.push(name.to_owned()),
            None => self.children.push(Claims {
                api_group: group.to_owned(),
                kind: kind.to_owned(),
                names: vec![name.to_owned()],
            }),
        }
    }

    pub(super) fn remove(&mut self, group: &str, kind: &str, name: &str) {
        for c in &mut self.children {
            if c.api_group == group && c.kind == kind {
                c.names.retain(|n| n != name);
            }
        }
        self.children.retain(|c| !c.names.is_empty());
    }
}

/// Which of the ControllerRevisions in the parent's namespace (`cached`)
/// are the parent's, by the claim rules children follow
/// (docs/metacontroller.md §3.5, §4.3 step 1), with the parent's selector
/// plus the type labels: those it controls that match; orphans that match,
/// adopted (after one read of the parent, [`Op::VerifyParent`]); those it
/// controls that no longer match are released. The ops go before any
/// other of the pass.
pub fn claim_revisions(
    ctl: &Driven,
    parent: &DynamicObject,
    cached: &[Arc<DynamicObject>],
) -> Result<(Vec<Arc<DynamicObject>>, Vec<Op>), PlanError> {
    let selector = child_selector(ctl, parent)?;
    let uid = parent.uid().unwrap_or_default();
    let deleting = is_deleting(parent);
    let (mut claimed, mut ops) = (Vec::new(), Vec::new());
    for obj in cached {
        if obj.namespace() != parent.namespace() {
            continue;
        }
        let labels = obj.labels();
        let matches = labels.get(LABEL_API_GROUP) == Some(&ctl.parent.api.group)
            && labels.get(LABEL_RESOURCE) == Some(&ctl.parent.api.plural)
            && selector.matches(labels);
        let set_owners = |after, adopt| {
            Op::Revision(RevisionWrite::SetOwners {
                name: obj.name_any(),
                uid: obj.uid().unwrap_or_default(),
                before: obj.metadata.owner_references.clone(),
                after,
                adopt,
            })
        };
        match claim_rule(obj, &uid, matches, deleting) {
            Claim::Claimed => claimed.push(obj.clone()),
            Claim::Release => ops.push(set_owners(owners_but(obj, &uid), false)),
            Claim::Adopt => {
                if !ops.contains(&Op::VerifyParent) {
                    ops.insert(0, Op::VerifyParent);
                }
                ops.push(set_owners(adopted_owners(ctl, parent, obj), true));
                claimed.push(obj.clone());
            }
            Claim::Ignore => {}
        }
    }
    Ok((claimed, ops))
}

/// The parent's revisions, the latest first (a new one when no
/// ControllerRevision holds the parent's current fields), then one per
/// older ControllerRevision with its fields written over the parent.
/// `claimed`: the parent's ControllerRevisions, as [`claim_revisions`]
/// found them.
pub fn revisions(
    ctl: &Driven,
    parent: &DynamicObject,
    claimed: &[Arc<DynamicObject>],
) -> Result<Vec<Revision>, PlanError> {
    let paths = &ctl.config.parent.revision_field_paths;
    let parent_json = object_json(parent);
    let latest_patch = restrict(&parent_json, paths);
    let uid = parent.uid().unwrap_or_default();
    let mut latest = Revision {
        parent: parent.clone(),
        name: revision_name(ctl, &uid, &latest_patch),
        observed: None,
        patch: latest_patch,
        children: Vec::new(),
    };
    let mut older = Vec::new();
    for obj in claimed {
        if is_deleting(obj) {
            continue;
        }
        let name = obj.name_any();
        let bad = |message: String| PlanError::BadRevision {
            name: name.clone(),
            message,
        };
        let patch = obj.data.get("parentPatch").cloned().unwrap_or(json!({}));
        if !patch.is_object() {
            return Err(bad("parentPatch is not an object".to_owned()));
        }
        let children: Vec<Claims> = match obj.data.get("children") {
            None | Some(Value::Null) => Vec::new(),
            Some(c) => serde_json::from_value(c.clone()).map_err(|e| bad(e.to_string()))?,
        };
        if patch == latest.patch {
            latest.name = name;
            latest.observed = Some(obj.clone());
            latest.children = children;
            continue;
        }
        let mut old_parent = parent_json.clone();
        overwrite(&mut old_parent, &patch, paths);
        older.push(Revision {
            parent: serde_json::from_value(old_parent).map_err(|e| bad(e.to_string()))?,
            name,
            observed: Some(obj.clone()),
            patch,
            children,
        });
    }
    // A stable order for the older ones (the cache's is not).
    older.sort_by(|a, b| a.name.cmp(&b.name));
    older.insert(0, latest);
    Ok(older)
}

/// The write that makes `rev`'s ControllerRevision what it now is: created
/// when new, its `children` replaced when they changed (guarded by the
/// resource version read), nothing otherwise.
pub(super) fn write(ctl: &Driven, parent: &DynamicObject, rev: &Revision) -> Option<Op> {
    let children = serde_json::to_value(&rev.children).unwrap_or_default();
    let Some(observed) = &rev.observed else {
        let mut labels = revision_labels(ctl, parent);
        labels.insert(LABEL_API_GROUP.to_owned(), ctl.parent.api.group.clone());
        labels.insert(LABEL_RESOURCE.to_owned(), ctl.parent.api.plural.clone());
        let api = revision_type().api;
        return Some(Op::Revision(RevisionWrite::Create {
            body: json!({
                "apiVersion": api.api_version,
                "kind": api.kind,
                "metadata": {
                    "name": rev.name,
                    "namespace": parent.namespace(),
                    "labels": labels,
                    "ownerReferences": [owner_reference(ctl, parent)],
                },
                "parentPatch": rev.patch,
                "children": children,
            }),
        }));
    };
    let before = observed
        .data
        .get("children")
        .cloned()
        .unwrap_or(Value::Null);
    let unchanged = before == children
        || (rev.children.is_empty() && before.as_array().is_none_or(Vec::is_empty));
    (!unchanged).then(|| {
        Op::Revision(RevisionWrite::Update {
            name: rev.name.clone(),
            resource_version: observed.resource_version().unwrap_or_default(),
            children,
        })
    })
}

/// A new ControllerRevision's labels: what the parent's selector selects
/// (`controller-uid` when generated, else the pod-template labels).
fn revision_labels(ctl: &Driven, parent: &DynamicObject) -> BTreeMap<String, String> {
    if ctl.config.generate_selector {
        let uid = parent.uid().unwrap_or_default();
        return BTreeMap::from([(crate::decide::selector::CONTROLLER_UID.to_owned(), uid)]);
    }
    parent
        .data
        .pointer("/spec/template/metadata/labels")
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default()
}

/// `<resource>.<group>-<sha1 of parent UID and patch>`, as Metacontroller
/// names them, so that the same revision gets the same name in both.
fn revision_name(ctl: &Driven, parent_uid: &str, patch: &Value) -> String {
    let group = match ctl.parent.api.group.as_str() {
        "" => "core",
        g => g,
    };
    let mut prefix = format!("{}.{group}", ctl.parent.api.plural);
    // 253 characters at most: 40 for the hash, one for the dash.
    let mut end = prefix.len().min(253 - 41);
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    prefix.truncate(end);
    let mut data = parent_uid.as_bytes().to_vec();
    data.extend(serde_json::to_vec(patch).unwrap_or_default());
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &data);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}-{hex}")
}

/// The object with only `paths` (dotted) kept.
fn restrict(object: &Value, paths: &[String]) -> Value {
    let mut patch = json!({});
    for path in paths {
        if let Some(value) = object.pointer(&pointer(path)) {
            set(&mut patch, path, value.clone());
        }
    }
    patch
}

/// `paths` of `patch` written over `object` (those `patch` has).
fn overwrite(object: &mut Value, patch: &Value, paths: &[String]) {
    for path in paths {
        if let Some(value) = patch.pointer(&pointer(path)) {
            set(object, path, value.clone());
        }
    }
}

fn pointer(path: &str) -> String {
    path.split('.')
        .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// Sets a dotted path, making the maps on the way (a non-map on the way is
/// replaced, as Go's `SetNestedField` does).
fn set(object: &mut Value, path: &str, value: Value) {
    let mut at = object;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if !at.is_object() {
            *at = json!({});
        }
        let Value::Object(map) = at else { return };
        if parts.peek().is_none() {
            map.insert(part.to_owned(), value);
            return;
        }
        at = map.entry(part).or_insert_with(|| json!({}));
    }
}
