//! How a cache lists a type's objects (first, and again after a lost
//! watch): one streaming watch where the API server can, pages otherwise.

use super::CachedObject;
use kube::api::{Api, WatchParams};
use kube::runtime::watcher;
use tokio::sync::OnceCell;

/// Objects per page of a paged listing. A relist decodes a page (with its
/// `managedFields`) while the store still holds every object, so a page
/// smaller than kube's 500 is a lower peak, for one LIST per 100 objects of
/// a type (docs/performance.md#how-the-caches-hold-objects).
pub(super) const LIST_PAGE_SIZE: u32 = 100;

/// How the objects of a type are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitialList {
    /// One WATCH that sends every object, then a bookmark
    /// (`sendInitialEvents`: the API server's WatchList, on by default in
    /// Kubernetes 1.32 and from 1.34). One request per type however many
    /// objects: at a client budget of 5 requests a second, 10,000 parents
    /// and their Deployments are 200 list pages, 40 s of a start, and
    /// 2 requests this way (bench/restart-wait.sh).
    Streamed,
    /// LISTs of `LIST_PAGE_SIZE` objects, then a WATCH: what every API
    /// server serves.
    Paged,
}

impl InitialList {
    /// The watcher's configuration for this way of listing.
    pub(super) fn config(self) -> watcher::Config {
        match self {
            InitialList::Streamed => watcher::Config::default().streaming_lists(),
            InitialList::Paged => watcher::Config::default().page_size(LIST_PAGE_SIZE),
        }
    }
}

/// The way every cache of a process lists: given, or found out from the API
/// server by the first cache that starts.
#[derive(Debug)]
pub struct InitialListChoice {
    given: Option<InitialList>,
    found: OnceCell<InitialList>,
}

impl InitialListChoice {
    /// Always `way`.
    pub fn given(way: InitialList) -> Self {
        InitialListChoice {
            given: Some(way),
            found: OnceCell::new(),
        }
    }

    /// Streamed if the API server accepts a streaming watch of the first
    /// type asked for, paged if it refuses one (WatchList off, or a server
    /// older than 1.27). A request that fails for another reason (the
    /// server not reachable yet) decides nothing: that cache lists in pages
    /// and the next one asks again.
    pub fn ask_the_api_server() -> Self {
        InitialListChoice {
            given: None,
            found: OnceCell::new(),
        }
    }

    /// The way to list, asking through `api` if it is not known yet.
    pub(super) async fn resolve(&self, api: &Api<CachedObject>) -> InitialList {
        if let Some(way) = self.given {
            return way;
        }
        self.found
            .get_or_try_init(|| ask(api))
            .await
            .copied()
            .unwrap_or(InitialList::Paged)
    }
}

/// Whether the API server accepts a streaming watch: it answers one it
/// does not support with 4xx before any event, and one it does with 200;
/// the stream is dropped (closing the request) either way.
async fn ask(api: &Api<CachedObject>) -> Result<InitialList, kube::Error> {
    let params = WatchParams::streaming_lists().timeout(1);
    match api.watch(&params, "0").await {
        Ok(_events) => {
            tracing::info!("the API server streams lists: each cache lists in one request");
            Ok(InitialList::Streamed)
        }
        Err(kube::Error::Api(status)) => {
            tracing::info!(code = status.code, reason = %status.reason, "the API server does not stream lists: caches list in pages");
            Ok(InitialList::Paged)
        }
        Err(other) => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::scripted_api::{answer, bounded, mock_client, status_body};
    use kube::api::ApiResource;
    use serde_json::json;

    fn hellos(client: kube::Client) -> Api<CachedObject> {
        let resource = ApiResource {
            group: "fraim.co.jp".into(),
            version: "v1".into(),
            api_version: "fraim.co.jp/v1".into(),
            kind: "Hello".into(),
            plural: "helloes".into(),
        };
        Api::all_with(client, &super::super::SharedType::of(&resource))
    }

    #[tokio::test]
    async fn a_server_that_streams_is_asked_once_and_every_cache_streams() {
        let (client, mut api) = mock_client();
        let choice = InitialListChoice::ask_the_api_server();
        let asking = tokio::spawn({
            let api = hellos(client.clone());
            async move {
                let first = choice.resolve(&api).await;
                let second = choice.resolve(&api).await;
                (first, second)
            }
        });
        let seen = bounded(answer(&mut api, 200, json!({}))).await;
        assert_eq!(seen.path, "/apis/fraim.co.jp/v1/helloes");
        for part in [
            "watch=true",
            "sendInitialEvents=true",
            "resourceVersionMatch=NotOlderThan",
        ] {
            assert!(seen.query.contains(part), "{}", seen.query);
        }
        let (first, second) = asking.await.unwrap();
        assert_eq!(
            (first, second),
            (InitialList::Streamed, InitialList::Streamed)
        );
        // Asked once: nothing else was sent.
        crate::test_support::scripted_api::no_further_request(&mut api);
    }

    #[tokio::test]
    async fn a_server_that_refuses_a_streaming_watch_is_listed_in_pages() {
        let (client, mut api) = mock_client();
        let choice = InitialListChoice::ask_the_api_server();
        let asking = tokio::spawn({
            let api = hellos(client.clone());
            async move { choice.resolve(&api).await }
        });
        bounded(answer(&mut api, 422, status_body(422, "Invalid"))).await;
        assert_eq!(asking.await.unwrap(), InitialList::Paged);
    }

    #[test]
    fn the_ways_configure_the_watcher_as_named() {
        let streamed = InitialList::Streamed.config();
        assert_eq!(
            streamed.initial_list_strategy,
            watcher::InitialListStrategy::StreamingList
        );
        let paged = InitialList::Paged.config();
        assert_eq!(paged.page_size, Some(LIST_PAGE_SIZE));
        assert_eq!(
            paged.initial_list_strategy,
            watcher::InitialListStrategy::ListWatch
        );
    }
}
