use super::*;

#[test]
fn cli_definition_is_valid() {
    Cli::command().debug_assert();
}

#[test]
fn addr_port_forms() {
    assert_eq!(
        parse_addr_port("10.0.0.1:80").unwrap(),
        ("10.0.0.1".parse().unwrap(), Some(80))
    );
    assert_eq!(
        parse_addr_port("[2001:db8::1]:53").unwrap(),
        ("2001:db8::1".parse().unwrap(), Some(53))
    );
    assert_eq!(
        parse_addr_port("2001:db8::1").unwrap(),
        ("2001:db8::1".parse().unwrap(), None)
    );
    assert!(parse_addr_port("nope:80").is_err());
}

#[test]
fn modern_service_validation() {
    let svc = SvcArgs {
        kind: "udp".into(),
        target: "10.0.0.1:53".into(),
        ipv6: false,
    };
    let p = SvcParams {
        scheduler: "sh".into(),
        persistent: Some(60),
        netmask: Some("24".into()),
        pe: None,
        sched_flags: Some("sh-port".into()),
        ops: true,
    };
    let s = service_from(&svc, &p).unwrap();
    assert_eq!(s.netmask, Netmask::V4("255.255.255.0".parse().unwrap()));
    let p2 = SvcParams {
        scheduler: "rr".into(),
        sched_flags: Some("sh-port".into()),
        ..p
    };
    assert!(service_from(&svc, &p2).is_err());
}

#[test]
fn json_view() {
    let s = Service::new(ServiceKey::tcp("10.0.0.1".parse().unwrap(), 80));
    let v = service_view(&s, &[Dest::new("192.168.1.1".parse().unwrap(), 80)]);
    let j = serde_json::to_value(&v).unwrap();
    assert_eq!(j["protocol"], "tcp");
    assert_eq!(j["dests"][0]["forward"], "route");
    assert_eq!(j["netmask"], "255.255.255.255");
}
