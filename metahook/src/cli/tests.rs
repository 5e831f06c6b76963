use super::*;
use clap::CommandFactory;
use std::time::Duration;

#[test]
fn cli_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn no_subcommand_means_serve_with_flags() {
    let cli = Cli::try_parse_from(["metahook", "--listen", "127.0.0.1:9000"]).unwrap();
    assert!(cli.command.is_none());
    assert_eq!(cli.serve.process.listen.port(), 9000);
}

#[test]
fn the_memory_budget_defaults_to_half_the_charts_limit() {
    let cli = Cli::try_parse_from(["metahook"]).unwrap();
    assert_eq!(cli.serve.max_buffered_bytes, 128 * 1024 * 1024);
    // Within it, the largest body accepted by default.
    assert!(cli.serve.max_body_bytes <= cli.serve.max_buffered_bytes);
    let cli = Cli::try_parse_from(["metahook", "--max-buffered-bytes", "1048576"]).unwrap();
    assert_eq!(cli.serve.max_buffered_bytes, 1 << 20);
}

#[test]
fn serve_drive_and_drive_parse() {
    let cli = Cli::try_parse_from(["metahook", "serve", "--drive", "--controllers", "cc"]).unwrap();
    match cli.command {
        Some(Command::Serve(args)) => {
            assert!(args.drive);
            assert_eq!(args.driver.controllers.unwrap(), PathBuf::from("cc"));
            assert_eq!(args.driver.driver_workers, 5);
        }
        other => panic!("expected serve, got {other:?}"),
    }
    let cli = Cli::try_parse_from(["metahook", "--drive"]).unwrap();
    assert!(cli.command.is_none() && cli.serve.drive);
    let cli = Cli::try_parse_from([
        "metahook",
        "drive",
        "--leader-election",
        "--listen",
        "127.0.0.1:0",
    ])
    .unwrap();
    match cli.command {
        Some(Command::Drive(args)) => assert!(args.driver.leader_election),
        other => panic!("expected drive, got {other:?}"),
    }
    assert!(Cli::try_parse_from(["metahook", "drive", "--driver-workers", "0"]).is_err());
}

#[test]
fn the_api_budget_is_off_unless_asked_for() {
    let cli = Cli::try_parse_from(["metahook", "drive"]).unwrap();
    let Some(Command::Drive(args)) = cli.command else {
        panic!("expected drive")
    };
    assert_eq!(args.driver.kube_qps, None);
    assert_eq!(args.driver.kube_burst.get(), 10);
    assert_eq!(
        (args.driver.events_qps, args.driver.events_burst.get()),
        (1.0 / 300.0, 25),
        "Metacontroller's defaults"
    );
    let cli = Cli::try_parse_from([
        "metahook",
        "--drive",
        "--kube-qps",
        "2.5",
        "--kube-burst",
        "4",
    ])
    .unwrap();
    assert_eq!(cli.serve.driver.kube_qps, Some(2.5));
    assert_eq!(cli.serve.driver.kube_burst.get(), 4);
    // As Helm renders a large number (driver.kubeQps in the chart).
    let cli = Cli::try_parse_from(["metahook", "--drive", "--kube-qps", "1e+06"]).unwrap();
    assert_eq!(cli.serve.driver.kube_qps, Some(1e6));
    for bad in ["0", "-1", "NaN", "inf", "fast"] {
        assert!(
            Cli::try_parse_from(["metahook", "drive", "--kube-qps", bad]).is_err(),
            "{bad}"
        );
    }
    assert!(Cli::try_parse_from(["metahook", "drive", "--kube-burst", "0"]).is_err());
}

#[test]
fn a_shard_is_a_label_selector_that_selects_something() {
    let shard = |args: &[&str]| {
        let cli = Cli::try_parse_from(args).unwrap();
        let Some(Command::Drive(drive)) = cli.command else {
            panic!("expected drive")
        };
        drive.driver.shard_selector.map(|s| s.to_string())
    };
    assert_eq!(shard(&["metahook", "drive"]), None);
    assert_eq!(
        shard(&[
            "metahook",
            "drive",
            "--shard-selector",
            "metahook.dev/shard in (a,b)"
        ]),
        Some("metahook.dev/shard in (a,b)".to_owned())
    );
    for bad in ["", " , ", "shard in ()", "bad key!=x"] {
        assert!(
            Cli::try_parse_from(["metahook", "drive", "--shard-selector", bad]).is_err(),
            "{bad:?}"
        );
    }
}

#[test]
fn leader_election_timings_are_durations_as_kubernetes_writes_them() {
    let drive = |args: &[&str]| {
        let cli = Cli::try_parse_from(args).map_err(|e| e.to_string())?;
        let Some(Command::Drive(drive)) = cli.command else {
            panic!("expected drive")
        };
        Ok::<_, String>(drive.driver)
    };
    let defaults = drive(&["metahook", "drive"]).unwrap();
    assert_eq!(
        (
            defaults.leader_election_lease_duration,
            defaults.leader_election_renew_deadline,
            defaults.leader_election_retry_period
        ),
        (
            Duration::from_secs(15),
            Duration::from_secs(10),
            Duration::from_secs(2)
        ),
        "client-go's"
    );
    let set = drive(&[
        "metahook",
        "drive",
        "--leader-election-renew-deadline",
        "1500ms",
        "--leader-election-lease-duration",
        "1m",
    ])
    .unwrap();
    assert_eq!(
        set.leader_election_renew_deadline,
        Duration::from_millis(1500)
    );
    assert_eq!(set.leader_election_lease_duration, Duration::from_secs(60));
    for bad in ["0s", "-2s", "soon"] {
        let refused = drive(&["metahook", "drive", "--leader-election-retry-period", bad]);
        assert!(refused.is_err(), "{bad} was taken");
    }
}

#[test]
fn the_driver_view_is_off_unless_a_loopback_address_is_named() {
    let cli = Cli::try_parse_from(["metahook", "--drive"]).unwrap();
    assert_eq!(cli.serve.driver.debug_driver_listen, None);
    let cli = Cli::try_parse_from([
        "metahook",
        "drive",
        "--debug-driver-listen",
        "127.0.0.1:9090",
    ])
    .unwrap();
    let Some(Command::Drive(args)) = cli.command else {
        panic!("expected drive")
    };
    assert_eq!(args.driver.debug_driver_listen.unwrap().port(), 9090);
    assert!(
        Cli::try_parse_from([
            "metahook",
            "--drive",
            "--debug-driver-listen",
            "0.0.0.0:9090"
        ])
        .is_err()
    );
}

#[test]
fn client_certificates_need_a_tls_dir() {
    assert!(Cli::try_parse_from(["metahook", "--tls-client-auth"]).is_err());
    let cli = Cli::try_parse_from([
        "metahook",
        "serve",
        "--tls-dir",
        "/tls",
        "--tls-client-auth",
        "--auth-token-file",
        "/token",
    ])
    .unwrap();
    let Some(Command::Serve(args)) = cli.command else {
        panic!("expected serve")
    };
    let settings = crate::args::service(&args);
    assert_eq!(
        settings.tls,
        Some(metahook_service::TlsSettings {
            dir: "/tls".into(),
            client_auth: true
        })
    );
    assert_eq!(settings.auth_token_file, Some("/token".into()));
    let plain = crate::args::service(&Cli::try_parse_from(["metahook"]).unwrap().serve);
    assert_eq!((plain.tls, plain.auth_token_file), (None, None));
}

#[test]
fn render_takes_a_pinned_clock() {
    let cli = Cli::try_parse_from([
        "metahook",
        "render",
        "hello",
        "sync",
        "x.json",
        "--now",
        "2026-11-22T03:00:00Z",
    ])
    .unwrap();
    match cli.command {
        Some(Command::Render(args)) => {
            assert_eq!(args.controller, "hello");
            assert_eq!(args.now.unwrap().to_string(), "2026-11-22T03:00:00Z");
        }
        other => panic!("expected render, got {other:?}"),
    }
}

#[test]
fn chart_writes_by_default_what_a_chart_named_alone_is() {
    // What a crate's tests/chart.rs compares its chart/ with
    // (`ChartSettings::named`) is what `cargo run -- chart` writes there.
    let dir = std::env::temp_dir().join(format!("metahook-chart-named-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.to_str().unwrap();
    let cli = Cli::try_parse_from(["metahook", "chart", "--out-dir", out]).unwrap();
    let Some(Command::Chart(args)) = cli.command else {
        panic!("chart parses as chart");
    };
    assert_eq!(args.version, crate::chart::DEFAULT_VERSION);
    let controllers = metahook_seeds::controllers();
    crate::chart::run(&args, "seeds-operator", controllers).unwrap();
    let named = crate::chart::ChartSettings::named("seeds-operator", controllers);
    let files = crate::chart::files(controllers, &named).unwrap();
    assert_eq!(
        crate::chart::check_dir(&dir, &files).unwrap(),
        crate::chart::DirCheck::Current
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
