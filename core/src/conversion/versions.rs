//! A parent's versions as the `convert` hook holds them: for each, how the
//! spec and status of an object at that version become the hub's (the
//! parent type's), and back.

use crate::decode::{DecodeError, decode};
use crate::request::ParentType;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::{RawValue, to_raw_value};

/// An object's spec and status at some version, as JSON: what a
/// conversion changes. Its metadata is never read.
pub(super) struct Parts {
    pub(super) spec: Option<Box<RawValue>>,
    pub(super) status: Option<Box<RawValue>>,
}

/// An object's spec and status as the hub's types.
pub(super) struct Hub<P: ParentType> {
    spec: Option<P::SpecType>,
    status: Option<P::StatusType>,
}

/// One served version: its `apiVersion` (`example.com/v2`) and its
/// conversions to and from the hub.
pub(crate) struct Version<P: ParentType> {
    pub(crate) api_version: String,
    pub(super) up: fn(&Parts) -> Result<Hub<P>, DecodeError>,
    pub(super) down: fn(Hub<P>) -> Result<Parts, serde_json::Error>,
}

impl<P: ParentType> Version<P> {
    /// The hub's own version: read and written as it is.
    pub(crate) fn hub() -> Self
    where
        P::SpecType: Serialize,
    {
        // Apart from `of`: there, the caller's bounds between `P` and a
        // spoke hide `From<T> for T` from the compiler.
        Self::of::<P>()
    }

    /// The version of type `V`, converted through `From` both ways.
    pub(crate) fn of<V>() -> Self
    where
        V: ParentType,
        V::SpecType: Serialize + From<P::SpecType>,
        V::StatusType: From<P::StatusType>,
        P::SpecType: From<V::SpecType>,
        P::StatusType: From<V::StatusType>,
    {
        Version {
            api_version: V::type_ref().api_version.into_owned(),
            up: up::<P, V>,
            down: down::<P, V>,
        }
    }
}

/// `parts`, read as version `V`, made the hub's. A decode error's path
/// starts at `spec` or `status`.
fn up<P, V>(parts: &Parts) -> Result<Hub<P>, DecodeError>
where
    P: ParentType,
    V: ParentType,
    P::SpecType: From<V::SpecType>,
    P::StatusType: From<V::StatusType>,
{
    Ok(Hub {
        spec: read::<V::SpecType>(&parts.spec, "spec")?.map(Into::into),
        status: read::<V::StatusType>(&parts.status, "status")?.map(Into::into),
    })
}

/// The hub's spec and status, made version `V`'s, as JSON.
fn down<P, V>(hub: Hub<P>) -> Result<Parts, serde_json::Error>
where
    P: ParentType,
    V: ParentType,
    V::SpecType: Serialize + From<P::SpecType>,
    V::StatusType: From<P::StatusType>,
{
    Ok(Parts {
        spec: hub
            .spec
            .map(|s| to_raw_value(&V::SpecType::from(s)))
            .transpose()?,
        status: hub
            .status
            .map(|s| to_raw_value(&V::StatusType::from(s)))
            .transpose()?,
    })
}

fn read<T: DeserializeOwned>(
    raw: &Option<Box<RawValue>>,
    at: &str,
) -> Result<Option<T>, DecodeError> {
    raw.as_deref()
        .map(|raw| decode::<T>(raw.get().as_bytes()).map_err(|e| e.under(at)))
        .transpose()
}
