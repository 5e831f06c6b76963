//! `POST /hikawa/sync` over a real socket answers every Hikawa fixture with
//! its snapshot, on the pinned clock.

mod common;

use common::{RealServer, fixtures, pretty, snapshot};

#[test]
fn the_service_serves_every_hikawa_fixture() {
    let server = RealServer::start(RealServer::settings(), metahook_hooks::CONTROLLERS);
    let hikawa: Vec<_> = fixtures()
        .into_iter()
        .filter(|f| f.controller == "hikawa")
        .collect();
    assert!(!hikawa.is_empty(), "no Hikawa fixtures");
    for fixture in hikawa {
        assert_eq!(fixture.url(), "/hikawa/sync");
        let response = server.post(&fixture.url(), "application/json", &fixture.body());
        assert_eq!(response.status, 200, "{}", fixture.path.display());
        assert_eq!(
            pretty(&response.body),
            snapshot(&fixture),
            "{}",
            fixture.path.display()
        );
    }
}
