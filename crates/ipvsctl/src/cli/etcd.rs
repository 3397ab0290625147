//! `apply`/`plan`/`save --etcd` and `status`: the cluster file kept in etcd
//! (crate `cluster-etcd`) instead of the local kernel.

use std::time::{SystemTime, UNIX_EPOCH};

use cluster_etcd::{split_endpoints, Fleet, Store};

use super::*;

/// Run one etcd conversation on a runtime of its own (the rest of the
/// command line is synchronous).
fn with_store<T>(
    e: &EtcdArgs,
    f: impl AsyncFnOnce(Store) -> Result<T, cluster_etcd::Error>,
) -> Result<T, Fail> {
    let endpoints = split_endpoints(e.etcd.as_deref().unwrap_or_default());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Fail(1, format!("cannot start the etcd client: {e}")))?;
    rt.block_on(async {
        let store = Store::connect(&endpoints, &e.prefix).await?;
        f(store).await
    })
    .map_err(|err| match err {
        cluster_etcd::Error::Usage(m) => Fail(2, m),
        other => Fail(1, other.to_string()),
    })
}

fn no_drain(drain: bool) -> Result<(), Fail> {
    if drain {
        return Err(Fail(
            2,
            "--drain does not go to etcd: write `options: {remove: drain}` in the file".into(),
        ));
    }
    Ok(())
}

/// The stored file as the state a plan starts from (empty if none).
fn stored_current(text: Option<&str>, key: &str) -> Result<cluster::Current, Fail> {
    let Some(text) = text else {
        return Ok(cluster::Current::default());
    };
    let d = cluster::parse(text).map(|(_, d)| d).map_err(|errs| {
        let msgs: Vec<String> = errs.iter().map(|e| e.in_file(key)).collect();
        Fail(
            1,
            format!("the stored cluster file is invalid:\n{}", msgs.join("\n")),
        )
    })?;
    Ok(cluster::Current::applied(d))
}

/// `apply --etcd`: validate exactly as a local apply, then store the text.
pub(super) fn apply(a: &ApplyArgs) -> Result<(), Fail> {
    no_drain(a.drain)?;
    // An invalid file stops here (exit 2): nothing reaches etcd.
    let (text, d) = load_text(&a.file)?;
    if a.dry_run {
        return plan_from_store(&a.etcd, &d);
    }
    let rev = with_store(&a.etcd, async |s| s.put_cluster(&text).await)?;
    println!("stored as revision {rev}");
    Ok(())
}

/// `plan --etcd`: from the stored state to the file.
pub(super) fn plan(a: &PlanArgs) -> Result<(), Fail> {
    no_drain(a.drain)?;
    let (_, d) = load_text(&a.file)?;
    plan_from_store(&a.etcd, &d)
}

fn plan_from_store(e: &EtcdArgs, d: &cluster::Desired) -> Result<(), Fail> {
    let (stored, key) = with_store(e, async |s| {
        let (st, _) = s.get_cluster().await?;
        Ok((st, s.cluster_key()))
    })?;
    let cur = stored_current(stored.as_ref().map(|s| s.text.as_str()), &key)?;
    print!("{}", cluster::plan(d, &cur));
    Ok(())
}

/// `save --etcd`: the stored file, as written.
pub(super) fn save(a: &SaveArgs) -> Result<(), Fail> {
    if a.output != "yaml" {
        return Err(Fail(
            2,
            "save --etcd prints the stored file as written: -o yaml only".into(),
        ));
    }
    let (stored, key) = with_store(&a.etcd, async |s| {
        let (st, _) = s.get_cluster().await?;
        Ok((st, s.cluster_key()))
    })?;
    match stored {
        Some(s) => {
            print!("{}", s.text);
            Ok(())
        }
        None => Err(Fail(
            1,
            format!(
                "nothing stored at {key} (store a file with `ipvsctl apply --etcd ... -f FILE`)"
            ),
        )),
    }
}

/// `status`: the stored revision and each director's.
pub(super) fn status(a: &StatusArgs) -> Result<(), Fail> {
    if a.etcd.etcd.is_none() {
        return Err(Fail(2, "status needs --etcd ENDPOINTS".into()));
    }
    let fleet = with_store(&a.etcd, async |s| s.fleet().await)?;
    print_out(a.out.output, &fleet, || status_text(&fleet))
}

fn status_text(f: &Fleet) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut s = match f.revision {
        Some(r) => format!("cluster revision {r}\n"),
        None => "cluster: nothing stored\n".to_string(),
    };
    s += &format!(
        "{:<24} {:>10} {:>8}  STATUS\n",
        "DIRECTOR", "APPLIED", "AGE"
    );
    for m in &f.directors {
        let Some(st) = &m.state else {
            s += &format!("{:<24} {:>10} {:>8}  unreadable state\n", m.name, "-", "-");
            continue;
        };
        let status = match (&st.error, f.revision) {
            (Some(e), _) => format!("error: {e}"),
            (None, Some(r)) if st.revision < r => "behind".to_string(),
            (None, _) => "ok".to_string(),
        };
        let age = format!("{}s", now.saturating_sub(st.time));
        s += &format!("{:<24} {:>10} {:>8}  {status}\n", m.name, st.revision, age);
    }
    s
}
