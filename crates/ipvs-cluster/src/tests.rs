//! The cluster file end to end: parse, locate, validate, plan, save.

use crate::*;
use ipvs_netlink::ipvs::{Dest, Family, Op, Service, ServiceKey, TunnelType};
use ipvs_netlink::vmwlch::HostState;

const FILE: &str = "\
services:
  - protocol: tcp
    address: 10.0.0.1
    port: 80
    scheduler: vmwlch
    persistent: 300
    netmask: 255.255.255.0
    dests:
      - address: 192.168.1.10
        weight: 2
      - address: 192.168.1.11
        forward: masq
        port: 8080
  - fwmark: 7
    family: inet6
    scheduler: rr
    real_servers:
      - address: 2001:db8::10
        forward: tunnel
        tunnel: {type: gue, port: 6080, csum: remcsum}
hosts:
  - name: h1
    weight: 2
    vms: [192.168.1.10]
  - name: h2
    vms:
      - 192.168.1.11
";

fn desired() -> Desired {
    parse(FILE).unwrap().1
}

#[test]
fn parses_example() {
    let d = desired();
    let s = d.services.as_ref().unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].0.scheduler, "vmwlch");
    assert!(s[0].0.persistent());
    assert_eq!(s[0].1[0].port, 80);
    assert_eq!(s[0].1[1].port, 8080);
    assert_eq!(
        s[1].0.key,
        ServiceKey::Fwmark {
            family: Family::Inet6,
            mark: 7
        }
    );
    assert_eq!(s[1].1[0].tun_type, TunnelType::Gue);
    assert_eq!(d.hosts.as_ref().unwrap()[1].weight, 1);
}

#[test]
fn syntax_error_located() {
    let e = parse("services:\n  - protocol: tcp\n    address: 10.0.0.1\n    port: 99999\n")
        .unwrap_err();
    assert_eq!((e[0].line, e[0].column), (Some(4), Some(11)), "{}", e[0]);
    let e = parse("services:\n  - protocol: tcp\n    adress: 10.0.0.1\n").unwrap_err();
    assert_eq!(e[0].line, Some(3), "{}", e[0]);
    assert!(e[0].message.contains("unknown field `adress`"), "{}", e[0]);
}

#[test]
fn semantic_errors_located() {
    let text = "\
services:
  - protocol: tcp
    address: 10.0.0.1
    port: 80
    dests:
      - address: 192.168.1.10
        l_threshold: 5
      - address: 192.168.1.10
  - protocol: tcp
    address: 10.0.0.1
    port: 80
hosts:
  - name: a
    vms: [1.1.1.1]
  - name: a
";
    let errs = parse(text).unwrap_err();
    let find = |p: &str| {
        errs.iter()
            .find(|e| e.path == p)
            .unwrap_or_else(|| panic!("{p} in {errs:?}"))
    };
    assert_eq!(find("services[0].dests[0].l_threshold").line, Some(7));
    assert_eq!(find("services[0].dests[1].address").line, Some(8));
    assert_eq!(find("hosts[1].name").line, Some(15));
    assert_eq!(find("hosts[1].name").column, Some(5));
    // The duplicate service is reported at its item.
    let dup = errs
        .iter()
        .find(|e| e.message.contains("duplicate service"))
        .unwrap();
    // At the item (its first key).
    assert_eq!((dup.line, dup.column), (Some(9), Some(5)));
}

#[test]
fn plan_from_empty_then_noop() {
    let d = desired();
    let p = plan(
        &d,
        &Current {
            services: vec![],
            hosts: Some(vec![]),
        },
    );
    // hosts first, then services with their dests.
    assert!(matches!(
        p.steps[0].change,
        Change::Host(HostOp::Set { .. })
    ));
    let n_svc = p
        .steps
        .iter()
        .filter(|s| matches!(s.change, Change::Ipvs(Op::AddService(_))))
        .count();
    assert_eq!(n_svc, 2);
    assert_eq!(p.steps.len(), 2 + 2 + 3);
    // Current == desired: no changes.
    let cur = Current::applied(d.clone());
    let p2 = plan(&d, &cur);
    assert!(p2.is_empty(), "{p2}");
}

#[test]
fn plan_minimal_and_ordered() {
    let d = desired();
    let mut cur_services = d.services.clone().unwrap();
    // Kernel has: weight 1 instead of 2, an extra dest, an extra service.
    cur_services[0].1[0].weight = 1;
    cur_services[0]
        .1
        .push(Dest::new("192.168.1.99".parse().unwrap(), 80));
    cur_services.push((
        Service::new(ServiceKey::tcp("10.9.9.9".parse().unwrap(), 443)),
        vec![],
    ));
    // And a new dest is wanted.
    let mut want = d.clone();
    want.services.as_mut().unwrap()[0]
        .1
        .push(Dest::new("192.168.1.12".parse().unwrap(), 80));
    let cur = Current {
        services: cur_services,
        hosts: None,
    };
    want.hosts = None;
    let p = plan(&want, &cur);
    let kinds: Vec<&str> = p
        .steps
        .iter()
        .map(|s| match &s.change {
            Change::Ipvs(Op::AddDest(..)) => "add",
            Change::Ipvs(Op::EditDest(..)) => "edit",
            Change::Ipvs(Op::DelDest(..)) => "deldest",
            Change::Ipvs(Op::DelService(..)) => "delsvc",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, vec!["add", "edit", "deldest", "delsvc"], "{p}");
    // Drain: the extra dest is set to weight 0 instead of deleted.
    want.remove = RemovePolicy::Drain;
    let p = plan(&want, &cur);
    assert!(p.steps.iter().any(|s| s.text.contains("(drain)")), "{p}");
    assert!(
        !p.steps
            .iter()
            .any(|s| matches!(s.change, Change::Ipvs(Op::DelDest(..)))),
        "{p}"
    );
}

#[test]
fn save_roundtrip() {
    let d = desired();
    let hosts: Vec<HostState> = d
        .hosts
        .clone()
        .unwrap()
        .into_iter()
        .map(|h| HostState {
            name: h.name,
            weight: h.weight,
            members: h.members,
            activeconns: 0,
            inactconns: 0,
            dests: 0,
        })
        .collect();
    let cfg = from_state(d.services.as_deref(), Some(&hosts));
    let text = yaml::to_string(&cfg).unwrap();
    let (_, d2) = parse(&text).unwrap();
    let p = plan(
        &d2,
        &Current {
            services: d.services.clone().unwrap(),
            hosts: Some(hosts),
        },
    );
    assert!(p.is_empty(), "{text}\n{p}");
}

#[test]
fn embedded_sections() {
    // Another file's own sections around these (keepalive's): its pass
    // deserialises the spec types, check() locates in its text.
    #[derive(serde::Deserialize)]
    struct Outer {
        #[allow(dead_code)]
        vrrp: serde::de::IgnoredAny,
        services: Option<Vec<ServiceSpec>>,
    }
    let parts = |text: &str| {
        let o: Outer = yaml::from_str(text).unwrap();
        ClusterSpec {
            services: o.services,
            ..Default::default()
        }
    };
    let text = format!("vrrp:\n  vrid: 5\n{}", FILE.split("hosts:").next().unwrap());
    let d = check(&parts(&text), &text).unwrap();
    assert_eq!(d.services.unwrap().len(), 2);
    let bad = "vrrp: {}\nservices:\n  - protocol: tcp\n    address: 10.0.0.1\n    port: 0\n";
    let e = check(&parts(bad), bad).unwrap_err();
    assert_eq!(e[0].line, Some(5), "{e:?}");
}

#[test]
fn locator_paths() {
    let l = yaml::Positions::new(FILE);
    assert_eq!(l.find("services[1].dests[0].tunnel"), (Some(20), Some(9)));
    // A sequence item is located at the item.
    assert_eq!(l.find("hosts[1].vms[0]"), (Some(27), Some(9)));
    assert_eq!(l.find("services[0].dests[1].port"), (Some(13), Some(9)));
}
